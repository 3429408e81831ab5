"""OOM kills and restarts in Kubernetes: one pod watch per distinct pod discovery config of the jobs.

Every job with `kubernetes_sd_configs` of role pod and `incidents: {enabled: true}` (the default) has its
pods watched (`podwatch.py`) for containers that ended (`kills.py`): OOM kills, and non-zero exits that
were followed by a restart. Jobs sharing one discovery config (the Helm chart makes one job per profile
type over the same pods) share one watch; the `service_name` of a container is the one the first of
those jobs' relabeling gives its targets, else `<namespace>/<container>`. The events go to `record`
(the collector's `EventSender`). The watches also know each container's memory limit, which the heap
scrape pace asks for (`memory_limit`).

`apply` is called with the jobs at start and on every reload: it starts watches for new configs, stops
those no job needs any more, and keeps the rest running. The Kubernetes client is imported by the first
watch, so a collector without pod discovery never imports it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flamewatch.collector.config import KubernetesSDConfig, ScrapeConfig
from flamewatch.collector.targets import scrape_targets
from flamewatch.events.model import Event

log = logging.getLogger(__name__)

CONTAINER = "__meta_kubernetes_pod_container_name"
NAMESPACE, POD = "__meta_kubernetes_namespace", "__meta_kubernetes_pod_name"


@dataclass
class _Watching:
    watch: Any  # podwatch.PodWatch
    task: asyncio.Task
    jobs: list[ScrapeConfig]  # the jobs using its config, replaced in place on reload


class OOMWatch:
    def __init__(self, record: Callable[[list[Event]], None]):
        self._record = record
        self._watching: dict[KubernetesSDConfig, _Watching] = {}

    def apply(self, jobs: dict[str, ScrapeConfig]) -> None:
        wanted: dict[KubernetesSDConfig, list[ScrapeConfig]] = {}
        for job in jobs.values():
            for sd in job.watches_pods():
                wanted.setdefault(sd, []).append(job)
        for sd in set(self._watching) - set(wanted):
            self._watching.pop(sd).task.cancel()
        for sd, users in wanted.items():
            if sd in self._watching:
                self._watching[sd].jobs[:] = users
            else:
                self._start(sd, users)

    def _start(self, sd: KubernetesSDConfig, jobs: list[ScrapeConfig]) -> None:
        from flamewatch.collector.podwatch import PodWatch  # imports the Kubernetes client

        name = f"{jobs[0].job_name}/incidents"
        watch = PodWatch(name, sd, lambda pod: service_names(jobs, pod), self._record)
        self._watching[sd] = _Watching(watch, asyncio.create_task(watch.run(), name=f"pod watch {name}"), jobs)
        log.info("job %s: watching its pods for OOM kills and restarts", jobs[0].job_name)

    def memory_limit(self, discovered: dict[str, str]) -> int:
        """The memory limit of the container a target's discovered labels name (0: none or not known)."""
        where = discovered.get(NAMESPACE), discovered.get(POD), discovered.get(CONTAINER)
        if not all(where) or not self._watching:
            return 0
        return max((w.watch.memory_limit(*where) for w in self._watching.values()), default=0)

    async def close(self) -> None:
        tasks = [w.task for w in self._watching.values()]
        self._watching.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def service_names(jobs: list[ScrapeConfig], pod: Any) -> dict[str, str]:
    """Container -> the `service_name` the first of `jobs` whose relabeling keeps a target of it gives."""
    from flamewatch.collector.discovery.kubernetes_labels import pod_group

    group = pod_group(pod)
    out: dict[str, str] = {}
    for job in jobs:
        for target in scrape_targets(job, [group]):
            container = target.discovered.get(CONTAINER)
            if container and container not in out:
                out[container] = target.labels["service_name"]
    return out
