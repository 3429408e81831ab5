"""`helm install` of the chart into a real kube-apiserver, with the default values and with Kubernetes
discovery on: the server accepts and validates every object (nothing runs them: there is no kubelet), and
the scrape configuration it stores is one the collector loads."""

from __future__ import annotations

import pytest
import yaml
from infra import helm
from infra.kubeapi import KubeAPIServer
from kubernetes import client as k8s
from kubernetes.dynamic import DynamicClient

from flamewatch.collector.config import parse_config

pytestmark = [pytest.mark.helm, pytest.mark.kubernetes, pytest.mark.usefixtures("helm_binary")]


def _install(kube_api: KubeAPIServer, release: str, namespace: str, *sets: str) -> list[dict]:
    """Install the chart; the objects of the release's manifest, as stored by the server."""
    kube_api.namespace(namespace)
    args = ["install", release, str(helm.CHART), "--kubeconfig", str(kube_api.kubeconfig), "--namespace", namespace]
    for assignment in sets:
        args += ["--set", assignment]
    helm.run(*args)
    status = helm.run("status", release, "--kubeconfig", str(kube_api.kubeconfig), "--namespace", namespace)
    assert "STATUS: deployed" in status
    manifest = helm.run("get", "manifest", release, "--kubeconfig", str(kube_api.kubeconfig), "--namespace", namespace)
    objects = [o for o in yaml.safe_load_all(manifest) if o]
    dynamic = DynamicClient(kube_api.api_client())
    stored = []
    for obj in objects:
        resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        scope = {"namespace": namespace} if resource.namespaced else {}
        stored.append(resource.get(name=obj["metadata"]["name"], **scope).to_dict())
    return stored


def _names(objects: list[dict], kind: str) -> set[str]:
    return {o["metadata"]["name"] for o in objects if o["kind"] == kind}


def test_default_values_install_and_every_object_is_stored(kube_api: KubeAPIServer) -> None:
    objects = _install(kube_api, "fw", "flamewatch-default")
    assert len(objects) == len(helm.render())  # what `helm template` renders, all accepted
    deployments = _names(objects, "Deployment")
    assert {f"fw-flamewatch-{s}" for s in ("ingester", "querier", "frontend", "symbolizer", "collector-0")} \
        <= deployments
    assert not {o["kind"] for o in objects} & {"ClusterRole", "ClusterRoleBinding", "Role"}  # discovery is off
    # the headless Services are stored as such: no cluster IP, so their names resolve to the pods themselves
    services = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "Service"}
    for component, port in (("ingester", 4101), ("querier", 4201)):
        spec = services[f"fw-flamewatch-{component}-headless"]
        assert (spec["clusterIP"], spec["clusterIPs"]) == ("None", ["None"])
        assert [(p["name"], p["port"]) for p in spec["ports"]] == [("grpc", port)]


def test_discovery_install_grants_the_collector_read_access_and_stores_a_config_it_loads(
        kube_api: KubeAPIServer) -> None:
    objects = _install(kube_api, "fwk", "flamewatch-discovery", "collector.kubernetesDiscovery.enabled=true")
    (role,) = [o for o in objects if o["kind"] == "ClusterRole"]
    assert {r for rule in role["rules"] for r in rule["resources"]} == {"pods", "services", "endpoints", "nodes",
                                                                        "endpointslices"}
    configmap = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("collector"))
    config = parse_config(configmap["data"]["shard-0.yaml"], "shard-0.yaml")
    assert [job.job_name for job in config.scrape_configs if job.kubernetes_sd_configs] == [
        "kubernetes-pods-cpu", "kubernetes-pods-memory"]
    # The collector's service account may now list pods cluster-wide: ask the server itself.
    review = k8s.AuthorizationV1Api(kube_api.api_client()).create_subject_access_review(k8s.V1SubjectAccessReview(
        spec=k8s.V1SubjectAccessReviewSpec(
            user="system:serviceaccount:flamewatch-discovery:fwk-flamewatch",
            resource_attributes=k8s.V1ResourceAttributes(verb="watch", resource="pods", namespace="elsewhere"))))
    assert review.status.allowed, review.status
