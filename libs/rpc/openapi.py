"""OpenAPI declarations every service's HTTP routes share: the error body and the tenant header.

`rpc.errors` decides the status of a failure and `rpc.http` answers it as `{"error": "..."}`; routers
declare those answers with `ERROR_RESPONSES`, so the OpenAPI document lists what a client can get.
Validation failures are answered 400, not FastAPI's 422: declaring the `4XX` range keeps FastAPI from
adding its validation-error 422 response, which no route sends.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    error: str = Field(description="what is wrong with the request, or which backend is unavailable")


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": ErrorBody, "description": "bad request (400), not found (404), over a limit (413) "
               "or a query over its cost limit (422)"},
    503: {"model": ErrorBody, "description": "Postgres or the object store is unavailable"},
}

# What `rpc.tenant.resolve_tenant` accepts; empty is the same as absent.
TENANT_HEADER_SCHEMA: dict[str, Any] = {"type": "string", "pattern": r"^(?!\.\.?$)[A-Za-z0-9_.\-]{0,64}$"}
TENANT_DESCRIPTION = "tenant: letters, digits, _ . - (not . or ..), at most 64; empty or absent: anonymous"
# What `rpc.tenant.resolve_tenants` accepts: a read may name several tenants, joined by "|".
_TENANT_ID = r"(?!\.\.?(?:\||$))[A-Za-z0-9_.\-]{1,64}"
TENANTS_HEADER_SCHEMA: dict[str, Any] = {"type": "string", "pattern": rf"^(?:{_TENANT_ID}(?:\|{_TENANT_ID})*)?$"}
TENANTS_DESCRIPTION = ("tenant, or several read as one joined by | (team-a|team-b): each letters, digits, _ . - "
                       "(not . or ..), at most 64; empty or absent: anonymous")
