"""OOM kills found for you: a real `flamewatch collector` watches the pods of a real kube-apiserver and
scrapes the heap of a real leaking Go program (`tests/targets/leaky`) that a pod's status points at.
Patched as the kubelet writes an OOM kill, the pod becomes one incident at the querier, once (also after a
collector restart), with the heap from seconds before the kill, whose top function is the leak and which
grew since the run started. The heap is scraped fast while it grows and at the job's pace once it stops.

The leaking program runs with GOGC=10: a Go heap profile shows the heap as of the last collection, and
with Go's default a small program collects only when its heap doubles, so the readings that drive the
pace would come tens of seconds apart; in a real service allocations make collections frequent."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from e2e.allinone import incidents, start_all, stop
from e2e.calls import rest, tenant_header
from e2e.cluster import Cluster
from e2e.test_kubernetes_discovery import TENANT, Collector, _running, wait_for
from infra import gotargets
from infra.kubeapi import KubeAPIServer
from infra.ports import free_port
from kubernetes import client as k8s

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

S = 10**9
LIMIT = "256Mi"
INTERVAL = "15s"  # the job's pace; the heap's fast one is the default 5s
M = "__meta_kubernetes_"
CONFIG = """
scrape_configs:
  - job_name: kubernetes-pods-memory
    scrape_interval: {interval}
    kubernetes_sd_configs:
      - {{role: pod, kubeconfig_file: "{kubeconfig}", namespaces: {{names: [{namespace}]}}}}
    profiling_config:
      pprof_config:
        process_cpu: {{enabled: false}}
        goroutine: {{enabled: false}}
        mutex: {{enabled: false}}
        block: {{enabled: false}}
    relabel_configs:  # the Helm chart's memory job
      - {{source_labels: [{m}pod_annotation_profiles_grafana_com_memory_scrape], regex: "true", action: keep}}
      - {{source_labels: [{m}namespace], target_label: namespace}}
      - {{source_labels: [{m}pod_name], target_label: pod}}
      - {{source_labels: [{m}pod_container_name], target_label: container}}
      - {{source_labels: [{m}namespace, {m}pod_container_name], separator: /, target_label: service_name}}
"""


def leaky(tmp_path: Path, *args: str) -> gotargets.GoTarget:
    return gotargets.GoTarget(gotargets.build("leaky"), tmp_path / "leaky.log", ("-rate", str(1 << 20), *args),
                              env={"GOGC": "10"})


@pytest.fixture
def leaking(tmp_path: Path) -> Iterator[gotargets.GoTarget]:
    with leaky(tmp_path) as target:
        yield target


def _rfc3339(ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ns // S))


def _pod(port: int) -> k8s.V1Pod:
    container = k8s.V1Container(name="leaky", image="leaky:test",
                                ports=[k8s.V1ContainerPort(name="pprof", container_port=port)],
                                resources=k8s.V1ResourceRequirements(limits={"memory": LIMIT}))
    return k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="leaky-0", annotations={
        "profiles.grafana.com/memory.scrape": "true"}), spec=k8s.V1PodSpec(containers=[container], node_name="node-1"))


def _oom_killed(core: k8s.CoreV1Api, namespace: str, started_ns: int, finished_ns: int) -> None:
    """What the kubelet writes once the container was OOM-killed and started again."""
    terminated = {"exitCode": 137, "reason": "OOMKilled", "startedAt": _rfc3339(started_ns),
                  "finishedAt": _rfc3339(finished_ns), "containerID": "containerd://0123"}
    status = {"name": "leaky", "image": "leaky:test", "imageID": "", "ready": True, "restartCount": 1,
              "started": True, "state": {"running": {"startedAt": _rfc3339(finished_ns)}},
              "lastState": {"terminated": terminated}}
    core.patch_namespaced_pod_status("leaky-0", namespace, {"status": {"containerStatuses": [status]}})


def _incidents(cluster: Cluster, namespace: str) -> list[dict]:
    answer = cluster.http.get(f"{cluster.querier_url}/api/v1/incidents", headers=tenant_header(TENANT),
                              params={"from": "now-1h", "query": f'{{namespace="{namespace}"}}'})
    assert answer.status_code == 200, answer.text
    return answer.json()["incidents"]


def _interval(collector: Collector) -> str:
    [target] = collector.targets("kubernetes-pods-memory").values()
    return target["scrapeInterval"]


@pytest.mark.kubernetes
def test_a_leaking_pods_oom_kill_is_one_incident_with_the_heap_from_seconds_before(
        cluster: Cluster, kube_api: KubeAPIServer, leaking: gotargets.GoTarget, tmp_path: Path) -> None:
    started_ns = time.time_ns()
    namespace = kube_api.namespace(f"oom-{uuid.uuid4().hex[:8]}")
    core = k8s.CoreV1Api(kube_api.api_client())
    port = int(leaking.addr.split(":")[1])
    core.create_namespaced_pod(namespace, _pod(port))
    _running(core, namespace, "leaky-0")
    config = tmp_path / "flamewatch.yaml"
    config.write_text(CONFIG.format(interval=INTERVAL, kubeconfig=kube_api.kubeconfig, namespace=namespace, m=M))

    collector = Collector(config, cluster.ingester_grpc, tmp_path / "collector.log")
    try:
        wait_for(lambda: collector.targets("kubernetes-pods-memory"), 15, "the annotated pod", collector.log)
        wait_for(lambda: _interval(collector) == "5s", 90, "fast heap scraping of the growing heap", collector.log)
        time.sleep(6)  # a fast scrape or so after the switch
        killed_ns = time.time_ns() // S * S  # the kubelet writes whole seconds
        _oom_killed(core, namespace, started_ns, killed_ns)
        [incident] = wait_for(lambda: _incidents(cluster, namespace), 20, "the incident", collector.log)
        assert "recorded oom_kill of" in collector.log.read_text()
        # a later status update of the same pod (the kubelet's next heartbeat of it) is no new kill
        core.patch_namespaced_pod("leaky-0", namespace, {"metadata": {"labels": {"seen": "again"}}})
    finally:
        assert collector.stop() == 0, collector.log.read_text()[-4000:]

    assert incident["kind"] == "oom_kill" and incident["time"] == killed_ns
    assert incident["labels"] == {"namespace": namespace, "pod": "leaky-0", "container": "leaky", "node": "node-1",
                                  "service_name": f"{namespace}/leaky"}
    assert (incident["exit_code"], incident["memory_limit_bytes"], incident["restart_count"]) == (137, 256 << 20, 1)
    assert incident["started_ns"] == started_ns // S * S
    assert re.fullmatch(r"kubernetes/[0-9a-f-]{36}/leaky/0", incident["key"])
    evidence = incident["evidence"]
    assert 0 <= evidence["last_heap_age_ns"] <= 10 * S, evidence

    last = evidence["last_heap"]
    top = rest(cluster, "/query", TENANT, {"query": last["query"], "from": str(last["time"]),
                                           "until": str(last["time"]), "format": "top"})["top"]["entries"]
    assert max(top, key=lambda e: e["self"])["name"] == "main.leakIntoCache", top
    growth = evidence["inuse_growth"]
    diff = rest(cluster, "/diff", TENANT, {
        "left_query": growth["left"]["query"], "left_from": str(growth["left"]["from"]),
        "left_until": str(growth["left"]["until"]), "right_query": growth["right"]["query"],
        "right_from": str(growth["right"]["from"]), "right_until": str(growth["right"]["until"])})["flamegraph"]
    assert diff["right_ticks"] > diff["left_ticks"] > 0, diff

    # A new collector lists the pods again and sends the kill again: the store keeps one.
    again = Collector(config, cluster.ingester_grpc, tmp_path / "collector-again.log")
    try:
        wait_for(lambda: "flamewatch_collector_sent_events_total 1.0" in httpx.get(again.url + "/metrics").text, 20,
                 "the restarted collector to send the kill it lists", again.log)
    finally:
        assert again.stop() == 0, again.log.read_text()[-4000:]
    assert [i["id"] for i in _incidents(cluster, namespace)] == [incident["id"]]
    assert "recorded oom_kill" not in again.log.read_text()


def test_the_heap_is_scraped_fast_while_it_grows_and_at_the_jobs_pace_after(cluster: Cluster, tmp_path: Path) -> None:
    pace = "10s"  # the job's; two rises at it are seen 20 s into the leak, well before it ends
    with leaky(tmp_path, "-rate", str(2 << 20), "-limit", str(70 << 20)) as target:  # leaks for 35 s, then holds
        config = tmp_path / "flamewatch.yaml"
        config.write_text(f"""
scrape_configs:
  - job_name: leaky
    scrape_interval: {pace}
    static_configs: [{{targets: ["{target.addr}"]}}]
    profiling_config:
      pprof_config: {{process_cpu: {{enabled: false}}, goroutine: {{enabled: false}}, mutex: {{enabled: false}},
                      block: {{enabled: false}}}}
""")
        collector = Collector(config, cluster.ingester_grpc, tmp_path / "collector.log")
        try:
            def interval() -> str | None:
                found = list(collector.targets("leaky").values())  # none until discovery has run once
                return found[0]["scrapeInterval"] if found else None

            wait_for(lambda: interval() == "5s", 90, "fast heap scraping while the leak grows", collector.log)
            assert "in-use heap growing" in collector.log.read_text()

            def stopped() -> bool:
                # A collection finds the heap as it was. Go collects at least every two minutes on its own;
                # asking for one (as `?gc=1` does) spares the test the wait.
                httpx.get(f"http://{target.addr}/debug/pprof/heap", params={"gc": "1"}, timeout=10)
                return interval() == pace

            wait_for(stopped, 150, "the job's pace once the leak stopped", collector.log)
            assert "in-use heap stopped growing" in collector.log.read_text()
            held = int(re.findall(r"stopped growing at ([0-9.]+) MiB", collector.log.read_text())[-1].split(".")[0])
            assert held >= 60, collector.log.read_text()[-2000:]  # it switched back after the leak, not before
        finally:
            assert collector.stop() == 0, collector.log.read_text()[-4000:]


@pytest.mark.kubernetes
def test_flamewatch_all_records_the_kill_of_a_pod_it_lists(kube_api: KubeAPIServer, embedded_workdir: Path) -> None:
    """The same watch in `flamewatch all`, recording through its own gRPC port: a kill of a minute ago,
    found in the first list, is an incident (without a heap: nothing scraped this container before)."""
    namespace = kube_api.namespace(f"oom-all-{uuid.uuid4().hex[:8]}")
    core = k8s.CoreV1Api(kube_api.api_client())
    core.create_namespaced_pod(namespace, _pod(free_port()))
    _running(core, namespace, "leaky-0")
    killed_ns = (time.time_ns() // S - 60) * S
    _oom_killed(core, namespace, killed_ns - 600 * S, killed_ns)
    config = embedded_workdir / "flamewatch.yaml"
    config.write_text(CONFIG.format(interval=INTERVAL, kubeconfig=kube_api.kubeconfig, namespace=namespace, m=M))
    http_port = free_port()
    process = start_all(embedded_workdir, config, http_port, free_port())
    log = embedded_workdir / "all.log"
    try:
        [incident] = wait_for(lambda: incidents(http_port, namespace), 90, "the incident in flamewatch all", log)
    finally:
        assert stop(process) == 0, log.read_text()[-4000:]
    assert (incident["kind"], incident["time"], incident["restart_count"]) == ("oom_kill", killed_ns, 1)
    assert incident["labels"]["service_name"] == f"{namespace}/leaky"
    assert incident["evidence"]["last_heap"] is None
