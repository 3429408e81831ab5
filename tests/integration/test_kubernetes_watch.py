"""The informer thread behind Kubernetes discovery, against a real kube-apiserver: list, then watch; a
410 Gone (a resourceVersion the server no longer has) makes it list again; failures back off exponentially."""

from __future__ import annotations

import contextlib
import queue
import threading
import time

import pytest
from infra.kubeapi import KubeAPIServer
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from flamewatch.collector.discovery import kubernetes_watch
from flamewatch.collector.discovery.kubernetes_watch import Change, Informer, Replace


def _events(informer_queue: queue.Queue, count: int, timeout_s: float = 10.0) -> list:
    out = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count and time.monotonic() < deadline:
        with contextlib.suppress(queue.Empty):
            out.append(informer_queue.get(timeout=0.1))
    return out


def _service(name: str) -> k8s.V1Service:
    return k8s.V1Service(metadata=k8s.V1ObjectMeta(name=name),
                         spec=k8s.V1ServiceSpec(ports=[k8s.V1ServicePort(port=80)]))


@pytest.mark.kubernetes
def test_a_watch_from_a_version_the_server_no_longer_has_lists_again(kube_api: KubeAPIServer, monkeypatch) -> None:
    namespace = kube_api.namespace("watch-gone")
    core = k8s.CoreV1Api(kube_api.api_client())
    events: queue.Queue = queue.Queue()
    stop = threading.Event()
    lists = []
    real_list = Informer._list

    def list_then_lose_the_version(self, call):
        version = real_list(self, call)
        lists.append(version)
        if len(lists) == 1:  # history moves on and is compacted before the first watch starts
            core.create_namespaced_service(namespace, _service("before"))
            kube_api.compact()
        return version

    monkeypatch.setattr(Informer, "_list", list_then_lose_the_version)
    informer = Informer("t/kubernetes/0", "service", namespace, lambda: (core.list_namespaced_service, (namespace,)),
                        {}, events.put, stop, resync_s=600)
    thread = informer.start()
    try:
        first, second = _events(events, 2)
        assert isinstance(first, Replace) and isinstance(second, Replace)  # listed again after the 410
        assert [s.metadata.name for s in first.objects] == []
        assert [s.metadata.name for s in second.objects] == ["before"]  # what the lost watch would have said
        assert len(lists) == 2
        core.create_namespaced_service(namespace, _service("after"))
        (change,) = _events(events, 1)
        assert isinstance(change, Change) and not change.deleted and change.obj.metadata.name == "after"
        assert isinstance(change.obj, k8s.V1Service)  # typed objects, as the label mapping expects
    finally:
        stop.set()
        for name in ("before", "after"):
            with contextlib.suppress(ApiException):  # not created when the test failed early
                core.delete_namespaced_service(name, namespace)
        thread.join(kubernetes_watch.WATCH_TIMEOUT_S + 5)


def test_failures_are_retried_with_exponential_backoff_up_to_the_ceiling() -> None:
    attempts: list[float] = []
    stop = threading.Event()

    def connect():
        attempts.append(time.monotonic())
        raise ConfigException("no configuration")

    informer = Informer("t/kubernetes/0", "pod", "", connect, {}, lambda event: None, stop, resync_s=600,
                        backoff=(0.05, 0.4))
    thread = informer.start()
    time.sleep(1.3)
    stop.set()
    thread.join(2)
    gaps = [later - earlier for earlier, later in zip(attempts, attempts[1:], strict=False)]
    assert 5 <= len(attempts) <= 7, gaps  # 0, .05, .15, .35, .75, 1.15: a fixed delay would retry ~26 times
    assert gaps[0] < 0.09 and 0.09 < gaps[1] < 0.15 and 0.19 < gaps[2] < 0.3
    assert all(0.39 < gap < 0.5 for gap in gaps[3:]), gaps
