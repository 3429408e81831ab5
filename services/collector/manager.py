"""Keep one scrape loop running per discovered profile endpoint, and report on them.

Discovery calls `sync(job, groups)`; the manager works out the job's scrape targets and starts loops
for new ones and stops loops whose target went away. A loop whose target is unchanged keeps running,
with its schedule, health and delta base. Scrapes share one bound on how many run at once.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import httpx

from flamewatch.collector.clients import client_for
from flamewatch.collector.config import ScrapeConfig
from flamewatch.collector.scrape import Deliver, MemoryLimit, ScrapeHealth, ScrapeLoop, ScrapeTarget
from flamewatch.collector.targetgroup import TargetGroup
from flamewatch.collector.targets import scrape_targets

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TargetStatus:
    target: ScrapeTarget
    health: ScrapeHealth


@dataclass
class _Running:
    loop: ScrapeLoop
    task: asyncio.Task


class ScrapeManager:
    def __init__(self, deliver: Deliver, max_concurrent_scrapes: int = 256, memory_limit: MemoryLimit | None = None):
        self._deliver, self._memory_limit = deliver, memory_limit
        self._limit = asyncio.Semaphore(max_concurrent_scrapes)
        self._jobs: dict[str, ScrapeConfig] = {}
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._loops: dict[str, dict[str, _Running]] = {}
        self._groups: dict[str, list[TargetGroup]] = {}

    def apply(self, jobs: dict[str, ScrapeConfig]) -> None:
        """New job configurations (at start and on reload): loops of removed or changed jobs stop, and a
        changed job's targets restart at once from the groups last discovered for it."""
        changed = [name for name, job in jobs.items() if self._jobs.get(name) != job]
        for name in set(self._jobs) - set(jobs):
            self._stop_job(name)
            self._groups.pop(name, None)
        self._jobs = dict(jobs)
        for name in changed:
            self._stop_job(name)
            self._clients[name] = client_for(jobs[name])
            self.sync(name, self._groups.get(name, []))

    def sync(self, job_name: str, groups: list[TargetGroup]) -> None:
        job = self._jobs.get(job_name)
        self._groups[job_name] = groups
        wanted = {t.key: t for t in scrape_targets(job, groups)} if job else {}
        running = self._loops.setdefault(job_name, {})
        for key in set(running) - set(wanted):
            running.pop(key).task.cancel()
        for key, target in wanted.items():
            if key not in running or running[key].loop.target != target:
                if key in running:
                    running[key].task.cancel()
                loop = ScrapeLoop(target, self._clients[job_name], self._deliver, limit=self._limit,
                                  memory_limit=self._memory_limit)
                running[key] = _Running(loop, asyncio.create_task(loop.run(), name=f"scrape {key}"))
        log.info("job %s: %d profile endpoints to scrape", job_name, len(running))

    def status(self) -> list[TargetStatus]:
        return [TargetStatus(r.loop.target, r.loop.health) for job in self._loops.values() for r in job.values()]

    async def close(self) -> None:
        for name in list(self._loops):
            self._stop_job(name)
        for client in self._clients.values():
            await client.aclose()

    def _stop_job(self, name: str) -> None:
        for running in self._loops.pop(name, {}).values():
            running.task.cancel()
