"""`flamewatch collector` with a kubeconfig discovers Pods and EndpointSlices in a real kube-apiserver,
scrapes the real Go programs their (patched) status points at into the ingester, and follows label
changes and deletions within seconds; a bad kubeconfig or an unreachable server is retried, not fatal."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from e2e.calls import rest
from e2e.cluster import FLAMEWATCH, Cluster
from infra import gotargets, helm
from infra.kubeapi import KubeAPIServer
from infra.ports import free_port
from kubernetes import client as k8s

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go, pytest.mark.kubernetes]

TENANT = "e2e-kubernetes"
SLICE_ADDRESS = "192.0.2.10"  # TEST-NET-1: never routed; relabeled to the loopback program below
M = "__meta_kubernetes_"
CONFIG = """
scrape_configs:
  - job_name: pods
    scrape_interval: 1s
    kubernetes_sd_configs:
      - {{role: pod, kubeconfig_file: "{kubeconfig}", namespaces: {{names: [{namespace}]}},
         selectors: [{{role: pod, label: "profiled=yes"}}]}}
    profiling_config:
      pprof_config:
        process_cpu: {{enabled: false}}
        memory: {{enabled: false}}
        mutex: {{enabled: false}}
        block: {{enabled: false}}
    relabel_configs:
      - {{source_labels: [{m}pod_label_app], regex: workload, action: keep}}
      - {{source_labels: [{m}pod_name], target_label: pod}}
      - {{regex: {m}pod_label_(team)$, action: labelmap}}
      - {{source_labels: [{m}pod_label_app], target_label: service_name}}
  - job_name: slices
    scrape_interval: 1s
    kubernetes_sd_configs:
      - {{role: endpointslice, kubeconfig_file: "{kubeconfig}", namespaces: {{names: [{namespace}]}}}}
    profiling_config:
      pprof_config:
        process_cpu: {{enabled: false}}
        memory: {{enabled: false}}
        mutex: {{enabled: false}}
        block: {{enabled: false}}
    relabel_configs:
      # The API server refuses loopback addresses in an EndpointSlice, so the slice holds a documentation
      # address and this rule sends the scrape to the loopback program on the slice's port.
      - {{source_labels: [{m}endpointslice_port], replacement: "127.0.0.1:$1", target_label: __address__}}
      - {{source_labels: [{m}service_name], target_label: service}}
      - {{source_labels: [{m}pod_name], target_label: pod}}
      - {{source_labels: [{m}service_label_tier], target_label: tier}}
"""


def wait_for(check, timeout_s: float, what: str, log: Path | None = None):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.25)
    tail = f"\ncollector log:\n{log.read_text()[-4000:]}" if log else ""
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; last: {last!r}{tail}")


class Collector:
    def __init__(self, config: Path, ingester: str, log: Path) -> None:
        self.log = log
        self.url = f"http://127.0.0.1:{free_port()}"
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [str(FLAMEWATCH), "collector", "--config.file", str(config), "--ingester.address", ingester,
                 "--tenant", TENANT, "--http-address", self.url.removeprefix("http://"),
                 "--grpc-address", f"127.0.0.1:{free_port()}"], stdout=out, stderr=subprocess.STDOUT)
        wait_for(self._ready, 30, "the collector to answer", log)

    def _ready(self) -> bool:
        try:
            return httpx.get(self.url + "/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return self.process.poll() is not None  # exited: the caller's next assertion shows the log

    def targets(self, job: str) -> dict[str, dict]:
        """instance -> target of one job (its first profile type)."""
        active = httpx.get(self.url + "/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
        return {t["labels"]["instance"]: t for t in active if t["scrapePool"] == job}

    def stop(self) -> int:
        self.process.terminate()
        return self.process.wait(30)


@pytest.fixture
def go_targets(_go_workload: Path, tmp_path: Path) -> Iterator[list[str]]:
    with gotargets.GoTarget(_go_workload, tmp_path / "a.log") as a, \
            gotargets.GoTarget(_go_workload, tmp_path / "b.log") as b:
        yield [a.addr, b.addr]


def _pod(name: str, port: int, labels: dict[str, str]) -> k8s.V1Pod:
    container = k8s.V1Container(name="workload", image="workload:test",
                                ports=[k8s.V1ContainerPort(name="pprof", container_port=port)])
    return k8s.V1Pod(metadata=k8s.V1ObjectMeta(name=name, labels=labels), spec=k8s.V1PodSpec(containers=[container]))


def _running(core: k8s.CoreV1Api, namespace: str, name: str) -> None:
    """What a kubelet would report: running, ready, on the loopback address where the Go program listens."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {"phase": "Running", "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}], "hostIP": "127.0.0.1",
              "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}
    core.patch_namespaced_pod_status(name, namespace, {"status": status})


def _slice(namespace: str, port: int) -> k8s.V1EndpointSlice:
    endpoint = k8s.V1Endpoint(addresses=[SLICE_ADDRESS], conditions=k8s.V1EndpointConditions(ready=True),
                              target_ref=k8s.V1ObjectReference(kind="Pod", name="pod-a", namespace=namespace))
    return k8s.V1EndpointSlice(
        address_type="IPv4", endpoints=[endpoint],
        metadata=k8s.V1ObjectMeta(name="workload-1", labels={"kubernetes.io/service-name": "workload"}),
        ports=[k8s.DiscoveryV1EndpointPort(name="pprof", port=port, protocol="TCP")])


def test_pods_and_endpointslices_are_discovered_scraped_and_followed(
        cluster: Cluster, kube_api: KubeAPIServer, go_targets: list[str], tmp_path: Path) -> None:
    namespace = kube_api.namespace(f"kd-{uuid.uuid4().hex[:8]}")
    api = kube_api.api_client()
    core, discovery = k8s.CoreV1Api(api), k8s.DiscoveryV1Api(api)
    (host_a, port_a), (host_b, port_b) = (addr.split(":") for addr in go_targets)
    labels = {"app": "workload", "profiled": "yes"}
    core.create_namespaced_pod(namespace, _pod("pod-a", int(port_a), {**labels, "team": "a"}))
    core.create_namespaced_pod(namespace, _pod("pod-b", int(port_b), {**labels, "team": "b"}))
    core.create_namespaced_pod(namespace, _pod("not-selected", 1, {"app": "workload"}))
    for name in ("pod-a", "pod-b", "not-selected"):
        _running(core, namespace, name)
    core.create_namespaced_service(namespace, k8s.V1Service(
        metadata=k8s.V1ObjectMeta(name="workload", labels={"tier": "backend"}),
        spec=k8s.V1ServiceSpec(ports=[k8s.V1ServicePort(name="pprof", port=80, target_port=int(port_a))])))
    discovery.create_namespaced_endpoint_slice(namespace, _slice(namespace, int(port_a)))

    config = tmp_path / "flamewatch.yaml"
    config.write_text(CONFIG.format(kubeconfig=kube_api.kubeconfig, namespace=namespace, m=M))
    collector = Collector(config, cluster.ingester_grpc, tmp_path / "collector.log")
    try:
        pods = wait_for(lambda: len(collector.targets("pods")) == 2 and collector.targets("pods"), 15,
                        "both selected pods as targets", collector.log)
        a = pods[f"127.0.0.1:{port_a}"]
        assert a["labels"] == {"job": "pods", "instance": f"127.0.0.1:{port_a}", "pod": "pod-a", "team": "a",
                               "service_name": "workload"}
        found = a["discoveredLabels"]
        assert {k: found[k] for k in (M + "namespace", M + "pod_name", M + "pod_ip", M + "pod_host_ip",
                                      M + "pod_ready", M + "pod_phase", M + "pod_container_name",
                                      M + "pod_container_port_name", M + "pod_container_port_number",
                                      M + "pod_container_port_protocol", M + "pod_label_team")} == {
            M + "namespace": namespace, M + "pod_name": "pod-a", M + "pod_ip": "127.0.0.1",
            M + "pod_host_ip": "127.0.0.1", M + "pod_ready": "true", M + "pod_phase": "Running",
            M + "pod_container_name": "workload", M + "pod_container_port_name": "pprof",
            M + "pod_container_port_number": port_a, M + "pod_container_port_protocol": "TCP",
            M + "pod_label_team": "a"}
        sliced = wait_for(lambda: collector.targets("slices"), 15, "the endpointslice's target", collector.log)
        assert sliced[f"127.0.0.1:{port_a}"]["labels"] == {
            "job": "slices", "instance": f"127.0.0.1:{port_a}", "service": "workload", "pod": "pod-a",
            "tier": "backend", "service_name": "slices"}
        slice_found = sliced[f"127.0.0.1:{port_a}"]["discoveredLabels"]
        assert slice_found["__address__"] == f"{SLICE_ADDRESS}:{port_a}"
        assert {k: slice_found[k] for k in (M + "endpointslice_name", M + "endpointslice_address_type",
                                            M + "endpointslice_port", M + "endpointslice_port_name",
                                            M + "endpointslice_address_target_kind",
                                            M + "endpointslice_address_target_name",
                                            M + "endpointslice_endpoint_conditions_ready", M + "service_name",
                                            M + "pod_name", M + "pod_container_port_name")} == {
            M + "endpointslice_name": "workload-1", M + "endpointslice_address_type": "IPv4",
            M + "endpointslice_port": port_a, M + "endpointslice_port_name": "pprof",
            M + "endpointslice_address_target_kind": "Pod", M + "endpointslice_address_target_name": "pod-a",
            M + "endpointslice_endpoint_conditions_ready": "true", M + "service_name": "workload",
            M + "pod_name": "pod-a", M + "pod_container_port_name": "pprof"}

        def stored(selector: str) -> list[dict]:
            return rest(cluster, "/series", TENANT, {"match[]": selector, "from": "now-5m"})["data"]

        wait_for(lambda: stored('{job="pods",pod="pod-a",team="a"}') and stored('{job="pods",pod="pod-b"}')
                 and stored('{job="slices",pod="pod-a",service="workload"}'), 30,
                 "goroutine profiles of both pods and of the slice's endpoint", collector.log)

        core.patch_namespaced_pod("pod-b", namespace, {"metadata": {"labels": {"team": "c"}}})
        wait_for(lambda: collector.targets("pods").get(f"127.0.0.1:{port_b}", {}).get("labels", {}).get("team")
                 == "c", 5, "pod-b's new label", collector.log)
        core.patch_namespaced_pod("pod-b", namespace, {"metadata": {"labels": {"app": "other"}}})
        wait_for(lambda: f"127.0.0.1:{port_b}" not in collector.targets("pods"), 5,
                 "the keep rule on __meta_kubernetes_pod_label_app to drop pod-b", collector.log)

        core.delete_namespaced_pod("pod-a", namespace, grace_period_seconds=0)
        wait_for(lambda: not collector.targets("pods"), 5, "pod-a's deletion", collector.log)
        # The slice still names pod-a, which is gone: its target stays, without the pod's labels.
        wait_for(lambda: "pod" not in collector.targets("slices")[f"127.0.0.1:{port_a}"]["labels"], 5,
                 "the slice's target to lose the deleted pod's labels", collector.log)
        discovery.delete_namespaced_endpoint_slice("workload-1", namespace)
        wait_for(lambda: not collector.targets("slices"), 5, "the endpointslice's deletion", collector.log)
    finally:
        code = collector.stop()
    assert code == 0, collector.log.read_text()[-4000:]


def test_a_bad_kubeconfig_and_an_unreachable_server_are_retried_with_a_clear_log(
        cluster: Cluster, tmp_path: Path) -> None:
    broken = tmp_path / "broken-kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    unreachable = f"http://127.0.0.1:{free_port()}"
    config = tmp_path / "flamewatch.yaml"
    config.write_text(f"""
scrape_configs:
  - job_name: broken
    kubernetes_sd_configs: [{{role: pod, kubeconfig_file: "{broken}"}}]
  - job_name: away
    kubernetes_sd_configs: [{{role: service, api_server: "{unreachable}"}}]
""")
    collector = Collector(config, cluster.ingester_grpc, tmp_path / "collector.log")
    try:
        wait_for(lambda: "kubernetes discovery away/kubernetes/0" in collector.log.read_text()
                 and "kubernetes discovery broken/kubernetes/0" in collector.log.read_text(), 10,
                 "both failures to be logged", collector.log)
        time.sleep(3)  # long enough for a tight retry loop to log or retry dozens of times
        log = collector.log.read_text()
        assert collector.process.poll() is None, log
        assert httpx.get(collector.url + "/readyz").status_code == 200
        away = [line for line in log.splitlines() if "away/kubernetes/0" in line]
        broken_lines = [line for line in log.splitlines() if "broken/kubernetes/0" in line]
        assert len(away) == 1 and len(broken_lines) == 1, log  # rate-limited: once per interval
        assert "cannot list or watch service in all namespaces: cannot reach the API server" in away[0]
        assert "retrying in" in away[0]
        assert (f"cannot list or watch pod in all namespaces: bad Kubernetes client configuration: kubeconfig "
                f"{broken}: Invalid kube-config file. Expected key current-context") in broken_lines[0]
        assert collector.targets("away") == {} and collector.targets("broken") == {}
    finally:
        code = collector.stop()
    assert code == 0, collector.log.read_text()[-4000:]


@pytest.mark.helm
@pytest.mark.usefixtures("helm_binary")
def test_the_charts_collector_config_scrapes_a_pod_annotated_for_cpu(
        cluster: Cluster, kube_api: KubeAPIServer, go_targets: list[str], tmp_path: Path) -> None:
    """The scrape configuration the Helm chart renders with discovery on, run by the collector as it is
    (only the API server's address added: the collector runs outside the cluster): a pod annotated
    `profiles.grafana.com/cpu.scrape` with its port gets its CPU profiled, under `<namespace>/<container>`;
    an unannotated pod is left alone."""
    namespace = kube_api.namespace(f"chart-{uuid.uuid4().hex[:8]}")
    objects = helm.render(sets=("collector.kubernetesDiscovery.enabled=true", "collector.selfScrape=false",
                                "collector.global.scrape_interval=1s"))
    (configmap,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-collector")]
    rendered = yaml.safe_load(configmap["data"]["shard-0.yaml"])
    for job in rendered["scrape_configs"]:
        for sd in job["kubernetes_sd_configs"]:
            sd.update(kubeconfig_file=str(kube_api.kubeconfig), namespaces={"names": [namespace]})
    config = tmp_path / "collector.yaml"
    config.write_text(yaml.safe_dump(rendered))

    core = k8s.CoreV1Api(kube_api.api_client())
    (_, port_a), (_, port_b) = (addr.split(":") for addr in go_targets)
    annotated = _pod("annotated", int(port_a), {"app": "shop"})
    annotated.metadata.annotations = {"profiles.grafana.com/cpu.scrape": "true",
                                      "profiles.grafana.com/cpu.port": port_a}
    core.create_namespaced_pod(namespace, annotated)
    core.create_namespaced_pod(namespace, _pod("plain", int(port_b), {"app": "shop"}))
    for name in ("annotated", "plain"):
        _running(core, namespace, name)

    collector = Collector(config, cluster.ingester_grpc, tmp_path / "collector.log")
    cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
    try:
        targets = wait_for(lambda: collector.targets("kubernetes-pods-cpu"), 15, "the annotated pod as a target",
                           collector.log)
        assert set(targets) == {f"127.0.0.1:{port_a}"}
        assert targets[f"127.0.0.1:{port_a}"]["labels"] == {
            "job": "kubernetes-pods-cpu", "instance": f"127.0.0.1:{port_a}", "namespace": namespace,
            "pod": "annotated", "container": "workload", "service_name": f"{namespace}/workload"}
        assert not collector.targets("kubernetes-pods-memory")

        selector = f'{{service_name="{namespace}/workload"}}'
        wait_for(lambda: rest(cluster, "/series", TENANT, {"match[]": selector, "from": "now-5m"})["data"], 30,
                 "the annotated pod's CPU profile", collector.log)
        body = rest(cluster, "/query", TENANT, {"query": cpu + selector, "from": "now-5m", "format": "top",
                                                "max_nodes": "10000"})
        assert "main.cpuFibonacci" in {e["name"] for e in body["top"]["entries"]}
        assert not rest(cluster, "/series", TENANT, {"match[]": '{pod="plain"}', "from": "now-5m"})["data"]
    finally:
        code = collector.stop()
    assert code == 0, collector.log.read_text()[-4000:]
