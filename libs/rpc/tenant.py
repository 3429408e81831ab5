"""Tenant ids: the `X-Scope-OrgID` header or gRPC metadata names one, `anonymous` when absent; which one
a request may use is decided by its credential (`auth.caller`, `rpc.auth`).

A read may name several, `team-a|team-b`, as Grafana sends them to Loki, Mimir, Tempo and Pyroscope's v2
read path: `resolve_tenants` takes them as dskit's `tenant.TenantIDs` does (split on "|", each id
validated, duplicates dropped, sorted), so `b|a|a` is the read of `a|b`. A write names one tenant.
"""

from __future__ import annotations

import re

DEFAULT_TENANT = "anonymous"
HEADER = "x-scope-orgid"
SEPARATOR = "|"  # not in the alphabet below, so no single tenant id holds it
_VALID = re.compile(r"[A-Za-z0-9_.\-]{1,64}")

Tenants = str | tuple[str, ...]  # what a read acts on: one tenant, or several sorted ones


def resolve_tenant(value: str | None) -> str:
    """Validate a tenant id; it becomes part of object keys, so it is kept to a safe alphabet."""
    if not value:
        return DEFAULT_TENANT
    if not _VALID.fullmatch(value) or value in (".", ".."):  # fullmatch: `$` would let in a final "\n"
        raise ValueError(f'invalid tenant "{value}": use 1-64 characters of letters, digits, "_", "." or "-"')
    return value


def resolve_tenants(value: str | None) -> tuple[str, ...]:
    """The tenants a read names, each validated as `resolve_tenant`, without duplicates and sorted; none
    when it names none (the credential's default applies). An empty id (`a||b`, a trailing "|") is refused
    rather than dropped: it is a typo more often than not."""
    if not value:
        return ()
    parts = value.split(SEPARATOR)
    if "" in parts:
        raise ValueError(f'X-Scope-OrgID "{value}" holds an empty tenant id: separate tenants with one "|", '
                         "e.g. team-a|team-b")
    return tuple(sorted({resolve_tenant(part) for part in parts}))


def tenant_ids(tenants: Tenants) -> tuple[str, ...]:
    """The tenants of a read as a tuple, whether it names one (a str) or several."""
    return (tenants,) if isinstance(tenants, str) else tuple(tenants)


def joined(tenants: Tenants) -> str:
    """The tenants as X-Scope-OrgID names them, to pass a read on (`a|b`) or to name it in a message."""
    return SEPARATOR.join(tenant_ids(tenants))
