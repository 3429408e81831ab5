"""Errors raised by the ingester's own protocol adapters (pprof's are in `flamewatch.pprof.errors`).

    ValueError
    ├── OtlpDecodeError        the body is not an OTLP ExportProfilesServiceRequest (protobuf or JSON)
    └── OtlpInvalidProfile     an OTLP profile breaks a rule, e.g. an index outside the dictionary

Both are bad requests (INVALID_ARGUMENT / HTTP 400, `flamewatch.rpc.errors`); messages name the problem.
"""


class OtlpDecodeError(ValueError):
    """The request body cannot be read as an OTLP profiles export request."""


class OtlpInvalidProfile(ValueError):
    """An OTLP profile (or the dictionary it uses) cannot be converted to a pprof profile."""
