"""Container ends in a pod's status as events (`kills.py`), memory quantities, and the pod watch's
bookkeeping: one end is one key, whichever view of it is seen and however often (`podwatch.py`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from kubernetes import client as k8s

from flamewatch.collector.discovery.kubernetes_watch import Change, Replace
from flamewatch.collector.kills import events, memory_bytes, memory_limits
from flamewatch.collector.podwatch import PodWatch
from flamewatch.events.model import Event

FINISHED = datetime.now(UTC).replace(microsecond=500000) - timedelta(minutes=5)  # recent: the watch sends it
STARTED = FINISHED.replace(microsecond=0) - timedelta(minutes=3)
NOW = 1_800_000_000 * 10**9


@pytest.mark.parametrize(("quantity", "expected"), [
    ("256Mi", 256 << 20), ("1G", 10**9), ("1.5Gi", 3 << 29), ("500M", 500 * 10**6), ("134217728", 134217728),
    ("1Ki", 1024), ("1e9", 10**9), ("1E3", 1000), ("2E", 2 * 10**18), ("100m", 1), ("0.5k", 500),
    (None, 0), ("", 0), ("abc", 0), ("12Q", 0), ("-1Mi", 0), ("NaN", 0), ("99999999999999999999", 2**63 - 1),
])
def test_memory_quantities(quantity, expected):
    assert memory_bytes(quantity) == expected


def terminated(reason: str, code: int, message: str = "") -> k8s.V1ContainerState:
    return k8s.V1ContainerState(terminated=k8s.V1ContainerStateTerminated(
        reason=reason, exit_code=code, started_at=STARTED, finished_at=FINISHED, message=message or None))


RUNNING = k8s.V1ContainerState(running=k8s.V1ContainerStateRunning(started_at=FINISHED))
WAITING = k8s.V1ContainerState(waiting=k8s.V1ContainerStateWaiting(reason="CrashLoopBackOff"))


def pod(*statuses: k8s.V1ContainerStatus, uid: str = "uid-1", limit: str | None = "256Mi") -> k8s.V1Pod:
    resources = k8s.V1ResourceRequirements(limits={"memory": limit} if limit else None)
    containers = [k8s.V1Container(name=s.name, image="x", resources=resources) for s in statuses]
    return k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="api-7f9", namespace="shop", uid=uid),
                     spec=k8s.V1PodSpec(containers=containers, node_name="node-3"),
                     status=k8s.V1PodStatus(container_statuses=list(statuses)))


def status(state=RUNNING, last=None, restarts: int = 0, name: str = "api") -> k8s.V1ContainerStatus:
    return k8s.V1ContainerStatus(name=name, image="x", image_id="", ready=True, restart_count=restarts,
                                 state=state, last_state=last or k8s.V1ContainerState())


def found(p: k8s.V1Pod, names: dict[str, str] | None = None) -> list[Event]:
    return events(p, (names or {}).get, NOW)


def test_an_oom_kill_in_last_state_is_an_event_with_what_the_kubelet_wrote():
    [event] = found(pod(status(WAITING, terminated("OOMKilled", 137), restarts=1)), {"api": "shop-api"})
    assert event == Event(
        "oom_kill", int(FINISHED.timestamp()) * 10**9 + 500_000_000,
        {"namespace": "shop", "pod": "api-7f9", "container": "api", "node": "node-3", "service_name": "shop-api"},
        137, 256 << 20, 1, int(STARTED.timestamp()) * 10**9, "OOMKilled (exit code 137)", "kubernetes/uid-1/api/0")


def test_both_views_of_one_end_have_one_key():
    before = found(pod(status(terminated("OOMKilled", 137), restarts=3)))  # ended, not yet restarted
    after = found(pod(status(RUNNING, terminated("OOMKilled", 137), restarts=4)))
    assert [e.key for e in before] == [e.key for e in after] == ["kubernetes/uid-1/api/3"]
    assert before == after  # restart_count counts the restart the end causes, in both views


def test_an_error_counts_once_restarted_and_a_clean_exit_never():
    assert found(pod(status(terminated("Error", 2), restarts=0))) == []  # not (yet) restarted
    [restart] = found(pod(status(RUNNING, terminated("Error", 2, "panic: boom"), restarts=1)))
    assert (restart.kind, restart.exit_code, restart.message) == ("restart", 2, "Error (exit code 2): panic: boom")
    assert found(pod(status(RUNNING, terminated("Completed", 0), restarts=1))) == []


def test_an_oom_kill_without_a_restart_still_counts_and_the_default_service_name():
    [event] = found(pod(status(terminated("OOMKilled", 137)), limit=None))
    assert event.labels["service_name"] == "shop/api" and event.memory_limit_bytes == 0
    assert event.key == "kubernetes/uid-1/api/0"


def test_a_state_and_a_last_state_are_two_ends():
    p = pod(status(terminated("OOMKilled", 137), terminated("Error", 1), restarts=2))
    assert [(e.kind, e.key) for e in found(p)] == [("oom_kill", "kubernetes/uid-1/api/2"),
                                                  ("restart", "kubernetes/uid-1/api/1")]


def test_limits_per_container():
    p = pod(status(name="api"), status(name="sidecar"), limit="1.5Gi")
    assert memory_limits(p) == {"api": 3 << 29, "sidecar": 3 << 29}


class _Informer:
    namespace = ""
    kind = "pod"


def watch() -> tuple[PodWatch, list[Event]]:
    recorded: list[Event] = []
    w = PodWatch("pods/incidents", None, lambda p: {"api": "from-relabeling"}, recorded.extend)  # type: ignore[arg-type]
    return w, recorded


def test_the_pod_watch_hands_each_end_on_once_across_updates_and_relists():
    w, recorded = watch()
    killed = pod(status(terminated("OOMKilled", 137), restarts=0))
    w.apply(Change(_Informer(), False, killed))  # type: ignore[arg-type]
    w.apply(Change(_Informer(), False, pod(status(WAITING, terminated("OOMKilled", 137), restarts=1))))  # type: ignore[arg-type]
    w.apply(Replace(_Informer(), [pod(status(RUNNING, terminated("OOMKilled", 137), restarts=1))]))  # type: ignore[arg-type]
    assert [e.key for e in recorded] == ["kubernetes/uid-1/api/0"]
    assert recorded[0].labels["service_name"] == "from-relabeling"
    assert w.memory_limit("shop", "api-7f9", "api") == 256 << 20
    w.apply(Change(_Informer(), False, pod(status(RUNNING, terminated("OOMKilled", 137), restarts=2))))  # type: ignore[arg-type]
    assert [e.key for e in recorded] == ["kubernetes/uid-1/api/0", "kubernetes/uid-1/api/1"]


def test_an_end_older_than_the_store_accepts_is_not_sent():
    w, recorded = watch()
    old = pod(status(RUNNING, terminated("OOMKilled", 137), restarts=1))
    old.status.container_statuses[0].last_state.terminated.finished_at = datetime(2020, 1, 1, tzinfo=UTC)
    old.status.container_statuses[0].last_state.terminated.started_at = datetime(2019, 12, 1, tzinfo=UTC)
    w.apply(Replace(_Informer(), [old]))  # type: ignore[arg-type]
    assert recorded == []


def test_a_new_pod_of_the_same_name_is_new_and_a_gone_pod_is_forgotten():
    w, recorded = watch()
    w.apply(Replace(_Informer(), [pod(status(RUNNING, terminated("OOMKilled", 137), restarts=1))]))  # type: ignore[arg-type]
    w.apply(Replace(_Informer(), [pod(status(RUNNING, terminated("OOMKilled", 137), restarts=1), uid="uid-2")]))  # type: ignore[arg-type]
    assert [e.key for e in recorded] == ["kubernetes/uid-1/api/0", "kubernetes/uid-2/api/0"]
    w.apply(Replace(_Informer(), []))  # type: ignore[arg-type]
    assert w.memory_limit("shop", "api-7f9", "api") == 0
