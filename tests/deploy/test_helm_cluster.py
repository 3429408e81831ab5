"""The chart in a real cluster (`infra.kubenode`): `helm install` with its bundled Postgres and MinIO and
Kubernetes discovery on, from the images this checkout builds. Every pod becomes Ready; the collector
finds an annotated demo pod through the API with its service account, scrapes it over the pod network and
pushes to the ingesters through their headless Service; the frontend's Service answers the UI and the query
API with the demo's functions. The figures (install to all Ready, install to the demo's first flamegraph)
are printed for the record."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from infra import docker, helm
from infra.kubenode import PPROF_PORT, KubeNode, pprof_container
from kubernetes import client as k8s

pytestmark = [pytest.mark.cluster, pytest.mark.docker, pytest.mark.helm, pytest.mark.usefixtures("helm_binary")]

RELEASE = "fw"
DEMO_FUNCTIONS = {"main.cpuFibonacci", "main.cpuHashLoop"}
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"


def repository_and_tag(image: str) -> tuple[str, str]:
    repository, _, tag = image.rpartition(":")
    return repository, tag


@pytest.fixture(scope="module")
def chart_images(kube_node: KubeNode, compose_images: docker.CheckoutImages,
                 docker_base_images: dict[str, str]) -> dict[str, str]:
    """The Flamewatch image of this checkout and the stand-ins for the bundled Postgres and MinIO, in the node."""
    kube_node.load({"flamewatch": compose_images.flamewatch,
                    "postgres": docker_base_images["FLAMEWATCH_POSTGRES_IMAGE"],
                    "minio": docker_base_images["FLAMEWATCH_MINIO_IMAGE"]})
    return {role: kube_node.image(role) for role in ("flamewatch", "postgres", "minio", "workload")}


def image_values(images: dict[str, str]) -> list[str]:
    sets = []
    for prefix, role in (("image", "flamewatch"), ("postgres.bundled.image", "postgres"),
                         ("objectStorage.bundled.image", "minio")):
        repository, tag = repository_and_tag(images[role])
        sets += [f"{prefix}.repository={repository}", f"{prefix}.tag={tag}", f"{prefix}.pullPolicy=Never"]
    return sets


@dataclass
class Installed:
    namespace: str
    ready_s: float  # from `helm install` to every pod Ready
    began: float


def pods_ready(core: k8s.CoreV1Api, namespace: str) -> list[k8s.V1Pod] | None:
    pods = core.list_namespaced_pod(namespace).items
    ok = pods and all(any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
                      for p in pods if p.status.phase != "Succeeded")
    return pods if ok else None


@pytest.fixture(scope="module")
def installed(kube_node: KubeNode, chart_images: dict[str, str]) -> Iterator[Installed]:
    namespace = kube_node.namespace(f"profiling-{uuid.uuid4().hex[:6]}")
    core = k8s.CoreV1Api(kube_node.api_client())
    # the demo: a Go program serving net/http/pprof, annotated as the chart's discovery expects
    core.create_namespaced_pod(namespace, k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="demo", labels={"app": "demo"}, annotations={
            "profiles.grafana.com/cpu.scrape": "true", "profiles.grafana.com/cpu.port_name": "pprof",
            "profiles.grafana.com/service_name": "demo"}),
        spec=k8s.V1PodSpec(containers=[pprof_container("demo", chart_images["workload"], "-addr", f":{PPROF_PORT}")])))
    began = time.monotonic()
    helm.run("install", RELEASE, str(helm.CHART), "--kubeconfig", str(kube_node.kubeconfig), "--namespace", namespace,
             *(arg for s in [*image_values(chart_images), "collector.kubernetesDiscovery.enabled=true",
                             f"collector.kubernetesDiscovery.namespaces={{{namespace}}}"] for arg in ("--set", s)))
    kube_node.until(lambda: pods_ready(core, namespace), "every pod of the release Ready", 300)
    yield Installed(namespace, time.monotonic() - began, began)
    helm.run("uninstall", RELEASE, "--kubeconfig", str(kube_node.kubeconfig), "--namespace", namespace, "--wait")


def service_url(kube_node: KubeNode, namespace: str, name: str) -> str:
    service = k8s.CoreV1Api(kube_node.api_client()).read_namespaced_service(name, namespace)
    return f"http://{service.spec.cluster_ip}:{service.spec.ports[0].port}"


def top_functions(url: str) -> set[str]:
    try:
        answer = httpx.get(f"{url}/api/v1/query", timeout=10, params={
            "query": f'{CPU}{{service_name="demo"}}', "from": "now-10m", "format": "top"})
    except httpx.HTTPError:
        return set()
    return {e["name"] for e in answer.json()["top"]["entries"]} if answer.status_code == 200 else set()


def test_every_pod_becomes_ready_and_the_frontend_service_shows_the_demo_pods_functions(
        kube_node: KubeNode, installed: Installed) -> None:
    core = k8s.CoreV1Api(kube_node.api_client())
    pods = {p.metadata.labels.get("app.kubernetes.io/component", p.metadata.name)
            for p in core.list_namespaced_pod(installed.namespace).items}
    assert {"ingester", "querier", "frontend", "symbolizer", "collector", "postgres", "minio", "demo"} <= pods, pods
    url = service_url(kube_node, installed.namespace, f"{RELEASE}-flamewatch-frontend")
    assert "<div id=\"root\">" in httpx.get(url + "/", timeout=10).text  # the UI
    found = kube_node.until(lambda: top_functions(url) if top_functions(url) >= DEMO_FUNCTIONS else None,
                            "the demo's functions through the frontend Service", 180)
    first_s = time.monotonic() - installed.began
    assert found >= DEMO_FUNCTIONS
    print(f"\nhelm install to every pod Ready: {installed.ready_s:.1f} s; "
          f"to the demo's first flamegraph through the frontend Service: {first_s:.1f} s")
