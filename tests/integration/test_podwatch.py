"""The pod watch in-process against a real kube-apiserver: a pod status patched as the kubelet writes an OOM
kill becomes one event, and stays one through status updates and repeated re-lists (a resync every second
here, every ten minutes and after each reconnection in a collector); the container's memory limit is known."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest
from infra.kubeapi import KubeAPIServer
from kubernetes import client as k8s

from flamewatch.collector.config import KubernetesNamespaces, KubernetesSDConfig
from flamewatch.collector.discovery.kubernetes_watch import Replace
from flamewatch.collector.podwatch import PodWatch
from flamewatch.events.model import Event

pytestmark = pytest.mark.kubernetes


class CountingWatch(PodWatch):
    relists = 0

    def apply(self, event) -> None:
        self.relists += isinstance(event, Replace)
        super().apply(event)


def _status(restarts: int, last: dict | None) -> dict:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"status": {"phase": "Running", "podIP": "127.0.0.1", "containerStatuses": [{
        "name": "app", "image": "app:test", "imageID": "", "ready": True, "restartCount": restarts,
        "state": {"running": {"startedAt": now}}, "lastState": last or {}}]}}


async def _until(check, timeout_s: float, what: str):
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        if check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_an_oom_kill_is_handed_on_once_through_updates_and_relists(kube_api: KubeAPIServer) -> None:
    asyncio.run(_watching(kube_api))


async def _watching(kube_api: KubeAPIServer) -> None:
    namespace = kube_api.namespace("podwatch")
    core = k8s.CoreV1Api(kube_api.api_client())
    container = k8s.V1Container(name="app", image="app:test",
                                resources=k8s.V1ResourceRequirements(limits={"memory": "1.5Gi"}))
    core.create_namespaced_pod(namespace, k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="app-0"),
                                                    spec=k8s.V1PodSpec(containers=[container])))
    core.patch_namespaced_pod_status("app-0", namespace, _status(0, None))
    recorded: list[Event] = []
    sd = KubernetesSDConfig("pod", kubeconfig_file=str(kube_api.kubeconfig),
                            namespaces=KubernetesNamespaces((namespace,)))
    watch = CountingWatch("podwatch/incidents", sd, lambda pod: {"app": "shop-app"}, recorded.extend, resync_s=1.0)
    task = asyncio.create_task(watch.run())
    try:
        await _until(lambda: watch.memory_limit(namespace, "app-0", "app"), 15, "the pod's first list")
        assert watch.memory_limit(namespace, "app-0", "app") == 3 << 29 and recorded == []
        finished = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        killed = {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": finished}}
        await asyncio.to_thread(core.patch_namespaced_pod_status, "app-0", namespace, _status(1, killed))
        await _until(lambda: recorded, 10, "the kill")
        relists = watch.relists
        await asyncio.to_thread(core.patch_namespaced_pod, "app-0", namespace,
                                {"metadata": {"labels": {"seen": "again"}}})
        await _until(lambda: watch.relists >= relists + 3, 20, "three more re-lists")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    [event] = recorded
    assert (event.kind, event.exit_code, event.restart_count, event.memory_limit_bytes) == ("oom_kill", 137, 1,
                                                                                            3 << 29)
    assert event.labels == {"namespace": namespace, "pod": "app-0", "container": "app", "service_name": "shop-app"}
    assert event.key.endswith("/app/0")
