"""Background work that runs every N seconds for as long as a process serves: compaction rounds, the
orphan sweep, giving freed memory back, and whatever comes next (incident checks, rule evaluation).

    self._tasks.append(asyncio.create_task(every(60, self.run_once, "compaction round", log)))

`every` waits `interval_s`, runs the job on a worker thread (a job does I/O or heavy work and must not
hold the event loop) and repeats until the task is cancelled. A job that fails is logged and the next
round starts over: one bad round never ends the loop. Repeated failures of the same kind are logged
once per `ratelimitedlog` interval, with a count of the ones held back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from flamewatch.ratelimitedlog import RateLimitedLog


async def every(interval_s: float, job: Callable[[], object], what: str, logger: logging.Logger) -> None:
    """Run `job()` every `interval_s` seconds (first after one interval) until cancelled; `what` names
    it in the log line of a failed round ("<what> failed: <error>")."""
    failures = RateLimitedLog(logger)
    while True:
        await asyncio.sleep(interval_s)
        try:
            await asyncio.to_thread(job)
        except Exception as exc:  # noqa: BLE001 - logged; the next round starts over
            failures.log(logging.WARNING, type(exc).__name__, "%s failed: %s", what, exc)
