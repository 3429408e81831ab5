"""Connect's unary protocol on our FastAPI apps: `POST /<package>.<Service>/<Method>`.

A service is its protobuf descriptor plus a table of handlers, each `request message -> response message`
(async, plain Python: it knows nothing of HTTP). This module does the protocol around them: the body as
`application/proto` or `application/json` (protobuf's JSON mapping, which is Connect's), gzip in
`Content-Encoding` (or the streaming `Connect-Content-Encoding`) on the way in and, when the client
accepts it, on the way out, `Connect-Protocol-Version`, `Connect-Timeout-Ms`, the tenant header (several
tenants for a service that `reads_several`), a size limit on the body before and after decompression, and
errors as Connect's `{"code", "message"}` with the HTTP status that `rpc.errors` assigns to each code.
Methods of the descriptor without a handler answer `unimplemented`, as does any name the service does not
have (with 404, like an unknown URL).

Only unary calls over HTTP/1.1: the streaming methods of Connect and gRPC-Web are not served here, and
uvicorn speaks no HTTP/2 (an HTTP/2 front such as hypercorn or a proxy would be needed for h2 clients).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import time
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from google.protobuf import json_format
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass
from starlette.datastructures import Headers

from flamewatch.auth.caller import ANYONE, Action, Caller
from flamewatch.pprof import LimitExceeded
from flamewatch.rpc.auth import Authenticated
from flamewatch.rpc.body import read_limited
from flamewatch.rpc.errors import (
    DeadlineExceededError,
    UnimplementedError,
    UnknownMethodError,
    UnsupportedMediaTypeError,
    connect_error_of,
    count_error,
    log_failure,
    message_of,
    status_of,
)
from flamewatch.rpc.tenant import HEADER

log = logging.getLogger(__name__)

PROTO, JSON = "application/proto", "application/json"
DEFAULT_MAX_BODY_BYTES = 4 << 20
# Smaller answers are sent as they are: gzip would save little and cost a round of CPU.
_COMPRESS_FROM_BYTES = 1024


@dataclass(frozen=True)
class Call:
    """What a handler may need of the request besides its message."""

    tenants: tuple[str, ...]  # one, or for a read of a service that `reads_several`, each X-Scope-OrgID names
    headers: Headers

    @property
    def tenant(self) -> str:
        """The one tenant of a method that acts on one."""
        return self.tenants[0]


Handler = Callable[[Message, Call], Awaitable[Message]]
JsonCheck = Callable[[object], None]


@dataclass(frozen=True)
class Service:
    descriptor: ServiceDescriptor
    action: Action  # what every method does to the tenant it is called for: read or write
    handlers: Mapping[str, Handler]  # method name -> handler; the others answer unimplemented
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES  # the request body, before and after decompression
    # method name -> a check of a JSON request as decoded JSON, run before protobuf's JSON parser, which
    # walks every value in Python: a method can refuse a body over its count limits before paying for it
    json_checks: Mapping[str, JsonCheck] = field(default_factory=dict)
    actions: Mapping[str, Action] = field(default_factory=dict)  # method name -> its own action, if not `action`
    reads_several: bool = False  # its reads may name several tenants (X-Scope-OrgID a|b): `Call.tenants`
    path: str = field(init=False)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.handlers) - set(self.descriptor.methods_by_name))
        if unknown:
            raise ValueError(f"{self.descriptor.full_name} has no methods {unknown}")
        object.__setattr__(self, "path", f"/{self.descriptor.full_name}")


def router(service: Service) -> APIRouter:
    """Routes for every method of `service`; mount with `app.include_router`."""
    r = APIRouter(include_in_schema=False)

    @r.post(service.path + "/{method}")
    async def _call(method: str, request: Request, caller: Authenticated) -> Response:
        return await serve(service, method, request, caller)

    return r


async def serve(service: Service, name: str, request: Request, caller: Caller = ANYONE) -> Response:
    started = time.perf_counter()
    procedure = f"{service.descriptor.full_name}/{name}"
    try:
        codec = _codec(request.headers.get("content-type"))
        method = _method(service, name)
        _check_protocol_version(request.headers.get("connect-protocol-version"))
        tenants = _tenants(service, name, caller, request.headers.get(HEADER))
        timeout_s = _timeout_s(request.headers.get("connect-timeout-ms"))
        body = await read_body(request, service.max_body_bytes)
        message = decode(codec, body, GetMessageClass(method.input_type), procedure, service.json_checks.get(name))
        reply = await _with_deadline(service.handlers[name](message, Call(tenants, request.headers)), timeout_s)
        return _reply(_encode(codec, reply), codec, request.headers.get("accept-encoding", ""))
    except Exception as exc:  # noqa: BLE001 - every failure becomes a Connect error here
        log_failure(log, exc, "%s failed after %.0f ms: %s", procedure, 1e3 * (time.perf_counter() - started), exc)
        return error_response(exc)


def _tenants(service: Service, name: str, caller: Caller, asked: str | None) -> tuple[str, ...]:
    action = service.actions.get(name, service.action)
    if service.reads_several and action is Action.READ:
        return caller.tenants(asked)
    return (caller.tenant(action, asked),)


def error_response(exc: BaseException) -> JSONResponse:
    """Connect's error body; unary errors are always JSON whatever the request's codec."""
    count_error(status_of(exc))
    error = connect_error_of(exc)
    headers = {"Accept-Post": f"{PROTO}, {JSON}"} if isinstance(exc, UnsupportedMediaTypeError) else None
    return JSONResponse({"code": error.code, "message": message_of(exc)}, status_code=error.http_status,
                        headers=headers)


def _codec(content_type: str | None) -> str:
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind in (PROTO, JSON):
        return kind
    raise UnsupportedMediaTypeError(f'content type "{content_type or ""}" is not supported: send {PROTO} '
                                    f"or {JSON}")


def _method(service: Service, name: str) -> MethodDescriptor:
    method = service.descriptor.methods_by_name.get(name)
    if method is None:
        raise UnknownMethodError(f"{service.descriptor.full_name} has no method {name!r}")
    if name not in service.handlers:
        raise UnimplementedError(f"{service.descriptor.full_name}/{name} is not implemented by Flamewatch")
    if method.client_streaming or method.server_streaming:
        raise UnimplementedError(f"{service.descriptor.full_name}/{name} streams: only unary calls are served")
    return method


def _check_protocol_version(version: str | None) -> None:
    if version is not None and version.strip() != "1":
        raise ValueError(f'Connect-Protocol-Version "{version}" is not supported: send 1')


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, gunzipped when its encoding says so; neither form may pass `limit` bytes."""
    encoding = (request.headers.get("content-encoding") or request.headers.get("connect-content-encoding")
                or "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise UnimplementedError(f'content encoding "{encoding}" is not supported: send gzip or identity')
    body = await read_limited(request, limit)
    return gunzip(body, limit) if encoding == "gzip" else body


def gunzip(data: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise ValueError(f"request body is not valid gzip: {exc}") from exc
    if len(out) > limit:
        raise LimitExceeded(f"request body is larger than {limit} bytes once decompressed, the limit")
    if not inflater.eof:
        raise ValueError("request body is not valid gzip: the compressed stream is truncated")
    return out


def decode(codec: str, body: bytes, kind: type[Message], procedure: str,
           json_check: JsonCheck | None = None) -> Message:
    message = kind()
    try:
        if codec == PROTO:
            message.ParseFromString(body)
        else:
            document = json.loads(body or b"{}")
            if not isinstance(document, dict):  # protobuf's parser would fail on it with a TypeError
                raise ValueError(f"malformed {codec} body for {procedure}: expected a JSON object")
            if json_check is not None:
                json_check(document)
            # Connect's own servers ignore fields they do not know, so newer clients keep working.
            json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (DecodeError, json.JSONDecodeError, json_format.ParseError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"malformed {codec} body for {procedure}: {exc}") from exc
    return message


def _encode(codec: str, message: Message) -> bytes:
    if codec == PROTO:
        return message.SerializeToString()
    return json_format.MessageToJson(message, indent=None).encode()


def _timeout_s(timeout_ms: str | None) -> float | None:
    if timeout_ms is None:
        return None
    if not timeout_ms.isdigit() or len(timeout_ms) > 10:
        raise ValueError(f'Connect-Timeout-Ms "{timeout_ms}" is not a number of milliseconds (at most 10 digits)')
    return int(timeout_ms) / 1e3


async def _with_deadline(answer: Awaitable[Message], timeout_s: float | None) -> Message:
    if timeout_s is None:
        return await answer
    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            return await answer
    except TimeoutError as exc:
        if not deadline.expired():
            raise  # a timeout of the handler's own, not the client's deadline
        raise DeadlineExceededError(f"the client's deadline of {timeout_s * 1e3:.0f} ms passed") from exc


def _reply(body: bytes, codec: str, accept_encoding: str) -> Response:
    headers = {}
    if len(body) >= _COMPRESS_FROM_BYTES and _accepts_gzip(accept_encoding):
        body, headers = gzip.compress(body, compresslevel=1), {"Content-Encoding": "gzip"}
    return Response(body, media_type=codec, headers=headers)


def _accepts_gzip(accept_encoding: str) -> bool:
    for part in accept_encoding.lower().split(","):
        name, _, params = part.strip().partition(";")
        if name.strip() == "gzip":
            return params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False
