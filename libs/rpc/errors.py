"""The one mapping from Flamewatch errors to gRPC status codes and HTTP statuses.

    ValueError                        bad request                  INVALID_ARGUMENT  400
    ├── PprofError / LabelError / TimeParseError ...
    └── LimitExceeded                 larger than a limit          RESOURCE_EXHAUSTED 413
    NotFoundError                     nothing by that name         NOT_FOUND         404
    StorageUnavailable                a backend is down            UNAVAILABLE       503
    anything else                     a bug                        INTERNAL          500

Servicers and HTTP routes never choose a status themselves; they raise and this module decides.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from prometheus_client import Counter

from flamewatch.pprof.errors import LimitExceeded
from flamewatch.storage.errors import StorageUnavailable

ERRORS = Counter("flamewatch_request_errors", "Requests answered with an error, by status", ["code"])


class NotFoundError(LookupError):
    """The request names something that does not exist."""


@dataclass(frozen=True)
class Status:
    grpc_code: grpc.StatusCode
    http_status: int


_TABLE: list[tuple[type[BaseException], Status]] = [
    (LimitExceeded, Status(grpc.StatusCode.RESOURCE_EXHAUSTED, 413)),
    (ValueError, Status(grpc.StatusCode.INVALID_ARGUMENT, 400)),
    (NotFoundError, Status(grpc.StatusCode.NOT_FOUND, 404)),
    (StorageUnavailable, Status(grpc.StatusCode.UNAVAILABLE, 503)),
]
_INTERNAL = Status(grpc.StatusCode.INTERNAL, 500)

_HTTP_OF_GRPC = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 413,
    grpc.StatusCode.UNAVAILABLE: 503,
}


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
