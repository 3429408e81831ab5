"""OTLP profiles ingest: gRPC `ProfilesService/Export` and HTTP `POST /v1development/profiles`.

Both read an `ExportProfilesServiceRequest` (HTTP: protobuf or JSON, optionally gzip), convert it with
`otlp.convert` and push each profile through `Ingester.push`, so validation, limits and durability are
those of every other push. Each profile is stored whole or not at all; the ones refused are counted
in the response's `partial_success` with their reasons. When every profile is refused the request
fails (INVALID_ARGUMENT / 400, RESOURCE_EXHAUSTED / 413 for a size limit): nothing was written.
An HTTP error's body is a `google.rpc.Status` (protobuf or JSON, as the request), as OTLP asks.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import time
from typing import Protocol

import grpc
from fastapi import APIRouter, Request
from fastapi.responses import Response
from google.protobuf import json_format
from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
    ExportProfilesServiceRequest,
    ExportProfilesServiceResponse,
)

from flamewatch.auth.caller import Action
from flamewatch.ingester.config import IngesterConfig, IngestLimits
from flamewatch.ingester.errors import OtlpDecodeError
from flamewatch.ingester.otlp import convert
from flamewatch.ingester.otlp_limits import check_json_counts
from flamewatch.pprof import LimitExceeded, decompress
from flamewatch.rpc.auth import WriteTenant, grpc_tenant
from flamewatch.rpc.body import read_limited
from flamewatch.rpc.errors import UnsupportedMediaTypeError, count_error, log_failure, message_of, status_of
from flamewatch.rpc.grpc_server import handled

log = logging.getLogger(__name__)

GRPC_SERVICE = "opentelemetry.proto.collector.profiles.v1development.ProfilesService"
HTTP_PATH = "/v1development/profiles"
PROTOBUF, JSON = "application/x-protobuf", "application/json"
_MAX_REASONS = 5  # partial_success.error_message names the first few refused profiles
_RETRY_AFTER_S = "1"
_DEFAULT_LIMITS = IngestLimits()


class Pusher(Protocol):
    """What the receiver needs of the ingester."""

    config: IngesterConfig

    async def push(self, tenant: str, series: list, name_hint: str | None = None) -> tuple[int, int]: ...


async def export(pusher: Pusher, tenant: str, request: ExportProfilesServiceRequest) -> ExportProfilesServiceResponse:
    """Push every profile of the request; answer with the ones refused, or raise when all were."""
    converted, refused = await asyncio.to_thread(convert, request, pusher.config.limits)
    errors: list[ValueError] = [r.error for r in refused]
    results = await asyncio.gather(*(pusher.push(tenant, [(c.labels, [(c.where, c.pprof)])]) for c in converted),
                                   return_exceptions=True)
    for result in results:
        if isinstance(result, ValueError):
            errors.append(result)
        elif isinstance(result, BaseException):
            raise result  # a backend failure: the client retries, and stored profiles are not stored twice
    response = ExportProfilesServiceResponse()
    if errors and len(errors) == len(refused) + len(converted):
        raise errors[0] if len(errors) == 1 else type(errors[0])(_reasons(errors))
    if errors:
        response.partial_success.rejected_profiles = len(errors)
        response.partial_success.error_message = _reasons(errors)
    return response


def _reasons(errors: list[ValueError]) -> str:
    more = f"; and {len(errors) - _MAX_REASONS} more" if len(errors) > _MAX_REASONS else ""
    count = f"{len(errors)} profile{'' if len(errors) == 1 else 's'} refused"
    return f"{count}: " + "; ".join(map(str, errors[:_MAX_REASONS])) + more


def parse_protobuf(body: bytes) -> ExportProfilesServiceRequest:
    request = ExportProfilesServiceRequest()
    try:
        request.ParseFromString(body)
    except ProtobufDecodeError as exc:
        raise OtlpDecodeError(f"not an OTLP ExportProfilesServiceRequest: invalid protobuf ({exc})") from exc
    return request


def parse_json(body: bytes, limits: IngestLimits = _DEFAULT_LIMITS) -> ExportProfilesServiceRequest:
    """OTLP/JSON: ids are hex (not protobuf JSON's base64), unknown fields are ignored; the counts limits
    are checked on the document before the (slow) protobuf JSON parser runs."""
    try:
        document = json.loads(body)
        if not isinstance(document, dict):
            raise OtlpDecodeError("not an OTLP ExportProfilesServiceRequest: the JSON body is not an object")
        _check_shape(document)
        check_json_counts(document, limits)
        _hex_ids_to_base64(document)
        return json_format.ParseDict(document, ExportProfilesServiceRequest(), ignore_unknown_fields=True)
    except (ValueError, json_format.ParseError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        if isinstance(exc, OtlpDecodeError | LimitExceeded):
            raise
        raise OtlpDecodeError(f"not an OTLP ExportProfilesServiceRequest: invalid JSON ({exc})") from exc


def _check_shape(document: dict) -> None:
    """The top level as the OpenAPI document declares it (protobuf's JSON parser would take `[]` for an
    empty message)."""
    resources = next((document[k] for k in ("resourceProfiles", "resource_profiles") if k in document), [])
    if not isinstance(resources, list) or not all(isinstance(r, dict) for r in resources):
        raise OtlpDecodeError("not an OTLP ExportProfilesServiceRequest: resourceProfiles must be an array of objects")
    if not isinstance(document.get("dictionary", {}), dict):
        raise OtlpDecodeError("not an OTLP ExportProfilesServiceRequest: dictionary must be an object")


_ID_BYTES = {"traceId": 16, "trace_id": 16, "spanId": 8, "span_id": 8, "profileId": 16, "profile_id": 16}
_HEX = re.compile(r"[0-9a-fA-F]*")


def _hex_ids_to_base64(document: dict) -> None:
    """OTLP/JSON writes trace, span and profile ids as hex; a hex id is twice its byte length, which
    tells it apart from base64 (what protobuf's own JSON, e.g. Go's protojson, writes)."""
    dictionary = document.get("dictionary")
    links = dictionary.get("linkTable", dictionary.get("link_table", [])) if isinstance(dictionary, dict) else []
    profiles = [p for r in _items(document, "resourceProfiles", "resource_profiles")
                for s in _items(r, "scopeProfiles", "scope_profiles") for p in _items(s, "profiles")]
    for owner in [*(links if isinstance(links, list) else []), *profiles]:
        for key in set(_ID_BYTES) & set(owner if isinstance(owner, dict) else ()):
            value = owner[key]
            if isinstance(value, str) and len(value) == 2 * _ID_BYTES[key] and _HEX.fullmatch(value):
                owner[key] = base64.b64encode(bytes.fromhex(value)).decode()


def _items(owner, *keys: str) -> list:
    if not isinstance(owner, dict):
        return []
    value = next((owner[k] for k in keys if k in owner), [])
    return value if isinstance(value, list) else []


# ------------------------------------------------------------------------------------------- gRPC


class _Servicer:
    def __init__(self, pusher: Pusher):
        self._pusher = pusher

    @handled
    async def Export(self, body: bytes, context: grpc.aio.ServicerContext) -> ExportProfilesServiceResponse:
        # The body arrives as bytes, so a malformed message is INVALID_ARGUMENT with our message rather
        # than grpcio's generic deserialization failure.
        limit = self._pusher.config.limits.max_compressed_bytes
        if len(body) > limit:
            raise LimitExceeded(f"request is {len(body)} bytes, the limit is {limit}")
        tenant = grpc_tenant(context, Action.WRITE)
        return await export(self._pusher, tenant, parse_protobuf(body))


def grpc_handler(pusher: Pusher) -> grpc.GenericRpcHandler:
    export_method = grpc.unary_unary_rpc_method_handler(
        _Servicer(pusher).Export, request_deserializer=None,
        response_serializer=ExportProfilesServiceResponse.SerializeToString)
    return grpc.method_handlers_generic_handler(GRPC_SERVICE, {"Export": export_method})


# ------------------------------------------------------------------------------------------- HTTP


_BINARY = {"schema": {"type": "string", "format": "binary"}}
_STATUS = {"type": "object", "description": "google.rpc.Status", "properties": {
    "code": {"type": "integer", "description": "the gRPC status code"}, "message": {"type": "string"}}}
# The body is read as a stream and decoded here, so FastAPI cannot see it: declare it.
_OPENAPI = {
    "requestBody": {"required": True, "description": "an ExportProfilesServiceRequest (Content-Encoding: gzip "
                    "allowed)", "content": {
                        PROTOBUF: {"schema": {"type": "string", "format": "binary", "minLength": 1}},
                        JSON: {"schema": {"type": "object", "properties": {
                            "resourceProfiles": {"type": "array", "items": {"type": "object"}},
                            "dictionary": {"type": "object"}}}}}},
}
_RESPONSES = {
    200: {"description": "an ExportProfilesServiceResponse, in the request's content type; partial_success "
          "counts the profiles refused", "content": {PROTOBUF: _BINARY, JSON: {"schema": {"type": "object"}}}},
    "4XX": {"description": "bad request (400), over a size limit (413), unsupported content type (415)",
            "content": {PROTOBUF: _BINARY, JSON: {"schema": _STATUS}}},
    503: {"description": "Postgres or the object store is unavailable; retry (Retry-After)",
          "content": {PROTOBUF: _BINARY, JSON: {"schema": _STATUS}}},
}


def http_router(pusher: Pusher) -> APIRouter:
    router = APIRouter()

    @router.post(HTTP_PATH, summary="OTLP profiles export (ExportProfilesServiceRequest as protobuf or JSON, "
                 "optionally gzip)", response_class=Response, responses=_RESPONSES, openapi_extra=_OPENAPI)
    async def export_http(request: Request, tenant: WriteTenant) -> Response:
        as_json = _media_type(request) == JSON
        started = time.perf_counter()
        try:
            body = await _body(request, pusher.config.limits.max_compressed_bytes,
                               pusher.config.limits.max_decompressed_bytes)
            limits = pusher.config.limits
            otlp_request = parse_json(body, limits) if _checked_media_type(request) == JSON else parse_protobuf(body)
            response = await export(pusher, tenant, otlp_request)
        except Exception as exc:  # noqa: BLE001 - every failure is answered as a Status, mapped in rpc.errors
            log_failure(log, exc, "OTLP export failed after %.0f ms: %s", 1e3 * (time.perf_counter() - started), exc)
            return _error(exc, as_json)
        if as_json:
            return Response(json_format.MessageToJson(response, indent=None), media_type=JSON)
        return Response(response.SerializeToString(), media_type=PROTOBUF)

    return router


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _checked_media_type(request: Request) -> str:
    media_type = _media_type(request)
    if media_type not in (PROTOBUF, JSON):
        raise UnsupportedMediaTypeError(f'Content-Type "{media_type}" is not supported: send {PROTOBUF} or {JSON}')
    return media_type


async def _body(request: Request, max_bytes: int, max_decompressed: int) -> bytes:
    body = await read_limited(request, max_bytes)
    encoding = request.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity", "gzip"):
        raise UnsupportedMediaTypeError(f'Content-Encoding "{encoding}" is not supported: send gzip or no encoding')
    if encoding == "gzip" and not body.startswith(b"\x1f\x8b"):
        raise OtlpDecodeError("Content-Encoding is gzip, but the body is not gzip data")
    data = decompress(body, max_decompressed)  # gzip without the header is accepted too
    if not data:
        raise OtlpDecodeError("empty request body: send an ExportProfilesServiceRequest")
    return data


def _error(exc: BaseException, as_json: bool) -> Response:
    """The error as a google.rpc.Status: its code and our message."""
    status = status_of(exc)
    count_error(status)
    code, message = status.grpc_code.value[0], message_of(exc)
    headers = {"Retry-After": _RETRY_AFTER_S} if status.http_status in (429, 503) else None
    if as_json:
        return Response(json.dumps({"code": code, "message": message}), status.http_status, headers, JSON)
    return Response(_status_protobuf(code, message), status.http_status, headers, PROTOBUF)


def _status_protobuf(code: int, message: str) -> bytes:
    """google.rpc.Status {int32 code = 1; string message = 2;}, written by hand: its two fields do not
    justify a dependency on googleapis-common-protos."""
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
