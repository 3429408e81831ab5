"""Group pushes into blocks: one open batch per tenant, flushed every interval or when it is big.

A push waits until the batch holding its profiles is durable, so an acknowledgement means the data
survives a crash. A failed flush fails every push of that batch, which the clients retry. Each batch
sets its own timer when it opens, so an ingester with nothing to flush never wakes up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.storage.block import BlockEntry

log = logging.getLogger(__name__)
_failures = RateLimitedLog(log)  # while a backend is down every flush fails the same way

FlushFn = Callable[[str, Sequence[BlockEntry]], object]


@dataclass
class _Batch:
    tenant: str
    entries: list[BlockEntry] = field(default_factory=list)
    nbytes: int = 0
    done: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    timer: asyncio.TimerHandle | None = None


class Batcher:
    def __init__(self, flush: FlushFn, interval_s: float, max_bytes: int, max_concurrent: int):
        self._flush_fn = flush
        self._interval = interval_s
        self._max_bytes = max_bytes
        self._open: dict[str, _Batch] = {}
        self._slots = asyncio.Semaphore(max_concurrent)
        self._inflight: set[asyncio.Task] = set()

    def start(self) -> None:
        """Nothing runs until the first push: each batch sets its own flush timer."""

    async def submit(self, tenant: str, entries: Sequence[BlockEntry], nbytes: int) -> None:
        """Add a push's profiles; returns once they are durable, raises if the flush failed."""
        batch = self._open.get(tenant)
        if batch is None:
            batch = self._open[tenant] = _Batch(tenant)
            batch.timer = asyncio.get_running_loop().call_later(self._interval, self._seal_if_open, batch)
        batch.entries.extend(entries)
        batch.nbytes += nbytes
        done = batch.done
        if batch.nbytes >= self._max_bytes:
            self._seal(tenant)
        await asyncio.shield(done)

    def pending(self) -> int:
        return sum(len(b.entries) for b in self._open.values())

    async def close(self) -> None:
        """Flush everything still open and wait for every flush in flight."""
        for tenant in list(self._open):
            self._seal(tenant)
        await asyncio.gather(*self._inflight, return_exceptions=True)

    def _seal_if_open(self, batch: _Batch) -> None:
        """The batch's timer: seal it unless it was sealed already (it filled up) and replaced."""
        if self._open.get(batch.tenant) is batch:
            self._seal(batch.tenant)

    def _seal(self, tenant: str) -> None:
        batch = self._open.pop(tenant)
        if batch.timer is not None:
            batch.timer.cancel()
        task = asyncio.create_task(self._flush(batch), name=f"flush-{tenant}")
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    async def _flush(self, batch: _Batch) -> None:
        async with self._slots:
            try:
                await asyncio.to_thread(self._flush_fn, batch.tenant, batch.entries)
            except Exception as exc:  # noqa: BLE001 - handed to every waiting push
                _failures.log(logging.WARNING, type(exc).__name__, "flush of %d profiles for tenant %s failed: %s",
                              len(batch.entries), batch.tenant, exc)
                batch.done.set_exception(exc)
                batch.done.exception()  # mark retrieved: pushes may all have gone away
            else:
                batch.done.set_result(None)
