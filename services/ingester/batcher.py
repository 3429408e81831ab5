"""Group pushes into blocks: one open batch per tenant, flushed every interval or when it is big.

A push waits until the batch holding its profiles is durable, so an acknowledgement means the data
survives a crash. Each batch sets its own timer when it opens, so an ingester with nothing to flush
never wakes up.

Each push has its own future, so one push's profiles can fail without failing its neighbours'. When a
backend is unavailable the whole flush fails, and every push of it with it (the clients retry). When a
flush fails for anything else, something in one push's data was refused (validation should have caught
it, but a tenant's other clients must not pay for what it missed): the batch is written again in
halves, down to single pushes, so the push that cannot be written gets the error alone and the others
are written and acknowledged. One bad push among n costs about 2·log2(n) extra writes; the halves that
failed leave only orphan objects, which the sweeper removes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.storage.blockwrite import BlockEntry
from flamewatch.storage.errors import StorageUnavailable

log = logging.getLogger(__name__)
_failures = RateLimitedLog(log)  # while a backend is down every flush fails the same way

FlushFn = Callable[[str, Sequence[BlockEntry]], object]


@dataclass
class _Push:
    entries: Sequence[BlockEntry]
    done: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    def fail(self, exc: BaseException) -> None:
        self.done.set_exception(exc)
        self.done.exception()  # mark retrieved: the client may have gone away


@dataclass
class _Batch:
    tenant: str
    pushes: list[_Push] = field(default_factory=list)
    nbytes: int = 0
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
        push = _Push(entries)
        batch.pushes.append(push)
        batch.nbytes += nbytes
        if batch.nbytes >= self._max_bytes:
            self._seal(tenant)
        await asyncio.shield(push.done)

    def pending(self) -> int:
        return sum(len(p.entries) for b in self._open.values() for p in b.pushes)

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
            await self._write(batch.tenant, batch.pushes)

    async def _write(self, tenant: str, pushes: list[_Push]) -> None:
        entries = [e for p in pushes for e in p.entries]
        try:
            await asyncio.to_thread(self._flush_fn, tenant, entries)
        except StorageUnavailable as exc:  # the backend, not the data: every push fails alike and is retried
            _failures.log(logging.WARNING, type(exc).__name__, "flush of %d profiles for tenant %s failed: %s",
                          len(entries), tenant, exc)
            for push in pushes:
                push.fail(exc)
        except Exception as exc:  # noqa: BLE001 - some push's data was refused: find it by halves
            if len(pushes) == 1:
                log.error("tenant %s: a push of %d profiles cannot be written, refused alone: %r", tenant,
                          len(entries), exc)
                pushes[0].fail(exc)
                return
            log.warning("tenant %s: flush of %d pushes failed (%s); writing them again in halves", tenant,
                        len(pushes), exc)
            middle = len(pushes) // 2
            await self._write(tenant, pushes[:middle])
            await self._write(tenant, pushes[middle:])
        else:
            for push in pushes:
                push.done.set_result(None)
