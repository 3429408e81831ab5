"""A real one-node cluster (`infra.kubenode`): its pods run, answer on the pod network and behind Services that
CoreDNS names and kube-proxy forwards, and a leaking pod over its memory limit is OOM-killed by the kernel,
restarted by the kubelet and recorded by Flamewatch's watch of the pods as one incident with the heap from
seconds before the kill: the OOM issue's detection checked against a real kill, not a written status."""

from __future__ import annotations

import gzip
import shutil
import socket
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from e2e.allinone import incidents, start_all, stop
from e2e.test_oom_kills import CONFIG, M
from infra import leftovers
from infra.kubenode import DNS_DOMAIN, NODE_IP, NODE_NAME, PPROF_PORT, KubeNode, pprof_container
from infra.ports import free_port
from kubernetes import client as k8s

from flamewatch.api.perftools.profiles import profile_pb2

pytestmark = [pytest.mark.cluster, pytest.mark.docker, pytest.mark.postgres]

T = TypeVar("T")
S = 10**9
LIMIT_MIB = 64


def resolve(server: str, name: str) -> list[str]:
    """The A records `server` answers for `name` (one DNS query over UDP)."""
    question = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5)
        sock.sendto(struct.pack(">HHHHHH", 0x4657, 0x0100, 1, 0, 0, 0) + question, (server, 53))
        answer = sock.recv(4096)
    (count,) = struct.unpack(">H", answer[6:8])
    at, found = 12 + len(question), []
    for _ in range(count):
        at += 2 if answer[at] & 0xC0 else answer.index(b"\0", at) + 1 - at  # a name: a pointer or labels
        kind, _, _, length = struct.unpack(">HHIH", answer[at:at + 10])
        if kind == 1:
            found.append(socket.inet_ntoa(answer[at + 10:at + 14]))
        at += 10 + length
    return found


def pod_status(core: k8s.CoreV1Api, namespace: str, name: str) -> k8s.V1PodStatus:
    return core.read_namespaced_pod(name, namespace).status


def ready(core: k8s.CoreV1Api, namespace: str, name: str) -> str | None:
    """The pod's IP once it is Ready."""
    status = pod_status(core, namespace, name)
    is_ready = any(c.type == "Ready" and c.status == "True" for c in status.conditions or [])
    return status.pod_ip if is_ready else None


def restarted(core: k8s.CoreV1Api, namespace: str, name: str) -> k8s.V1ContainerStatus | None:
    """The pod's container status once the kubelet started it again after it ended."""
    [status] = pod_status(core, namespace, name).container_statuses or [None]
    return status if status and status.restart_count >= 1 and status.last_state.terminated else None


def heap_sample_types(body: bytes) -> list[str]:
    profile = profile_pb2.Profile.FromString(gzip.decompress(body))
    return [profile.string_table[t.type] for t in profile.sample_type]


def test_the_node_runs_a_pod_that_answers_by_pod_ip_and_by_the_service_coredns_names(kube_node: KubeNode):
    core = k8s.CoreV1Api(kube_node.api_client())
    info = core.read_node(NODE_NAME).status.node_info
    print(f"\nthe node was Ready {kube_node.started_s:.1f} s after its start (images imported)")
    assert info.kubelet_version == "v1.37.2"
    assert info.container_runtime_version.startswith("containerd://1.")
    namespace = kube_node.namespace(f"demo-{uuid.uuid4().hex[:6]}")
    probe = k8s.V1Probe(http_get=k8s.V1HTTPGetAction(path="/debug/pprof/", port=PPROF_PORT), period_seconds=1)
    core.create_namespaced_pod(namespace, k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="demo", labels={"app": "demo"}),
        spec=k8s.V1PodSpec(containers=[pprof_container("demo", kube_node.image("workload"), "-addr", f":{PPROF_PORT}",
                                                 readiness_probe=probe)])))
    service = core.create_namespaced_service(namespace, k8s.V1Service(
        metadata=k8s.V1ObjectMeta(name="demo"),
        spec=k8s.V1ServiceSpec(selector={"app": "demo"}, ports=[k8s.V1ServicePort(port=80, target_port="pprof")])))
    pod_ip = kube_node.until(lambda: ready(core, namespace, "demo"), "Ready demo pod", 60)
    assert pod_ip.startswith("10.245.0.")

    # the pod network, from the host
    heap = httpx.get(f"http://{pod_ip}:{PPROF_PORT}/debug/pprof/heap", timeout=10)
    assert heap.status_code == 200 and "inuse_space" in heap_sample_types(heap.content)

    # the Service: CoreDNS answers its name with its cluster IP, which kube-proxy forwards to the pod
    name = f"demo.{namespace}.svc.{DNS_DOMAIN}"
    assert kube_node.until(lambda: resolve(NODE_IP, name), f"an A record of {name}", 30) == \
        [service.spec.cluster_ip]
    through = kube_node.until(lambda: _get(f"http://{service.spec.cluster_ip}/debug/pprof/heap"),
                              "an answer through the Service's cluster IP", 30)
    assert "inuse_space" in heap_sample_types(through.content)


def _get(url: str) -> httpx.Response | None:
    try:
        answer = httpx.get(url, timeout=5)
    except httpx.HTTPError:
        return None
    return answer if answer.status_code == 200 else None


@pytest.fixture
def workdir() -> Iterator[Path]:
    """Outside pytest's temporary root, which pgserver's own user cannot traverse (see tests/e2e/conftest.py)."""
    path = leftovers.work_dir("cluster")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_real_oom_kill_is_restarted_by_the_kubelet_and_recorded_with_the_heap_from_before(
        kube_node: KubeNode, workdir: Path) -> None:
    core = k8s.CoreV1Api(kube_node.api_client())
    namespace = kube_node.namespace(f"oom-{uuid.uuid4().hex[:6]}")
    # 1 MiB a second into a 64 MiB limit: killed about a minute after it starts, scraped every 5 s meanwhile.
    # GOGC=10: Go's heap profile shows the heap as of the last collection (see tests/e2e/test_oom_kills.py).
    leaky = pprof_container("leaky", kube_node.image("leaky"), "-addr", f":{PPROF_PORT}", "-rate", str(1 << 20),
                      env=[k8s.V1EnvVar(name="GOGC", value="10")],
                      resources=k8s.V1ResourceRequirements(limits={"memory": f"{LIMIT_MIB}Mi"}))
    core.create_namespaced_pod(namespace, k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="leaky-0", annotations={"profiles.grafana.com/memory.scrape": "true"}),
        spec=k8s.V1PodSpec(containers=[leaky], restart_policy="Always")))
    kube_node.until(lambda: ready(core, namespace, "leaky-0"), "Running leaky pod", 60)

    config = workdir / "flamewatch.yaml"
    config.write_text(CONFIG.format(interval="15s", kubeconfig=kube_node.kubeconfig, namespace=namespace, m=M))
    http_port = free_port()
    process = start_all(workdir, config, http_port, free_port())
    log = workdir / "all.log"
    try:
        kube_node.until(lambda: incidents(http_port, namespace), "incident of the kill", 240, log)
        # What the kernel and the kubelet did: killed for memory, restarted in place (after a back-off).
        status = kube_node.until(lambda: restarted(core, namespace, "leaky-0"), "restart of the killed container",
                                 60, log)
        killed = status.last_state.terminated
        assert (killed.reason, killed.exit_code) == ("OOMKilled", 137), status
        killed_ns = int(killed.finished_at.timestamp()) * S
        [incident] = kube_node.until(lambda: [i for i in incidents(http_port, namespace) if i["time"] == killed_ns],
                                     "incident of the kill the pod's status shows", 30, log)
        heap = incident["evidence"]["last_heap"]
        top = httpx.get(f"http://127.0.0.1:{http_port}/api/v1/query", timeout=30, params={
            "query": heap["query"], "from": str(heap["time"]), "until": str(heap["time"]), "format": "top"})
    finally:
        assert stop(process) == 0, log.read_text()[-4000:]

    # What Flamewatch made of it.
    assert incident["kind"] == "oom_kill" and incident["restart_count"] == status.restart_count
    assert incident["labels"] == {"namespace": namespace, "pod": "leaky-0", "container": "leaky",
                                  "node": NODE_NAME, "service_name": f"{namespace}/leaky"}
    assert (incident["exit_code"], incident["memory_limit_bytes"]) == (137, LIMIT_MIB << 20)
    assert 0 <= incident["evidence"]["last_heap_age_ns"] <= 10 * S, incident["evidence"]
    entries = top.json()["top"]["entries"]
    assert max(entries, key=lambda e: e["self"])["name"] == "main.leakIntoCache", entries
