"""`periodic.every`: the one loop behind every background job."""

import asyncio
import logging
import threading

import pytest

from flamewatch.periodic import every


def test_a_failed_round_is_logged_and_the_next_runs(caplog: pytest.LogCaptureFixture):
    rounds, threads = [], set()

    def job() -> None:
        threads.add(threading.get_ident())
        rounds.append(1)
        if len(rounds) <= 2:
            raise OSError("the disk is full")

    async def run() -> None:
        task = asyncio.create_task(every(0.01, job, "sweeping orphaned blocks", logging.getLogger("test")))
        while len(rounds) < 5:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with caplog.at_level(logging.WARNING):
        asyncio.run(run())
    assert threading.get_ident() not in threads  # jobs run off the event loop
    failed = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert failed == ["sweeping orphaned blocks failed: the disk is full"]  # the second within the interval is held
