"""The tenant of a request: the `X-Scope-OrgID` header or gRPC metadata, `anonymous` when absent."""

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


def tenant_from_metadata(metadata) -> str:
    for key, value in metadata or ():
        if key.lower() == HEADER:
            return resolve_tenant(value)
    return DEFAULT_TENANT
