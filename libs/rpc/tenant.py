"""Tenant ids: the `X-Scope-OrgID` header or gRPC metadata names one, `anonymous` when absent; which one
a request may use is decided by its credential (`auth.caller`, `rpc.auth`)."""

from __future__ import annotations

import re

DEFAULT_TENANT = "anonymous"
HEADER = "x-scope-orgid"
_VALID = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


def resolve_tenant(value: str | None) -> str:
    """Validate a tenant id; it becomes part of object keys, so it is kept to a safe alphabet."""
    if not value:
        return DEFAULT_TENANT
    if not _VALID.fullmatch(value) or value in (".", ".."):  # fullmatch: `$` would let in a final "\n"
        raise ValueError(f'invalid tenant "{value}": use 1-64 characters of letters, digits, "_", "." or "-"')
    return value
