"""The one mapping from Flamewatch errors to gRPC status codes and HTTP statuses.

    ValueError                        bad request                  INVALID_ARGUMENT  400
    ├── PprofError / LabelError / TimeParseError ...
    ├── UnsupportedMediaType          a body type we do not read                      415
    └── LimitExceeded                 larger than a limit          RESOURCE_EXHAUSTED 413
    NotFoundError                     nothing by that name         NOT_FOUND         404
    StorageUnavailable                a backend is down            UNAVAILABLE       503
    └── StorageFull                   a disk is full               UNAVAILABLE       503
    BlocksMissing                     blocks lost from the store   DATA_LOSS         500
    anything else                     a bug                        INTERNAL          500

Servicers and HTTP routes never choose a status themselves; they raise and this module decides. It
also decides how loudly a failure is logged (`log_failure`): a bug with its traceback every time, a
failing backend once per interval per kind of error (a full disk fails every push the same way).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import grpc
from prometheus_client import Counter

from flamewatch.pprof.errors import LimitExceeded
from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.storage.errors import BlocksMissing, StorageUnavailable

ERRORS = Counter("flamewatch_request_errors", "Requests answered with an error, by status", ["code"])


class UnsupportedMediaType(ValueError):
    """The request body comes in a content type or encoding the endpoint does not read."""


class NotFoundError(LookupError):
    """The request names something that does not exist."""


@dataclass(frozen=True)
class Status:
    grpc_code: grpc.StatusCode
    http_status: int


_TABLE: list[tuple[type[BaseException], Status]] = [
    (LimitExceeded, Status(grpc.StatusCode.RESOURCE_EXHAUSTED, 413)),
    (UnsupportedMediaType, Status(grpc.StatusCode.INVALID_ARGUMENT, 415)),
    (ValueError, Status(grpc.StatusCode.INVALID_ARGUMENT, 400)),
    (NotFoundError, Status(grpc.StatusCode.NOT_FOUND, 404)),
    (StorageUnavailable, Status(grpc.StatusCode.UNAVAILABLE, 503)),
    (BlocksMissing, Status(grpc.StatusCode.DATA_LOSS, 500)),
]
_INTERNAL = Status(grpc.StatusCode.INTERNAL, 500)

_HTTP_OF_GRPC = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 413,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
}
_limited_logs: dict[str, RateLimitedLog] = {}


def status_of(exc: BaseException) -> Status:
    for kind, status in _TABLE:
        if isinstance(exc, kind):
            return status
    return _INTERNAL


def count_error(status: Status) -> None:
    ERRORS.labels(status.grpc_code.name).inc()


def http_status_of_grpc(code: grpc.StatusCode) -> int:
    return _HTTP_OF_GRPC.get(code, 500)


def message_of(exc: BaseException) -> str:
    if status_of(exc) is _INTERNAL:
        return f"internal error: {type(exc).__name__}: {exc}"
    return str(exc)


def log_failure(logger: logging.Logger, exc: BaseException, message: str, *args: object) -> None:
    """Log a failed request: a bug with its traceback every time, a server-side failure (5xx) once per
    interval per kind of error, a refused request (4xx) at INFO."""
    status = status_of(exc)
    if status is _INTERNAL:
        logger.error(message, *args, exc_info=exc)
    elif status.http_status >= 500:
        _limited(logger).log(logging.ERROR, type(exc).__name__, message, *args)
    else:
        logger.info(message, *args)


def _limited(logger: logging.Logger) -> RateLimitedLog:
    if logger.name not in _limited_logs:
        _limited_logs.setdefault(logger.name, RateLimitedLog(logger))
    return _limited_logs[logger.name]
