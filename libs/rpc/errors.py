"""The one mapping from Flamewatch errors to gRPC status codes, HTTP statuses and Connect codes.

                                                                   gRPC / Connect    HTTP  Connect HTTP
    ValueError                        bad request                  INVALID_ARGUMENT  400   400
    ├── PprofError / LabelError / TimeParseError ...
    ├── UnsupportedMediaTypeError     a body type we do not read   INVALID_ARGUMENT  415   415
    ├── UnprocessableError            a body that is no profile    INVALID_ARGUMENT  422   400
    ├── UnsupportedFormatError        a format we do not read      INVALID_ARGUMENT  415   400
    └── LimitExceeded                 larger than a limit          RESOURCE_EXHAUSTED 413  429
    RateLimited                       a tenant over its rate       RESOURCE_EXHAUSTED 429  429
    CostLimitExceeded                 would read more than allowed RESOURCE_EXHAUSTED 422  429
    Unauthenticated                   no or a wrong credential     UNAUTHENTICATED   401   401
    PermissionDenied                  a credential's scope refuses PERMISSION_DENIED 403   403
    NotFoundError                     nothing by that name         NOT_FOUND         404   404
    AlreadyExistsError                a newer write is stored      ALREADY_EXISTS    409   409
    UnimplementedError                a method or encoding we lack UNIMPLEMENTED     501   501
    └── UnknownMethodError            no such method               UNIMPLEMENTED     404   404
    DeadlineExceededError             the client's deadline passed DEADLINE_EXCEEDED 504   504
    CancelledError                    the client went away         CANCELLED         499   499
    StorageUnavailable                a backend is down            UNAVAILABLE       503   503
    └── StorageFull                   a disk is full               UNAVAILABLE       503   503
    BlocksMissing                     blocks lost from the store   DATA_LOSS         500   500
    anything else                     a bug                        INTERNAL          500   500
    ├── pyarrow's ArrowException      reading or writing our own   INTERNAL          500   500
    │                                 blocks failed (pyarrow never
    │                                 parses a request here)
    └── UnreadableBlock               a block of a newer format    INTERNAL          500   500

Connect (`connect_error_of`) names the gRPC code in snake case and gives each code the HTTP status of
Connect's protocol specification; only an unknown method (404, as for any unknown URL) and a body type
we do not read (415) keep a status of their own.

Servicers and HTTP routes never choose a status themselves; they raise and this module decides. It
also decides how loudly a failure is logged (`log_failure`): a bug with its traceback every time, a
failing backend once per interval per kind of error (a full disk fails every push the same way).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass

import grpc
from prometheus_client import Counter

from flamewatch.auth.errors import PermissionDenied, Unauthenticated
from flamewatch.pprof.errors import LimitExceeded
from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.storage.errors import BlocksMissing, StorageUnavailable

ERRORS = Counter("flamewatch_request_errors", "Requests answered with an error, by status", ["code"])


class NotFoundError(LookupError):
    """The request names something that does not exist."""


class AlreadyExistsError(Exception):
    """What a request would write conflicts with what is stored (a newer value of a setting)."""


class UnimplementedError(Exception):
    """The request asks for a method or an encoding this server does not offer."""


class UnknownMethodError(UnimplementedError):
    """The request names a method its service does not have."""


class UnsupportedMediaTypeError(ValueError):
    """The request body is of a content type the endpoint does not read."""


# The trailing gRPC metadata (seconds, decimal) and HTTP header telling a rate-limited client when to retry.
RETRY_AFTER = "retry-after"


class RateLimited(Exception):
    """A tenant pushes faster than its ingestion rate limit allows: the push is refused whole; retry after
    `retry_after_s` seconds (None: the push can never pass as it is)."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class CostLimitExceeded(Exception):
    """A request would cost more than its tenant's limit allows (a query reading too many bytes): refused
    before any work, and refused again if retried as it is, so neither 429 (retry later) nor 413 (a
    body too large)."""


class DeadlineExceededError(TimeoutError):
    """The deadline the client set passed before the answer was ready."""


class CancelledError(Exception):
    """The client went away before the answer was ready, so the work for it was stopped."""


class UnprocessableError(ValueError):
    """The request's metadata is fine but its body cannot be read as a profile (protocols whose
    clients tell this apart from bad metadata, such as the Pyroscope SDKs' /ingest)."""


class UnsupportedFormatError(ValueError):
    """The body is in a profile format Flamewatch does not read (for example Java's JFR)."""


@dataclass(frozen=True)
class Status:
    grpc_code: grpc.StatusCode
    http_status: int


_TABLE: list[tuple[type[BaseException], Status]] = [
    (LimitExceeded, Status(grpc.StatusCode.RESOURCE_EXHAUSTED, 413)),
    (RateLimited, Status(grpc.StatusCode.RESOURCE_EXHAUSTED, 429)),
    (CostLimitExceeded, Status(grpc.StatusCode.RESOURCE_EXHAUSTED, 422)),
    (UnsupportedMediaTypeError, Status(grpc.StatusCode.INVALID_ARGUMENT, 415)),
    (UnprocessableError, Status(grpc.StatusCode.INVALID_ARGUMENT, 422)),
    (UnsupportedFormatError, Status(grpc.StatusCode.INVALID_ARGUMENT, 415)),
    (ValueError, Status(grpc.StatusCode.INVALID_ARGUMENT, 400)),
    (NotFoundError, Status(grpc.StatusCode.NOT_FOUND, 404)),
    (AlreadyExistsError, Status(grpc.StatusCode.ALREADY_EXISTS, 409)),
    (Unauthenticated, Status(grpc.StatusCode.UNAUTHENTICATED, 401)),
    (PermissionDenied, Status(grpc.StatusCode.PERMISSION_DENIED, 403)),
    (UnknownMethodError, Status(grpc.StatusCode.UNIMPLEMENTED, 404)),
    (UnimplementedError, Status(grpc.StatusCode.UNIMPLEMENTED, 501)),
    (DeadlineExceededError, Status(grpc.StatusCode.DEADLINE_EXCEEDED, 504)),
    (CancelledError, Status(grpc.StatusCode.CANCELLED, 499)),
    (StorageUnavailable, Status(grpc.StatusCode.UNAVAILABLE, 503)),
    (BlocksMissing, Status(grpc.StatusCode.DATA_LOSS, 500)),
]
_INTERNAL = Status(grpc.StatusCode.INTERNAL, 500)

# Connect's HTTP status of each code (its protocol specification); codes not listed answer 500.
_CONNECT_HTTP = {
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.UNAUTHENTICATED: 401,
}
# Statuses an HTTP server gives before Connect's handler runs: an unknown URL, an unreadable body type.
_CONNECT_TRANSPORT = (UnknownMethodError, UnsupportedMediaTypeError)
_limited_logs: dict[str, RateLimitedLog] = {}


def status_of(exc: BaseException) -> Status:
    if _from_arrow(exc):
        return _INTERNAL
    for kind, status in _TABLE:
        if isinstance(exc, kind):
            return status
    return _INTERNAL


def _from_arrow(exc: BaseException) -> bool:
    """pyarrow's ArrowInvalid is also a ValueError, but no request is parsed by pyarrow: its failures are
    ours. A process that never imported pyarrow raises none of them, so this does not import it."""
    arrow = sys.modules.get("pyarrow")
    return arrow is not None and isinstance(exc, arrow.ArrowException)


def count_error(status: Status) -> None:
    ERRORS.labels(status.grpc_code.name).inc()


@dataclass(frozen=True)
class ConnectError:
    code: str  # Connect's name of the code, e.g. "invalid_argument"
    http_status: int


def connect_error_of(exc: BaseException) -> ConnectError:
    status = status_of(exc)
    code = status.grpc_code
    name = "canceled" if code is grpc.StatusCode.CANCELLED else code.name.lower()
    if isinstance(exc, _CONNECT_TRANSPORT):
        return ConnectError(name, status.http_status)
    return ConnectError(name, _CONNECT_HTTP.get(code, 500))


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
