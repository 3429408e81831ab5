"""Send the events the collector sees (`oomwatch.py`) to the ingester's gRPC `EventService.Record`.

The same plumbing as the profiles (`sender.py`): a channel from `flamewatch.rpc.channels` with the
process's identity and TLS, the tenant in the `x-scope-orgid` metadata. Events are few (a kill, a
restart), so they go one per call: a refused event (too old, a label too long) is logged and dropped
alone. A failed call is retried with backoff doubling up to `max_backoff_s`, in its own task, so
scrapes never wait on it. The queue is bounded; the events store records each key once, so sending an
event again after an unclear failure is harmless.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

import grpc
from prometheus_client import Counter

from flamewatch.api.flamewatch.v1 import events_pb2, events_pb2_grpc
from flamewatch.events.convert import event_proto
from flamewatch.events.model import Event
from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.rpc.channels import describe_failure, grpc_channel
from flamewatch.rpc.tenant import HEADER

log = logging.getLogger(__name__)
_rate_log = RateLimitedLog(log)

SENT = Counter("flamewatch_collector_sent_events", "Events (OOM kills, restarts) the ingester acknowledged")
DROPPED = Counter("flamewatch_collector_dropped_events", "Events dropped before the ingester recorded them",
                  ["reason"])

_REFUSED = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED}


class EventSender:
    def __init__(self, address: str, *, tenant: str = "anonymous", queue_size: int = 1000, timeout_s: float = 30.0,
                 max_backoff_s: float = 30.0):
        self._address, self._tenant = address, tenant
        self._queue: deque[Event] = deque()
        self._queue_size, self._timeout_s, self._max_backoff_s = queue_size, timeout_s, max_backoff_s
        self._ready = asyncio.Event()
        self._inflight = 0

    def submit(self, events: list[Event]) -> None:
        for event in events:
            if len(self._queue) >= self._queue_size:
                self._queue.popleft()
                DROPPED.labels("queue_full").inc()
            self._queue.append(event)
        if events:
            self._ready.set()

    def pending(self) -> int:
        return len(self._queue) + self._inflight

    async def run(self) -> None:
        """Send until cancelled."""
        channel = grpc_channel(self._address)
        stub = events_pb2_grpc.EventServiceStub(channel)
        try:
            while True:
                await self._ready.wait()
                if not self._queue:
                    self._ready.clear()
                    continue
                event = self._queue.popleft()
                self._inflight = 1
                try:
                    await self._send(stub, event)
                finally:
                    self._inflight = 0
        finally:
            await channel.close()

    async def flush(self, deadline_s: float) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline_s
        while self.pending() and loop.time() < end:
            await asyncio.sleep(0.05)

    async def _send(self, stub, event: Event) -> None:
        request = events_pb2.RecordEventsRequest(events=[event_proto(event)])
        backoff = 0.5
        while True:
            try:
                answer = await stub.Record(request, timeout=self._timeout_s, metadata=((HEADER, self._tenant),))
                SENT.inc()
                _log_recorded(event, answer.recorded > 0)
                return
            except grpc.aio.AioRpcError as exc:
                if exc.code() in _REFUSED:
                    DROPPED.labels("refused").inc()
                    log.warning("the ingester at %s refused the %s of %s: %s", self._address, event.kind,
                                event.labels, exc.details())
                    return
                _rate_log.log(logging.WARNING, self._address, "recording the %s of %s at %s failed (%s), retrying "
                              "in %.1f s", event.kind, event.labels, self._address, describe_failure(exc), backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff_s)


def _log_recorded(event: Event, new: bool) -> None:
    """One line per kill or restart; one seen again (a collector restart re-lists its pods) at debug level."""
    limit = f", memory limit {event.memory_limit_bytes / 2**20:.0f} MiB" if event.memory_limit_bytes else ""
    log.log(logging.INFO if new else logging.DEBUG, "%s %s of %s (%s%s), restart %d%s", "recorded" if new else
            "already recorded:", event.kind, event.labels, event.message, limit, event.restart_count,
            "" if new else " (same key)")
