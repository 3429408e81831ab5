"""The ingest limit flags: one `--limits.<name>` per `IngestLimits` field, and per-tenant values of them.

`--limits.tenant TENANT:LIMIT=VALUE` gives one tenant its own value of any limit (as
`--storage.retention-tenant` does for retention), so a large tenant can be allowed more series without
raising everyone's limit.
"""

from __future__ import annotations

import argparse

from flamewatch.config import IngestLimits


def _duration(text: str) -> int:
    from flamewatch.timerange import TimeParseError, parse_duration

    try:
        return parse_duration(text)
    except TimeParseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


_LIMIT_HELP = {
    "max_series": "refuse a push that would give its tenant more series with a profile in the last hour than "
                  "this (0: no limit)",
    "reject_older_than_ns": "refuse profiles dated longer ago than this, e.g. 6h (default: the tenant's retention)",
    "reject_newer_than_ns": "refuse profiles dated more than this after the server's clock",
}


def limit_flags(p) -> None:
    """A flag per `IngestLimits` field, and `--limits.tenant` to give a tenant its own value of any of them."""
    defaults = IngestLimits()
    for name in IngestLimits.names():
        duration = name.endswith("_ns")
        flag = "--limits." + name.removesuffix("_ns").replace("_", "-")
        default = getattr(defaults, name)
        if duration and default:
            default = f"{default // 10**9}s"  # a string, so --help shows it as the flag takes it
        p.add(flag, _LIMIT_HELP.get(name, f"reject pushes over this {name.replace('_', ' ')}"),
              dest=f"limit_{name}", type=_duration if duration else int, default=default)
    p.add("--limits.tenant", "a tenant's own value of a limit, TENANT:LIMIT=VALUE (e.g. acme:max-series=50000 or "
          "acme:reject-older-than=7d); repeat for more", dest="tenant_limits", action="append", default=[],
          type=_tenant_limit)


def _tenant_limit(text: str) -> tuple[str, str, int]:
    tenant, _, setting = text.partition(":")
    flag, sep, value = setting.partition("=")
    names = {n.removesuffix("_ns").replace("_", "-"): n for n in IngestLimits.names()}
    if not tenant or not sep or flag not in names:
        raise argparse.ArgumentTypeError(f'expected TENANT:LIMIT=VALUE such as acme:max-series=50000 with LIMIT one '
                                         f'of {", ".join(names)}, got "{text}"')
    name = names[flag]
    if name.endswith("_ns"):
        return tenant, name, _duration(value)
    try:
        return tenant, name, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f'"{text}": {flag} takes a whole number') from None


def ingest_limits(args: argparse.Namespace) -> tuple[IngestLimits, dict[str, dict[str, int]]]:
    """The default limits and each tenant's own values, from `_limit_flags`."""
    per_tenant: dict[str, dict[str, int]] = {}
    for tenant, name, value in args.tenant_limits:
        per_tenant.setdefault(tenant, {})[name] = value
    return IngestLimits(**{n: getattr(args, f"limit_{n}") for n in IngestLimits.names()}), per_tenant
