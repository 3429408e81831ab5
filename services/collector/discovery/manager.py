"""Runs the discoverers of every job and hands each job's current target groups to one `sync` callback.

The scrape manager is that callback; only the composition root connects the two. Updates are debounced:
a change waits `debounce_s` so that a burst (startup, a reload, a file rewritten in pieces) becomes one
`sync(job, groups)` per changed job, and syncs are at least `debounce_s` apart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flamewatch.collector.discovery import Discoverer
from flamewatch.collector.discovery.registry import discoverers_for, sd_configs
from flamewatch.collector.targetgroup import TargetGroup

__all__ = ["DiscoveryManager", "Sync"]

logger = logging.getLogger(__name__)

Sync = Callable[[str, list[TargetGroup]], None]
"""Receives every current group of one job; an empty list means the job has no targets (or is gone)."""


@dataclass
class _Job:
    configs: list[Any]
    discoverers: list[Discoverer]
    groups: list[list[TargetGroup]]  # the latest groups of each discoverer, by position
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class DiscoveryManager:
    def __init__(self, sync: Sync, *, debounce_s: float = 0.1,
                 build: Callable[[str, Any], list[Discoverer]] = discoverers_for):
        self._sync = sync
        self._debounce_s = debounce_s
        self._build = build
        self._jobs: dict[str, _Job] = {}
        self._dirty: set[str] = set()
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    def apply(self, jobs: Mapping[str, Any]) -> None:
        """Make `jobs` (job name -> scrape config) the running set; call from inside the event loop.

        Jobs whose discovery configs are unchanged keep running untouched; changed jobs restart their
        discoverers and removed jobs are synced with no groups. Every discoverer is built before anything
        is stopped, so a bad config (UnknownDiscoveryConfig) leaves the running set as it was.
        """
        changed = {name: self._new_job(name, config) for name, config in jobs.items()
                   if name not in self._jobs or self._jobs[name].configs != sd_configs(config)}
        for name in [name for name in self._jobs if name not in jobs or name in changed]:
            self._stop(self._jobs.pop(name))
            self._mark(name)
        for name, job in changed.items():
            self._jobs[name] = job
            self._start(name, job)
            self._mark(name)

    async def run(self) -> None:
        """Send debounced updates until cancelled; on the way out stop every discoverer."""
        try:
            while True:
                await self._changed.wait()
                await asyncio.sleep(self._debounce_s)
                self._changed.clear()
                self._send()
        finally:
            await self._stop_all()

    def groups(self, job_name: str) -> list[TargetGroup]:
        """Every current group of one job, as the next sync will send it."""
        job = self._jobs.get(job_name)
        return [group for groups in job.groups for group in groups] if job is not None else []

    def _new_job(self, name: str, config: Any) -> _Job:
        discoverers = self._build(name, config)
        return _Job(sd_configs(config), discoverers, [[] for _ in discoverers])

    def _start(self, name: str, job: _Job) -> None:
        for index in range(len(job.discoverers)):
            task = asyncio.create_task(self._run_one(name, job, index), name=f"discovery {name}[{index}]")
            job.tasks.append(task)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run_one(self, name: str, job: _Job, index: int) -> None:
        def up(groups: list[TargetGroup]) -> None:
            job.groups[index] = list(groups)
            if self._jobs.get(name) is job:
                self._mark(name)

        try:
            await job.discoverers[index].run(up)
        except Exception:  # one broken discoverer must not stop the others; its last groups stay
            logger.exception("job %s: discoverer %r failed", name, job.discoverers[index])

    def _stop(self, job: _Job) -> None:
        for task in job.tasks:
            task.cancel()

    async def _stop_all(self) -> None:
        for job in self._jobs.values():
            self._stop(job)
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _mark(self, name: str) -> None:
        self._dirty.add(name)
        self._changed.set()

    def _send(self) -> None:
        dirty, self._dirty = sorted(self._dirty), set()
        for name in dirty:
            try:
                self._sync(name, self.groups(name))
            except Exception:  # a failing consumer must not stop discovery
                logger.exception("job %s: sync of discovered targets failed", name)
