"""Errors raised while reading pprof data.

    PprofError (ValueError)          any problem with a submitted profile
    ├── DecodeError                  not a pprof: truncated, garbage, bad gzip
    ├── InvalidProfile               well-formed protobuf that breaks pprof's rules
    │   └── InvalidProfileName       a profile name or type part breaks the naming rule or the content
    └── LimitExceeded                larger than a configured limit (size, samples, depth)

Every message names the problem so it can be returned to the client as it is.
"""


class PprofError(ValueError):
    """A submitted profile cannot be accepted."""


class DecodeError(PprofError):
    """The bytes are not a pprof profile."""


class InvalidProfile(PprofError):
    """The profile parses but breaks pprof's rules (dangling ids, bad string indices, ...)."""


class InvalidProfileName(InvalidProfile):
    """A profile name or type part breaks the naming pattern, or contradicts the profile's content."""


class LimitExceeded(PprofError):
    """The profile is larger than a configured limit."""
