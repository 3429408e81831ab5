"""Send scraped profiles to the ingester over gRPC: a bounded queue, batches, retries with backoff.

Scrapes never wait on the ingester: they enqueue and go on. When the ingester stays down the queue
fills, and the oldest profiles are dropped with a log line and `flamewatch_collector_dropped_profiles`
counting them; fresh data is worth more than old. Refusals (INVALID_ARGUMENT, RESOURCE_EXHAUSTED) are
not retried: the same bytes would be refused again; except a rate limit (RESOURCE_EXHAUSTED with
`retry-after` in the trailing metadata), after which the batch is sent again once that time has passed.

Batches are spread over every address the ingester address resolves to (gRPC's round_robin): with
`dns:///ingester-headless:4101`, a headless Kubernetes Service, each ingester pod gets its share, where a
single connection through a ClusterIP would pin a collector to one pod. `ipv4:HOST:PORT,HOST:PORT` lists
several ingesters by hand.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass

import grpc
from prometheus_client import Counter, Gauge

from flamewatch.api.flamewatch.v1 import ingest_pb2, ingest_pb2_grpc, types_pb2
from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.rpc.channels import describe_failure, grpc_channel
from flamewatch.rpc.errors import RETRY_AFTER
from flamewatch.rpc.labelpairs import label_pairs
from flamewatch.rpc.tenant import HEADER

log = logging.getLogger(__name__)

SENT = Counter("flamewatch_collector_sent_profiles", "pprof profiles acknowledged by the ingester")
DROPPED = Counter("flamewatch_collector_dropped_profiles", "pprof profiles dropped before sending", ["reason"])
QUEUED = Gauge("flamewatch_collector_queued_profiles", "pprof profiles waiting to be sent")
RATE_LIMITED = Counter("flamewatch_collector_rate_limited_profiles",
                       "pprof profiles whose push the ingester's rate limit deferred (sent again later)")
_rate_log = RateLimitedLog(log)

_RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL,
              grpc.StatusCode.UNKNOWN, grpc.StatusCode.CANCELLED}


@dataclass(frozen=True)
class Outgoing:
    labels: dict[str, str]
    raw: bytes


class Sender:
    def __init__(self, address: str, *, tenant: str = "anonymous", queue_size: int = 5000, max_batch: int = 200,
                 concurrency: int = 4, timeout_s: float = 30.0, max_backoff_s: float = 30.0):
        self._address, self._tenant = address, tenant
        self._queue: deque[Outgoing] = deque()
        self._queue_size, self._max_batch, self._concurrency = queue_size, max_batch, concurrency
        self._timeout_s, self._max_backoff_s = timeout_s, max_backoff_s
        self._ready = asyncio.Event()
        self._channel: grpc.aio.Channel | None = None
        self._inflight = 0

    def submit(self, labels: dict[str, str], raw: bytes) -> None:
        if len(self._queue) >= self._queue_size:
            self._queue.popleft()
            DROPPED.labels("queue_full").inc()
            self._log_drop()
        self._queue.append(Outgoing(labels, raw))
        QUEUED.set(len(self._queue))
        self._ready.set()

    def pending(self) -> int:
        """Profiles not yet acknowledged: queued, or in the batch being sent."""
        return len(self._queue) + self._inflight

    def _log_rate_limited(self, exc: grpc.aio.AioRpcError, wait_s: float) -> None:
        _rate_log.log(logging.WARNING, self._address, "the ingester at %s rate-limits this tenant: %s; "
                      "waiting %.1f s before sending again (profiles queue meanwhile)", self._address,
                      exc.details(), wait_s)

    def _log_drop(self) -> None:
        _rate_log.log(logging.WARNING, f"{self._address} queue full", "the ingester at %s is not keeping up: "
                      "dropped the oldest queued profile (the queue holds %d)", self._address, self._queue_size)

    async def run(self) -> None:
        """Send until cancelled, with several pushes in flight: each waits about a flush interval for
        durability, so one at a time would cap throughput at one batch per interval."""
        self._channel = grpc_channel(self._address, options=[
            ("grpc.max_send_message_length", 64 << 20), ("grpc.lb_policy_name", "round_robin")])
        stub = ingest_pb2_grpc.IngestServiceStub(self._channel)
        try:
            await asyncio.gather(*(self._worker(stub) for _ in range(self._concurrency)))
        finally:
            await self._channel.close()

    async def _worker(self, stub) -> None:
        while True:
            await self._ready.wait()
            await self._send_batch(stub)

    async def flush(self, deadline_s: float) -> None:
        """Wait up to deadline_s for the queue to drain (at shutdown)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline_s
        while self.pending() and loop.time() < end:
            await asyncio.sleep(0.05)

    async def _send_batch(self, stub) -> None:
        batch = [self._queue.popleft() for _ in range(min(self._max_batch, len(self._queue)))]
        QUEUED.set(len(self._queue))
        if not self._queue:
            self._ready.clear()
        if not batch:
            return
        self._inflight += len(batch)
        try:
            await self._push(stub, batch)
        finally:
            self._inflight -= len(batch)

    async def _push(self, stub, batch: list[Outgoing]) -> None:
        request = ingest_pb2.PushRequest(series=[_series(o) for o in batch])
        backoff = 0.5
        while True:
            try:
                await stub.Push(request, timeout=self._timeout_s, metadata=((HEADER, self._tenant),))
                SENT.inc(len(batch))
                return
            except grpc.aio.AioRpcError as exc:
                wait_s = _retry_after(exc)
                if wait_s is not None:  # over the tenant's ingestion rate: the same batch passes later
                    RATE_LIMITED.inc(len(batch))
                    self._log_rate_limited(exc, wait_s)
                    await asyncio.sleep(min(wait_s, self._max_backoff_s))
                    continue
                if exc.code() not in _RETRYABLE:
                    DROPPED.labels("refused").inc(len(batch))
                    log.warning("the ingester refused %d profiles: %s", len(batch), exc.details())
                    return
                log.info("sending %d profiles to %s failed (%s), retrying in %.1f s", len(batch), self._address,
                         describe_failure(exc), backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff_s)


def _retry_after(exc: grpc.aio.AioRpcError) -> float | None:
    """The seconds a rate-limited push must wait, from the ingester's trailing metadata; None otherwise."""
    if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return None
    for key, value in exc.trailing_metadata() or ():
        if key == RETRY_AFTER:
            try:
                return max(0.0, float(value))
            except ValueError:
                return None
    return None


def _series(o: Outgoing) -> ingest_pb2.RawProfileSeries:
    return ingest_pb2.RawProfileSeries(
        labels=label_pairs(o.labels, types_pb2.LabelPair),
        samples=[ingest_pb2.RawSample(raw_profile=o.raw)])
