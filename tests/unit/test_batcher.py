"""The ingester's batcher: a batch flushes one interval after it opens, or at once when it is big, and an
idle batcher has nothing scheduled."""

import asyncio
import time

import pytest

from flamewatch.ingester.batcher import Batcher
from flamewatch.storage.errors import StorageUnavailable


class Flushes:
    def __init__(self, fail: bool = False) -> None:
        self.batches: list[tuple[str, list[str], float]] = []
        self.fail = fail

    def __call__(self, tenant: str, entries) -> None:
        self.batches.append((tenant, list(entries), time.monotonic()))
        if self.fail:
            raise OSError("disk full")


def test_an_idle_batcher_schedules_nothing():
    async def main() -> set:
        batcher = Batcher(Flushes(), interval_s=0.2, max_bytes=1 << 20, max_concurrent=2)
        batcher.start()
        await asyncio.sleep(0.05)
        others = asyncio.all_tasks() - {asyncio.current_task()}
        await batcher.close()
        return others

    assert asyncio.run(main()) == set(), "no task runs (and wakes up) while there is nothing to flush"


def test_a_batch_flushes_one_interval_after_it_opens():
    flushes = Flushes()

    async def main() -> float:
        batcher = Batcher(flushes, interval_s=0.2, max_bytes=1 << 20, max_concurrent=2)
        batcher.start()
        opened = time.monotonic()
        await asyncio.gather(batcher.submit("t", ["a"], 10), batcher.submit("t", ["b"], 10),
                             batcher.submit("u", ["c"], 10))
        await batcher.close()
        return opened

    opened = asyncio.run(main())
    assert sorted((tenant, entries) for tenant, entries, _ in flushes.batches) == [("t", ["a", "b"]), ("u", ["c"])]
    assert all(0.15 <= at - opened < 5 for _, _, at in flushes.batches)


def test_a_big_batch_flushes_at_once_and_the_next_one_gets_its_own_interval():
    flushes = Flushes()

    async def main() -> float:
        batcher = Batcher(flushes, interval_s=0.3, max_bytes=100, max_concurrent=2)
        batcher.start()
        started = time.monotonic()
        await batcher.submit("t", ["big"], 100)  # sealed by size, not by its timer
        assert time.monotonic() - started < 0.25
        await asyncio.sleep(0.2)  # the first batch's timer must not seal the second one early
        second_opened = time.monotonic()
        await batcher.submit("t", ["small"], 1)
        await batcher.close()
        return second_opened

    second_opened = asyncio.run(main())
    assert [entries for _, entries, _ in flushes.batches] == [["big"], ["small"]]
    assert flushes.batches[1][2] - second_opened >= 0.25


def test_a_failed_flush_fails_its_pushes():
    async def main() -> None:
        batcher = Batcher(Flushes(fail=True), interval_s=0.05, max_bytes=1 << 20, max_concurrent=1)
        batcher.start()
        try:
            with pytest.raises(OSError, match="disk full"):
                await batcher.submit("t", ["a"], 1)
        finally:
            await batcher.close()

    asyncio.run(main())


class RefusesOne:
    """A store that refuses any write holding the entry "bad", as Postgres refuses a value it cannot store."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.writes = 0

    def __call__(self, tenant: str, entries) -> None:
        self.writes += 1
        if "bad" in entries:
            raise RuntimeError('invalid byte sequence for encoding "UTF8": 0x00')
        self.written += entries


def test_a_push_that_cannot_be_written_is_refused_alone_and_its_neighbours_are_written():
    store = RefusesOne()

    async def main() -> list:
        batcher = Batcher(store, interval_s=0.05, max_bytes=1 << 20, max_concurrent=1)
        pushes = [batcher.submit("t", [f"good{i}a", f"good{i}b"], 1) for i in range(7)]
        pushes.insert(3, batcher.submit("t", ["bad", "neighbour-in-the-same-push"], 1))
        results = await asyncio.gather(*pushes, return_exceptions=True)
        await batcher.close()
        return results

    results = asyncio.run(main())
    assert [r is None for r in results] == [True, True, True, False, True, True, True, True]
    assert str(results[3]) == 'invalid byte sequence for encoding "UTF8": 0x00'
    assert sorted(store.written) == sorted(f"good{i}{p}" for i in range(7) for p in "ab")
    assert store.writes <= 1 + 2 * 3  # the whole batch, then halves down to the one push (8 pushes: 3 levels)


def test_an_unavailable_backend_fails_every_push_of_the_flush_at_once():
    calls = []

    def down(tenant, entries):
        calls.append(list(entries))
        raise StorageUnavailable("postgres unavailable: connection refused")

    async def main() -> list:
        batcher = Batcher(down, interval_s=0.05, max_bytes=1 << 20, max_concurrent=1)
        results = await asyncio.gather(*(batcher.submit("t", [str(i)], 1) for i in range(4)), return_exceptions=True)
        await batcher.close()
        return results

    results = asyncio.run(main())
    assert [type(r) for r in results] == [StorageUnavailable] * 4
    assert calls == [["0", "1", "2", "3"]]  # not retried piecemeal: the clients retry once it is back
