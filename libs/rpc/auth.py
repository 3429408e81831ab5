"""Who is asking, for HTTP and gRPC: resolved once per request where the app or server is built, and
handed to handlers as one dependency. No handler reads `X-Scope-OrgID` or `Authorization` itself.

HTTP: `AuthMiddleware` (added by `rpc.http.build_app`) authenticates every request but `/healthz` and
`/readyz` from its `Authorization` header or its verified client certificate (named in the scope by
`rpc.https`) and keeps its `Caller` in the request's scope; a refused one gets 401 with
`WWW-Authenticate: Basic` (so a browser asks for a password) or 403. Routes then declare what they do:

    async def handler(tenant: ReadTenant) ...            # acts on a tenant it reads
    async def handler(tenants: ReadTenants) ...          # reads one tenant or several (X-Scope-OrgID a|b)
    async def handler(tenant: WriteTenant) ...           # acts on a tenant it writes
    @router.get(..., dependencies=[AdminOnly])           # what belongs to no tenant

`routes_without_access` lists the routes that declare none of them, which a test keeps empty.

gRPC: `AuthInterceptor` (added where the server is made, `rpc.listen`) authenticates every call from its
`authorization` metadata or its verified client certificate; servicers call `grpc_tenant(context, action)`,
`grpc_tenants(context)` (a read of several tenants) or `grpc_admin(context, what)`. Connect services
resolve the tenant by the action their `Service` names.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Annotated, Any

import grpc
from fastapi import Depends, Header, Request
from fastapi.routing import APIRoute

from flamewatch.auth.caller import ANYONE, Action, Authenticator, Caller
from flamewatch.auth.errors import PermissionDenied, Unauthenticated
from flamewatch.rpc.openapi import TENANT_DESCRIPTION, TENANT_HEADER_SCHEMA, TENANTS_DESCRIPTION, TENANTS_HEADER_SCHEMA
from flamewatch.rpc.tenant import HEADER

PUBLIC_PATHS = frozenset({"/healthz", "/readyz"})  # probes: they tell nothing of any tenant
SCOPE_KEY = "flamewatch.caller"
CERTIFICATE_NAME = "flamewatch.client_certificate"  # scope key: the verified client certificate's common name
CHALLENGE = 'Basic realm="flamewatch", charset="UTF-8"'

# -------------------------------------------------------------------------------------------------- HTTP


class AuthMiddleware:
    """Pure ASGI, so a refused request costs no more than its headers."""

    def __init__(self, app, authenticator: Authenticator) -> None:
        self.app, self.authenticator = app, authenticator

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        if self.authenticator.enabled:
            try:
                scope[SCOPE_KEY] = await self.authenticator.caller_async(_header(scope, b"authorization"),
                                                                         scope.get(CERTIFICATE_NAME))
            except Unauthenticated as exc:
                await _refusal(send, 401, str(exc), challenge=True)
                return
        await self.app(scope, receive, send)


def _header(scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


async def _refusal(send, status: int, message: str, challenge: bool) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if challenge:
        headers.append((b"www-authenticate", CHALLENGE.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def caller_of(request: Request) -> Caller:
    return request.scope.get(SCOPE_KEY, ANYONE)


_TenantHeader = Annotated[str | None, Header(alias=HEADER, description=TENANT_DESCRIPTION,
                                             json_schema_extra=TENANT_HEADER_SCHEMA)]
_TenantsHeader = Annotated[str | None, Header(alias=HEADER, description=TENANTS_DESCRIPTION,
                                              json_schema_extra=TENANTS_HEADER_SCHEMA)]


# The dependencies are coroutines although they never wait: FastAPI runs a plain function dependency in a
# worker thread, a hand-off per request that cost about 3 % of a small push's CPU.
async def read_tenant(request: Request, x_scope_orgid: _TenantHeader = None) -> str:
    return caller_of(request).tenant(Action.READ, x_scope_orgid)


async def read_tenants(request: Request, x_scope_orgid: _TenantsHeader = None) -> tuple[str, ...]:
    return caller_of(request).tenants(x_scope_orgid)


async def write_tenant(request: Request, x_scope_orgid: _TenantHeader = None) -> str:
    return caller_of(request).tenant(Action.WRITE, x_scope_orgid)


async def admin_only(request: Request) -> None:
    caller_of(request).require_admin(f"{request.method} {request.url.path}")


async def authenticated(request: Request) -> Caller:
    """For routes that resolve the tenant themselves by what they are asked (Connect services)."""
    return caller_of(request)


ReadTenant = Annotated[str, Depends(read_tenant)]
ReadTenants = Annotated[tuple[str, ...], Depends(read_tenants)]
WriteTenant = Annotated[str, Depends(write_tenant)]
AdminOnly = Depends(admin_only)
AnyCaller = Depends(authenticated)  # any valid credential: the UI's page, a proxy whose upstream decides
Authenticated = Annotated[Caller, AnyCaller]
_ACCESS_DEPENDENCIES = (read_tenant, read_tenants, write_tenant, admin_only, authenticated)


def routes_without_access(routes: Iterable[Any]) -> list[str]:
    """The API routes that neither resolve a tenant nor ask for admin (besides the public probes)."""
    missing = []
    for path, route, inherited in _api_routes(routes, "", ()):
        if path in PUBLIC_PATHS:
            continue
        calls = {dep.call for dep in _flatten(route.dependant.dependencies)} | {dep.dependency for dep in inherited}
        if not calls & set(_ACCESS_DEPENDENCIES):
            missing.append(f"{','.join(sorted(route.methods))} {path}")
    return missing


def api_routes(routes: Iterable[Any]) -> list[tuple[str, APIRoute]]:
    """Every API route with its full path, also those of included routers."""
    return [(path, route) for path, route, _ in _api_routes(routes, "", ())]


def _api_routes(routes: Iterable[Any], prefix: str, inherited: tuple) -> Iterable[tuple[str, APIRoute, tuple]]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield prefix + route.path, route, inherited
        elif hasattr(route, "original_router"):  # FastAPI's included router, resolved when first matched
            context = route.include_context
            yield from _api_routes(route.original_router.routes, prefix + context.prefix,
                                   (*inherited, *context.dependencies))


def _flatten(dependencies) -> Iterable:
    for dependency in dependencies:
        yield dependency
        yield from _flatten(dependency.dependencies)


# -------------------------------------------------------------------------------------------------- gRPC

_CALLER: contextvars.ContextVar[Caller] = contextvars.ContextVar("flamewatch_caller", default=ANYONE)


_HANDLER_KINDS = {"unary_unary": grpc.unary_unary_rpc_method_handler,
                  "stream_unary": grpc.stream_unary_rpc_method_handler,
                  "unary_stream": grpc.unary_stream_rpc_method_handler,
                  "stream_stream": grpc.stream_stream_rpc_method_handler}


class AuthInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, authenticator: Authenticator) -> None:
        self._authenticator = authenticator

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[grpc.RpcMethodHandler]],
                                details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None or not self._authenticator.enabled:
            return handler
        for kind, make in _HANDLER_KINDS.items():
            behavior = getattr(handler, kind)
            if behavior is not None:
                guard = self._guarded if kind.endswith("unary") else self._guarded_stream
                return make(guard(behavior), handler.request_deserializer, handler.response_serializer)
        return handler

    async def _caller(self, context: grpc.aio.ServicerContext) -> Caller:
        try:
            return await self._authenticator.caller_async(_metadata(context, "authorization"),
                                                          _certificate_name(context))
        except Unauthenticated as exc:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
            raise  # abort raises; this only tells readers the call ends here

    def _guarded(self, behavior):
        async def guarded(request, context: grpc.aio.ServicerContext):
            token = _CALLER.set(await self._caller(context))
            try:
                result = behavior(request, context)
                return await result if hasattr(result, "__await__") else result
            finally:
                _CALLER.reset(token)

        return guarded

    def _guarded_stream(self, behavior):
        async def guarded(request, context: grpc.aio.ServicerContext):
            token = _CALLER.set(await self._caller(context))
            try:
                async for reply in behavior(request, context):
                    yield reply
            finally:
                _CALLER.reset(token)

        return guarded


def _metadata(context: grpc.aio.ServicerContext, key: str) -> str | None:
    for name, value in context.invocation_metadata() or ():
        if name.lower() == key:
            return value if isinstance(value, str) else value.decode("latin-1")
    return None


def _certificate_name(context: grpc.aio.ServicerContext) -> str | None:
    """The common name of the client certificate the server's client CA verified, if the call showed one."""
    names = context.auth_context().get("x509_common_name")
    return names[0].decode() if names else None


def grpc_caller() -> Caller:
    return _CALLER.get()


def grpc_tenant(context: grpc.aio.ServicerContext, action: Action) -> str:
    return _CALLER.get().tenant(action, _metadata(context, HEADER))


def grpc_tenants(context: grpc.aio.ServicerContext) -> tuple[str, ...]:
    return _CALLER.get().tenants(_metadata(context, HEADER))


def grpc_admin(what: str) -> None:
    _CALLER.get().require_admin(what)


__all__ = ["AdminOnly", "AuthInterceptor", "AuthMiddleware", "Authenticated", "PermissionDenied", "ReadTenant",
           "ReadTenants", "WriteTenant", "grpc_admin", "grpc_caller", "grpc_tenant", "grpc_tenants",
           "routes_without_access"]
