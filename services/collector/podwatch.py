"""Watch the pods of one `kubernetes_sd_configs` entry for container ends and memory limits.

A `PodWatch` runs the discovery's `Informer` for pods (`discovery/kubernetes_watch.py`: list, watch
from the list's version, list again on 410 Gone, every `resync_s` and after any failure) over the same
API server, credentials, namespaces and selectors as the entry, and on the event loop turns every pod
it is told of (added, changed, re-listed, deleted) into events with `kills.events`. A key it has handed
on is not handed on again while the pod lives; what a re-list after a collector restart finds again is
left to the events store, which records each key once.

It also keeps each container's memory limit (`resources.limits.memory`) for the heap scrape pace, and
the `service_name` each container's targets last had, so the kill of a pod that relabeling no longer
keeps (a Failed pod) is still labelled as its profiles were.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from flamewatch.collector import kills
from flamewatch.collector.config import KubernetesSDConfig
from flamewatch.collector.discovery.kubernetes import RESYNC_S, informers
from flamewatch.collector.discovery.kubernetes_labels import object_key
from flamewatch.collector.discovery.kubernetes_watch import Change, Replace, poster
from flamewatch.events.model import DEFAULT_LIMITS, Event

Record = Callable[[list[Event]], None]
ServiceNames = Callable[[Any], dict[str, str]]  # pod -> container -> the service_name its targets carry
Key = tuple[str, str]  # (namespace, name)
TOO_OLD_NS = DEFAULT_LIMITS.reject_older_than_ns - 3600 * 10**9  # an hour inside: clocks disagree


class PodWatch:
    def __init__(self, name: str, config: KubernetesSDConfig, service_names: ServiceNames, record: Record, *,
                 resync_s: float = RESYNC_S, backoff: tuple[float, float] | None = None):
        self.name, self.config = name, config
        self._service_names, self._record = service_names, record
        self._options = {"resync_s": resync_s} | ({"backoff": backoff} if backoff else {})
        self._uids: dict[Key, str] = {}  # pod -> its uid
        self._sent: dict[str, set[str]] = defaultdict(set)  # pod uid -> event keys handed on
        self._names: dict[str, dict[str, str]] = defaultdict(dict)  # pod uid -> container -> service_name
        self._limits: dict[Key, dict[str, int]] = {}  # pod -> container -> bytes

    async def run(self) -> None:
        queue: asyncio.Queue[Replace | Change] = asyncio.Queue()
        stop = threading.Event()
        for informer in informers(self.name, self.config, ("pod",), poster(asyncio.get_running_loop(), queue, stop),
                                  stop, **self._options):
            informer.start()
        try:
            while True:
                self.apply(await queue.get())
        finally:
            stop.set()

    def apply(self, event: Replace | Change) -> None:
        if isinstance(event, Replace):
            scope = event.informer.namespace
            listed = {object_key(pod) for pod in event.objects}
            for key in [k for k in self._uids if (not scope or k[0] == scope) and k not in listed]:
                self._forget(key)
            for pod in event.objects:
                self._seen(pod)
            return
        self._seen(event.obj)
        if event.deleted:
            self._forget(object_key(event.obj))

    def _seen(self, pod: Any) -> None:
        key, uid = object_key(pod), pod.metadata.uid
        if self._uids.get(key, uid) != uid:  # the same name, a new pod
            self._forget(key)
        self._uids[key] = uid
        self._limits[key] = kills.memory_limits(pod)
        names = self._names[uid]
        names.update(self._service_names(pod))
        now = time.time_ns()
        found = kills.events(pod, names.get, now)
        # An end older than the events store accepts (a long-lived pod's kill of weeks ago) would only be
        # refused at every collector start.
        new = [e for e in found if e.key not in self._sent[uid] and now - e.time_ns <= TOO_OLD_NS]
        if new:
            self._sent[uid].update(e.key for e in new)
            self._record(new)

    def _forget(self, key: Key) -> None:
        uid = self._uids.pop(key, None)
        self._sent.pop(uid or "", None)
        self._names.pop(uid or "", None)
        self._limits.pop(key, None)

    def memory_limit(self, namespace: str, pod: str, container: str) -> int:
        """The container's memory limit in bytes; 0 when it has none or the pod is not known."""
        return self._limits.get((namespace, pod), {}).get(container, 0)
