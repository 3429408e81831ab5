"""HTTP plumbing shared by the services: one FastAPI app per process with health, metrics, the
credential check of `rpc.auth` and the error mapping of rpc.errors; each service contributes an APIRouter."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence

from fastapi import APIRouter, FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from flamewatch.auth.caller import Authenticator
from flamewatch.auth.errors import PermissionDenied, Unauthenticated
from flamewatch.auth.webconfig import WebConfig
from flamewatch.rpc.auth import CHALLENGE, AdminOnly, AuthMiddleware, routes_without_access
from flamewatch.rpc.disconnect import CallerWatch
from flamewatch.rpc.errors import (
    CancelledError,
    CostLimitExceeded,
    DeadlineExceededError,
    RateLimited,
    count_error,
    log_failure,
    message_of,
    status_of,
)
from flamewatch.storage.errors import StorageError

log = logging.getLogger(__name__)


def error_response(exc: BaseException) -> JSONResponse:
    status = status_of(exc)
    count_error(status)
    if status.http_status >= 500:
        log_failure(log, exc, "request failed: %s", exc)
    retry = getattr(exc, "retry_after_s", None)  # a rate limit says when to come back (RFC 9110's Retry-After)
    headers = {"Retry-After": str(max(1, math.ceil(retry)))} if retry is not None else None
    if isinstance(exc, Unauthenticated):
        headers = {"WWW-Authenticate": CHALLENGE}
    return JSONResponse({"error": message_of(exc)}, status_code=status.http_status, headers=headers)


async def _expected_error(_: Request, exc: Exception) -> JSONResponse:
    return error_response(exc)


def build_app(routers: Sequence[APIRouter], ready: Callable[[], Sequence[str]],
              authenticator: Authenticator | None = None) -> FastAPI:
    """`ready` lists what keeps the process from being ready (empty: ready); see `rpc.readiness`.
    `authenticator` checks every request's credential (none: the web configuration allows everyone)."""
    app = FastAPI(title="Flamewatch", docs_url="/api/docs", openapi_url="/api/openapi.json")
    for router in routers:
        app.include_router(router)
    app.add_middleware(AuthMiddleware, authenticator=authenticator or Authenticator(WebConfig()))
    app.add_middleware(CallerWatch)  # outermost: a caller that leaves stops the work for it (`disconnect`)

    # Expected failures get their answer here. Anything else reaches the server's error middleware,
    # which answers 500 and logs the traceback: a bug should be loud.
    for kind in (ValueError, LookupError, StorageError, RateLimited, CostLimitExceeded, DeadlineExceededError,
                 CancelledError, Unauthenticated, PermissionDenied):
        app.add_exception_handler(kind, _expected_error)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return JSONResponse({"error": f"invalid request: {problems}"}, status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400:  # a JSON body that does not parse: said like every other bad request
            return JSONResponse({"error": f"invalid request: {exc.detail}: send a JSON object"}, status_code=400)
        return await http_exception_handler(request, exc)

    @app.get("/healthz", include_in_schema=False)
    def _healthz() -> PlainTextResponse:
        return PlainTextResponse("ok")

    @app.get("/readyz", include_in_schema=False)
    def _readyz() -> PlainTextResponse:
        problems = ready()
        if problems:
            return PlainTextResponse("not ready: " + "; ".join(problems), status_code=503)
        return PlainTextResponse("ready")

    @app.get("/metrics", include_in_schema=False, dependencies=[AdminOnly])
    def _metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    # Every route says what it does to whom (rpc.auth); one that does not would serve anyone.
    missing = routes_without_access(app.routes)
    if missing:
        raise RuntimeError(f"routes that neither resolve a tenant nor ask for admin: {', '.join(missing)}; give "
                           "each a ReadTenant, WriteTenant, AdminOnly or Authenticated dependency (rpc.auth)")

    return app
