"""gRPC plumbing shared by the services: one wrapper maps exceptions to status codes and logs them; a
rate-limited call also gets `retry-after` (seconds) in its trailing metadata."""

from __future__ import annotations

import functools
import logging
import time

import grpc

from flamewatch.rpc.errors import RETRY_AFTER, count_error, log_failure, message_of, status_of

log = logging.getLogger(__name__)


def handled(method):
    """Wrap an async servicer method: time it, map exceptions through rpc.errors, log failures."""

    @functools.wraps(method)
    async def wrapper(self, request, context: grpc.aio.ServicerContext):
        started = time.perf_counter()
        try:
            return await method(self, request, context)
        except Exception as exc:  # noqa: BLE001 - every failure is mapped to a status here
            status = status_of(exc)
            count_error(status)
            log_failure(log, exc, "%s failed after %.0f ms: %s", method.__name__,
                        1e3 * (time.perf_counter() - started), exc)
            retry = getattr(exc, "retry_after_s", None)  # a rate limit: when the same call can pass
            if retry is not None:
                context.set_trailing_metadata(((RETRY_AFTER, f"{retry:.3f}"),))
            await context.abort(status.grpc_code, message_of(exc))

    return wrapper
