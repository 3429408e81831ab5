"""The ingest limit flags: one `--limits.<name>` per `IngestLimits` field, and per-tenant values of them.

`--limits.tenant TENANT:LIMIT=VALUE` gives one tenant its own value of any limit (as
`--storage.retention-tenant` does for retention), so a large tenant can be allowed more series without
raising everyone's limit.
"""

from __future__ import annotations

import argparse

from flamewatch.ingester.config import IngestLimits


def _duration(text: str) -> int:
    from flamewatch.timerange import TimeParseError, parse_duration

    try:
        return parse_duration(text)
    except TimeParseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


_LIMIT_HELP = {
    "max_decompressed_bytes": "reject a profile larger than this once decompressed",
    "max_push_decompressed_bytes": "reject a push whose profiles together are larger than this once decompressed "
                                   "(a push of Pyroscope's push.v1 or our gRPC push may carry many)",
    "ingestion_rate_mb": "each tenant's ingestion rate limit, in MB/s of decompressed pprof; a push over it is "
                         "refused with 429 / RESOURCE_EXHAUSTED and when to retry (0: no limit)",
    "ingestion_burst_mb": "the MB a tenant may push at once (0: twice the rate, and at least "
                          "--limits.max-push-decompressed-bytes, so that a push of any allowed size can pass)",
    "max_series": "refuse a push that would give its tenant more series with a profile in the last hour than "
                  "this (0: no limit)",
    "reject_older_than_ns": "refuse profiles dated longer ago than this, e.g. 6h (default: the tenant's retention)",
    "reject_newer_than_ns": "refuse profiles dated more than this after the server's clock",
}


def limit_flags(p) -> None:
    """A flag per `IngestLimits` field, and `--limits.tenant` to give a tenant its own value of any of them."""
    defaults = IngestLimits()
    for name in IngestLimits.names():
        flag = "--limits." + name.removesuffix("_ns").replace("_", "-")
        default = getattr(defaults, name)
        if name.endswith("_ns") and default:
            default = f"{default // 10**9}s"  # a string, so --help shows it as the flag takes it
        p.add(flag, _LIMIT_HELP.get(name, f"reject pushes over this {name.replace('_', ' ')}"),
              dest=f"limit_{name}", type=_parser_of(name), default=default)
    p.add("--limits.tenant", "a tenant's own value of a limit, TENANT:LIMIT=VALUE (e.g. acme:max-series=50000, "
          "acme:reject-older-than=7d or acme:ingestion-rate-mb=20); repeat for more", dest="tenant_limits",
          action="append", default=[], type=_tenant_limit)


def _parser_of(name: str):
    """How a limit's value is read: a duration (6h, 7d) for times, a number of zero or more for the rest."""
    if name.endswith("_ns"):
        return _duration
    number = float if isinstance(getattr(IngestLimits(), name), float) else int

    def parse(text: str) -> float | int:
        try:
            value = number(text)
        except ValueError:
            kind = "a number" if number is float else "a whole number"
            raise argparse.ArgumentTypeError(f'expected {kind}, got "{text}"') from None
        if value < 0:
            raise argparse.ArgumentTypeError(f'expected 0 or more, got "{text}"')
        return value

    return parse


def _tenant_limit(text: str) -> tuple[str, str, float]:
    tenant, _, setting = text.partition(":")
    flag, sep, value = setting.partition("=")
    names = {n.removesuffix("_ns").replace("_", "-"): n for n in IngestLimits.names()}
    if not tenant or not sep or flag not in names:
        raise argparse.ArgumentTypeError(f'expected TENANT:LIMIT=VALUE such as acme:max-series=50000 with LIMIT one '
                                         f'of {", ".join(names)}, got "{text}"')
    name = names[flag]
    try:
        return tenant, name, _parser_of(name)(value)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f'"{text}": {flag}: {exc}') from None


def ingest_limits(args: argparse.Namespace) -> tuple[IngestLimits, dict[str, dict[str, float]]]:
    """The default limits and each tenant's own values, from `limit_flags`."""
    per_tenant: dict[str, dict[str, float]] = {}
    for tenant, name, value in args.tenant_limits:
        per_tenant.setdefault(tenant, {})[name] = value
    return IngestLimits(**{n: getattr(args, f"limit_{n}") for n in IngestLimits.names()}), per_tenant
