"""The Kubernetes discoverer in-process against a real API server: the `endpoints`, `service` and `node`
roles on objects the test creates; and, with neither `api_server` nor `kubeconfig_file`, authentication as a pod
would do it, with a service account token the server issued, `own_namespace` being the namespace of that
service account, and RBAC deciding what it may see."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from infra.kubeapi import KubeAPIServer
from kubernetes import client as k8s

from flamewatch.collector.config import KubernetesNamespaces, KubernetesSDConfig, KubernetesSelector
from flamewatch.collector.discovery import kubernetes as discovery

pytestmark = pytest.mark.kubernetes

NAMESPACE = "incluster"


def _grant_pod_reading(kube_api: KubeAPIServer, account: str) -> None:
    rbac = k8s.RbacAuthorizationV1Api(kube_api.api_client())
    rbac.create_namespaced_role(NAMESPACE, k8s.V1Role(
        metadata=k8s.V1ObjectMeta(name="read-pods"),
        rules=[k8s.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["list", "watch"])]))
    rbac.create_namespaced_role_binding(NAMESPACE, k8s.V1RoleBinding(
        metadata=k8s.V1ObjectMeta(name="read-pods"),
        role_ref=k8s.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="read-pods"),
        subjects=[k8s.RbacV1Subject(kind="ServiceAccount", name=account, namespace=NAMESPACE)]))


def _service_account_dir(kube_api: KubeAPIServer, tmp_path, account: str):
    """What the kubelet mounts into a pod: a token of the account, the cluster's CA, the namespace."""
    core = k8s.CoreV1Api(kube_api.api_client())
    core.create_namespaced_service_account(NAMESPACE, k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(name=account)))
    token = core.create_namespaced_service_account_token(
        account, NAMESPACE, k8s.AuthenticationV1TokenRequest(spec=k8s.V1TokenRequestSpec(audiences=[])))
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text(token.status.token)
    (directory / "ca.crt").write_bytes(kube_api.ca_file.read_bytes())
    (directory / "namespace").write_text(NAMESPACE)
    return directory


async def _groups_until(discoverer, want, timeout_s: float = 10.0):
    seen = []

    def up(groups):
        seen.append(groups)

    task = asyncio.create_task(discoverer.run(up))
    try:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while asyncio.get_running_loop().time() < deadline:
            if seen and want(seen[-1]):
                return seen[-1]
            await asyncio.sleep(0.1)
        raise AssertionError(f"timed out; last groups: {seen[-1] if seen else None}")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_in_cluster_service_account_sees_its_own_namespace(kube_api: KubeAPIServer, tmp_path, monkeypatch) -> None:
    kube_api.namespace(NAMESPACE)
    _grant_pod_reading(kube_api, "collector")
    monkeypatch.setattr(discovery, "SERVICE_ACCOUNT_DIR", _service_account_dir(kube_api, tmp_path, "collector"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(kube_api.port))
    core = k8s.CoreV1Api(kube_api.api_client())
    core.create_namespaced_pod(NAMESPACE, k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="app"),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="app", image="app:1")])))

    own = KubernetesSDConfig("pod", namespaces=KubernetesNamespaces(own_namespace=True))
    groups = asyncio.run(_groups_until(discovery.KubernetesDiscoverer("t/kubernetes/0", own),
                                       lambda groups: [g.source for g in groups] == [f"pod/{NAMESPACE}/app"]))
    assert groups[0].labels["__meta_kubernetes_pod_name"] == "app"

    # Every namespace is more than the Role grants: refused (403), retried, and no targets invented.
    everywhere = discovery.KubernetesDiscoverer("t/kubernetes/1", KubernetesSDConfig("pod"), backoff=(0.05, 0.1))
    with pytest.raises(AssertionError, match="last groups: None"):
        asyncio.run(_groups_until(everywhere, lambda groups: True, timeout_s=1.5))


def test_endpoints_and_service_roles(kube_api: KubeAPIServer) -> None:
    namespace = kube_api.namespace("roles")
    core = k8s.CoreV1Api(kube_api.api_client())
    core.create_namespaced_service(namespace, k8s.V1Service(
        metadata=k8s.V1ObjectMeta(name="web", labels={"tier": "front"}),
        spec=k8s.V1ServiceSpec(ports=[k8s.V1ServicePort(name="http", port=80)])))
    core.create_namespaced_endpoints(namespace, k8s.V1Endpoints(
        metadata=k8s.V1ObjectMeta(name="web"),
        subsets=[k8s.V1EndpointSubset(addresses=[k8s.V1EndpointAddress(ip="192.0.2.7")],
                                      ports=[k8s.CoreV1EndpointPort(name="http", port=8080)])]))
    names = KubernetesNamespaces(names=(namespace,))

    def config(role: str) -> KubernetesSDConfig:
        return KubernetesSDConfig(role, kubeconfig_file=str(kube_api.kubeconfig), namespaces=names)

    (endpoints,) = asyncio.run(_groups_until(discovery.KubernetesDiscoverer("t/kubernetes/0", config("endpoints")),
                                             lambda groups: len(groups) == 1))
    assert endpoints.source == f"endpoints/{namespace}/web"
    assert endpoints.labels["__meta_kubernetes_service_label_tier"] == "front"
    assert [(t["__address__"], t["__meta_kubernetes_endpoint_port_name"], t["__meta_kubernetes_endpoint_ready"])
            for t in endpoints.targets] == [("192.0.2.7:8080", "http", "true")]
    (service,) = asyncio.run(_groups_until(discovery.KubernetesDiscoverer("t/kubernetes/1", config("service")),
                                           lambda groups: len(groups) == 1))
    assert [t["__address__"] for t in service.targets] == [f"web.{namespace}.svc:80"]
    assert service.targets[0]["__meta_kubernetes_service_cluster_ip"].startswith("10.96.")


def test_node_role_finds_the_kubelet_port_and_ignores_namespaces(kube_api: KubeAPIServer) -> None:
    core = k8s.CoreV1Api(kube_api.api_client())
    core.create_node(k8s.V1Node(metadata=k8s.V1ObjectMeta(name="worker-7", labels={"pool": "profiling"})))
    core.patch_node_status("worker-7", {"status": {
        "addresses": [{"type": "Hostname", "address": "worker-7"}, {"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}})
    config = KubernetesSDConfig("node", kubeconfig_file=str(kube_api.kubeconfig),
                                namespaces=KubernetesNamespaces(names=("not-for-nodes",)),
                                selectors=(KubernetesSelector("node", label="pool=profiling"),))
    try:
        (group,) = asyncio.run(_groups_until(discovery.KubernetesDiscoverer("t/kubernetes/2", config),
                                             lambda groups: len(groups) == 1 and groups[0].targets))
    finally:
        core.delete_node("worker-7")
    assert group.source == "node/worker-7"
    assert list(group.targets) == [{"__address__": "127.0.0.1:10250", "instance": "worker-7"}]
    assert group.labels["__meta_kubernetes_node_label_pool"] == "profiling"
    assert group.labels["__meta_kubernetes_node_address_Hostname"] == "worker-7"
