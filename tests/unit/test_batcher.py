"""The ingester's batcher: a batch flushes one interval after it opens, or at once when it is big, and an
idle batcher has nothing scheduled."""

import asyncio
import time

import pytest

from flamewatch.ingester.batcher import Batcher


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
