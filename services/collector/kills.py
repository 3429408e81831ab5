"""Which container terminations in a Kubernetes pod's status are events (`flamewatch.events`), as pure
functions of the client's pod objects.

The kubelet writes a container's end in its status twice over: first as `state.terminated` (the
container has ended, `restartCount` not yet raised), then, once it is started again, as
`lastState.terminated` with `restartCount` one higher. Both views of one end get the same key,
`kubernetes/<pod uid>/<container>/<run>`, where `run` is the `restartCount` while the run that ended was
running (state: `restartCount`; last state: `restartCount - 1`). So however often a pod is seen
(status updates, a re-list after a reconnection, a collector restart, two collectors), one end is one
key, and the events store records a key once.

- reason `OOMKilled`, in either view: an `oom_kill`, whether or not the container is restarted;
- any other end with a non-zero exit code, once it was followed by a restart (`lastState`): a `restart`.
  A container that ended with an error and is not restarted (restartPolicy Never) is no restart.

`restart_count` is the container's restart count with the restart this end causes counted, the same in
both views (the kubelet's `restartCount` next to `lastState`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from flamewatch.events.model import OOM_KILL, RESTART, Event

OOM_KILLED = "OOMKilled"
INT64_MAX = 2**63 - 1
MAX_MESSAGE = 1000  # characters of the kubelet's message kept; the events store takes up to 4096 bytes

ServiceName = Callable[[str], str | None]  # container name -> the service_name its profiles carry, if known


def events(pod: Any, service_name: ServiceName, now_ns: int) -> list[Event]:
    """The events a pod's status shows, one per container end (see the module docstring)."""
    limits = memory_limits(pod)
    out = []
    for status in _statuses(pod):
        for terminated, run in _ends(status):
            kind = _kind(terminated, restarted=run < (status.restart_count or 0))
            if kind:
                out.append(_event(pod, status.name, kind, terminated, run, limits.get(status.name, 0),
                                  service_name, now_ns))
    return out


def _statuses(pod: Any) -> list[Any]:
    status = pod.status
    if status is None:
        return []
    return [*(status.init_container_statuses or ()), *(status.container_statuses or ())]


def _ends(status: Any) -> list[tuple[Any, int]]:
    """(terminated state, run) for the container's current and last state, where terminated."""
    count = status.restart_count or 0
    found = []
    if status.state is not None and status.state.terminated is not None:
        found.append((status.state.terminated, count))
    if status.last_state is not None and status.last_state.terminated is not None and count > 0:
        found.append((status.last_state.terminated, count - 1))
    return found


def _kind(terminated: Any, restarted: bool) -> str | None:
    if terminated.reason == OOM_KILLED:
        return OOM_KILL
    if terminated.exit_code and restarted:
        return RESTART
    return None


def _event(pod: Any, container: str, kind: str, terminated: Any, run: int, limit: int, service_name: ServiceName,
           now_ns: int) -> Event:
    meta = pod.metadata
    labels = {"namespace": meta.namespace, "pod": meta.name, "container": container,
              "node": (pod.spec.node_name if pod.spec else "") or "",
              "service_name": service_name(container) or f"{meta.namespace}/{container}"}
    finished = _ns(terminated.finished_at) or now_ns
    started = _ns(terminated.started_at)
    message = f"{terminated.reason or 'terminated'} (exit code {terminated.exit_code})"
    if terminated.message:
        message += f": {terminated.message[:MAX_MESSAGE]}"
    return Event(kind, finished, {k: v for k, v in labels.items() if v}, terminated.exit_code or 0, limit, run + 1,
                 started if 0 < started <= finished else 0, message, f"kubernetes/{meta.uid}/{container}/{run}")


def _ns(when: datetime | None) -> int:
    if when is None:
        return 0
    return int(when.timestamp()) * 10**9 + when.microsecond * 1000


def memory_limits(pod: Any) -> dict[str, int]:
    """Container name -> `resources.limits.memory` in bytes, for the containers that have one."""
    spec = pod.spec
    if spec is None:
        return {}
    out = {}
    for container in [*(spec.init_containers or ()), *(spec.containers or ())]:
        limits = container.resources.limits if container.resources is not None else None
        limit = memory_bytes((limits or {}).get("memory"))
        if limit:
            out[container.name] = limit
    return out


_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18, "m": Decimal("0.001"), "": 1}
_QUANTITY = re.compile(r"([+-]?[0-9.eE+-]+?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?")


def memory_bytes(quantity: str | None) -> int:
    """A Kubernetes quantity (`256Mi`, `1G`, `1.5Gi`, `500M`, `1e9`, `134217728`) in whole bytes, rounded up
    as the kubelet rounds a memory limit; 0 for none or one that does not parse (the API server has
    already validated what it stores, so this is for safety, not for errors a person must see)."""
    match = _QUANTITY.fullmatch((quantity or "").strip())
    if match is None:
        return 0
    try:
        value = Decimal(match.group(1)) * _SUFFIXES[match.group(2) or ""]  # exact, where a float rounds
    except InvalidOperation:
        return 0
    return min(math.ceil(value), INT64_MAX) if value.is_finite() and value > 0 else 0
