"""Kubernetes objects (built with the client's model classes) become the target groups and
`__meta_kubernetes_*` labels that Prometheus documents for each role; events update only what they reach."""

import threading

from kubernetes.client import (
    CoreV1EndpointPort,
    DiscoveryV1EndpointPort,
    V1Container,
    V1ContainerPort,
    V1ContainerStatus,
    V1DaemonEndpoint,
    V1Endpoint,
    V1EndpointAddress,
    V1EndpointConditions,
    V1Endpoints,
    V1EndpointSlice,
    V1EndpointSubset,
    V1Node,
    V1NodeAddress,
    V1NodeDaemonEndpoints,
    V1NodeSpec,
    V1NodeStatus,
    V1ObjectMeta,
    V1ObjectReference,
    V1OwnerReference,
    V1Pod,
    V1PodCondition,
    V1PodSpec,
    V1PodStatus,
    V1Service,
    V1ServicePort,
    V1ServiceSpec,
)

from flamewatch.collector.config import KubernetesSDConfig
from flamewatch.collector.discovery.kubernetes import KubernetesDiscoverer
from flamewatch.collector.discovery.kubernetes_labels import (
    endpoints_group,
    endpointslice_group,
    node_group,
    pod_group,
    service_group,
)
from flamewatch.collector.discovery.kubernetes_watch import Change, Informer, Replace
from flamewatch.collector.targetgroup import TargetGroup

M = "__meta_kubernetes_"


def pod(name="web-1", ip="10.1.2.3", labels=None, ports=True, ready="True"):
    container_ports = [V1ContainerPort(name="pprof", container_port=6060, protocol="TCP"),
                       V1ContainerPort(container_port=8080)] if ports else None
    return V1Pod(
        metadata=V1ObjectMeta(name=name, namespace="shop", uid=f"uid-{name}",
                              labels={"app.kubernetes.io/name": "web"} if labels is None else labels,
                              annotations={"profiles.grafana.com/cpu.scrape": "true"},
                              owner_references=[V1OwnerReference(api_version="apps/v1", kind="ReplicaSet",
                                                                 name="web-6d4", uid="rs", controller=True)]),
        spec=V1PodSpec(node_name="node-a", containers=[V1Container(name="app", image="web:1.2",
                                                                   ports=container_ports)],
                       init_containers=[V1Container(name="setup", image="busybox")]),
        status=V1PodStatus(phase="Running", pod_ip=ip, host_ip="192.168.0.7",
                           conditions=[V1PodCondition(type="Ready", status=ready)],
                           container_statuses=[V1ContainerStatus(name="app", container_id="containerd://abc",
                                                                 image="web:1.2", image_id="", ready=True,
                                                                 restart_count=0)]),
    )


POD_LABELS = {
    M + "namespace": "shop",
    M + "pod_name": "web-1",
    M + "pod_ip": "10.1.2.3",
    M + "pod_ready": "true",
    M + "pod_phase": "Running",
    M + "pod_node_name": "node-a",
    M + "pod_host_ip": "192.168.0.7",
    M + "pod_uid": "uid-web-1",
    M + "pod_label_app_kubernetes_io_name": "web",
    M + "pod_labelpresent_app_kubernetes_io_name": "true",
    M + "pod_annotation_profiles_grafana_com_cpu_scrape": "true",
    M + "pod_annotationpresent_profiles_grafana_com_cpu_scrape": "true",
    M + "pod_controller_kind": "ReplicaSet",
    M + "pod_controller_name": "web-6d4",
}
APP = {M + "pod_container_name": "app", M + "pod_container_image": "web:1.2", M + "pod_container_init": "false",
       M + "pod_container_id": "containerd://abc"}
SETUP = {M + "pod_container_name": "setup", M + "pod_container_image": "busybox", M + "pod_container_init": "true"}
PPROF_PORT = {M + "pod_container_port_name": "pprof", M + "pod_container_port_number": "6060",
              M + "pod_container_port_protocol": "TCP"}
HTTP_PORT = {M + "pod_container_port_name": "", M + "pod_container_port_number": "8080",
             M + "pod_container_port_protocol": "TCP"}


def service(name="web"):
    return V1Service(
        metadata=V1ObjectMeta(name=name, namespace="shop", labels={"team": "a"}, annotations={"owner": "x"}),
        spec=V1ServiceSpec(type="ClusterIP", cluster_ip="10.96.0.10",
                           ports=[V1ServicePort(name="http", port=80, protocol="TCP")]))


SERVICE_LABELS = {M + "service_name": "web", M + "service_label_team": "a", M + "service_labelpresent_team": "true",
                  M + "service_annotation_owner": "x", M + "service_annotationpresent_owner": "true"}


def endpoint_slice(pod_name="web-1", ip="10.1.2.3"):
    return V1EndpointSlice(
        address_type="IPv4",
        metadata=V1ObjectMeta(name="web-abcde", namespace="shop", labels={"kubernetes.io/service-name": "web"}),
        endpoints=[V1Endpoint(addresses=[ip], conditions=V1EndpointConditions(ready=True, serving=True,
                                                                              terminating=False),
                              node_name="node-a", zone="z1",
                              target_ref=V1ObjectReference(kind="Pod", name=pod_name, namespace="shop"))],
        ports=[DiscoveryV1EndpointPort(name="pprof", port=6060, protocol="TCP")])


def test_pod_role_gives_a_target_per_container_port_and_a_bare_one_per_container_without_ports():
    group = pod_group(pod())
    assert group.source == "pod/shop/web-1"
    assert group.labels == POD_LABELS
    assert list(group.targets) == [
        {"__address__": "10.1.2.3", **SETUP},
        {"__address__": "10.1.2.3:6060", **APP, **PPROF_PORT},
        {"__address__": "10.1.2.3:8080", **APP, **HTTP_PORT},
    ]


def test_pod_without_an_ip_has_no_targets_yet_and_readiness_is_lowercased():
    assert pod_group(pod(ip=None)).targets == ()
    assert pod_group(pod(ready="False")).labels[M + "pod_ready"] == "false"
    no_ports = pod_group(pod(ports=False))
    assert [t["__address__"] for t in no_ports.targets] == ["10.1.2.3", "10.1.2.3"]


def test_service_role_addresses_the_service_dns_name_per_port():
    group = service_group(service())
    assert group.source == "service/shop/web"
    assert group.labels == {M + "namespace": "shop", **SERVICE_LABELS}
    assert list(group.targets) == [{
        "__address__": "web.shop.svc:80", M + "service_port_name": "http", M + "service_port_number": "80",
        M + "service_port_protocol": "TCP", M + "service_type": "ClusterIP", M + "service_cluster_ip": "10.96.0.10",
    }]


def node(addresses: list[tuple[str, str]], kubelet_port: int | None = 10250) -> V1Node:
    return V1Node(
        metadata=V1ObjectMeta(name="worker-1", labels={"kubernetes.io/arch": "amd64"},
                              annotations={"node.alpha.kubernetes.io/ttl": "0"}),
        spec=V1NodeSpec(provider_id="aws:///eu-west-1a/i-0abc"),
        status=V1NodeStatus(addresses=[V1NodeAddress(type=t, address=a) for t, a in addresses],
                            daemon_endpoints=V1NodeDaemonEndpoints(
                                kubelet_endpoint=V1DaemonEndpoint(port=kubelet_port))))


def test_node_role_targets_the_kubelet_at_the_first_address_by_type_with_the_node_as_instance():
    group = node_group(node([("Hostname", "worker-1"), ("ExternalIP", "203.0.113.9"), ("InternalIP", "10.0.0.4"),
                             ("InternalIP", "10.0.0.5")]))
    assert group.source == "node/worker-1"
    assert group.labels == {
        M + "node_name": "worker-1", M + "node_provider_id": "aws:///eu-west-1a/i-0abc",
        M + "node_label_kubernetes_io_arch": "amd64", M + "node_labelpresent_kubernetes_io_arch": "true",
        M + "node_annotation_node_alpha_kubernetes_io_ttl": "0",
        M + "node_annotationpresent_node_alpha_kubernetes_io_ttl": "true",
        M + "node_address_Hostname": "worker-1", M + "node_address_ExternalIP": "203.0.113.9",
        M + "node_address_InternalIP": "10.0.0.4"}
    assert list(group.targets) == [{"__address__": "10.0.0.4:10250", "instance": "worker-1"}]
    # no InternalIP: the next type in Prometheus's order; IPv6 in brackets
    assert node_group(node([("Hostname", "worker-1"), ("ExternalIP", "2001:db8::1")])).targets == (
        {"__address__": "[2001:db8::1]:10250", "instance": "worker-1"},)
    # no address yet: no target, but the group is there for its labels
    assert node_group(node([])).targets == ()


def test_endpointslice_targets_carry_the_slice_endpoint_pod_and_service_labels():
    pods = {("shop", "web-1"): pod()}
    group = endpointslice_group(endpoint_slice(), lambda ns, n: pods.get((ns, n)),
                                lambda ns, n: service() if (ns, n) == ("shop", "web") else None)
    assert group.source == "endpointslice/shop/web-abcde"
    assert group.labels == {
        M + "namespace": "shop", M + "endpointslice_name": "web-abcde", M + "endpointslice_address_type": "IPv4",
        M + "endpointslice_label_kubernetes_io_service_name": "web",
        M + "endpointslice_labelpresent_kubernetes_io_service_name": "true", **SERVICE_LABELS,
    }
    slice_target, extra = group.targets
    assert slice_target == {
        "__address__": "10.1.2.3:6060",
        M + "endpointslice_address_target_kind": "Pod", M + "endpointslice_address_target_name": "web-1",
        M + "endpointslice_endpoint_conditions_ready": "true",
        M + "endpointslice_endpoint_conditions_serving": "true",
        M + "endpointslice_endpoint_conditions_terminating": "false",
        M + "endpointslice_endpoint_node_name": "node-a", M + "endpointslice_endpoint_zone": "z1",
        M + "endpointslice_port_name": "pprof", M + "endpointslice_port_protocol": "TCP",
        M + "endpointslice_port": "6060",
        **POD_LABELS, **APP, **PPROF_PORT,
    }
    # The pod's other container port, which the slice does not name, is a target of its own.
    assert extra == {"__address__": "10.1.2.3:8080", **POD_LABELS, **APP, **HTTP_PORT}


def test_endpoints_role_labels_ready_and_not_ready_addresses():
    endpoints = V1Endpoints(
        metadata=V1ObjectMeta(name="web", namespace="shop"),
        subsets=[V1EndpointSubset(
            addresses=[V1EndpointAddress(ip="10.1.2.3", node_name="node-a",
                                         target_ref=V1ObjectReference(kind="Pod", name="web-1", namespace="shop"))],
            not_ready_addresses=[V1EndpointAddress(ip="10.1.2.4")],
            ports=[CoreV1EndpointPort(name="pprof", port=6060, protocol="TCP")])])
    pods = {("shop", "web-1"): pod(ports=False)}
    group = endpoints_group(endpoints, lambda ns, n: pods.get((ns, n)), lambda ns, n: service())
    assert group.labels == {M + "namespace": "shop", M + "endpoints_name": "web", **SERVICE_LABELS}
    ready, not_ready = group.targets
    assert ready == {"__address__": "10.1.2.3:6060", M + "endpoint_port_name": "pprof",
                     M + "endpoint_port_protocol": "TCP", M + "endpoint_ready": "true",
                     M + "endpoint_node_name": "node-a", M + "endpoint_address_target_kind": "Pod",
                     M + "endpoint_address_target_name": "web-1", **POD_LABELS}
    assert not_ready == {"__address__": "10.1.2.4:6060", M + "endpoint_port_name": "pprof",
                         M + "endpoint_port_protocol": "TCP", M + "endpoint_ready": "false"}


def _informer(kind: str, namespace: str = "") -> Informer:
    return Informer("job/kubernetes/0", kind, namespace, lambda: None, {}, lambda event: None, threading.Event(),
                    resync_s=60)


def test_events_rebuild_only_the_groups_they_reach_and_a_deletion_is_sent_once_empty():
    discoverer = KubernetesDiscoverer("job/kubernetes/0", KubernetesSDConfig("endpointslice"))
    slices, pods, services = _informer("endpointslice"), _informer("pod"), _informer("service")
    discoverer.apply(Replace(pods, []))
    discoverer.apply(Replace(services, [service()]))
    discoverer.apply(Replace(slices, [endpoint_slice()]))
    (group,) = discoverer.groups()
    assert "__meta_kubernetes_pod_name" not in group.targets[0]  # the pod is not known yet

    discoverer.apply(Change(pods, False, pod()))  # reaches the slice through the pod it names
    (group,) = discoverer.groups()
    assert group.targets[0][M + "pod_label_app_kubernetes_io_name"] == "web"

    discoverer.apply(Change(pods, False, pod(labels={"app.kubernetes.io/name": "shop"})))
    assert discoverer.groups()[0].targets[0][M + "pod_label_app_kubernetes_io_name"] == "shop"

    relabeled = service()
    relabeled.metadata.labels = {"team": "b"}
    discoverer.apply(Change(services, False, relabeled))  # reaches the slice through the service it names
    assert discoverer.groups()[0].labels[M + "service_label_team"] == "b"
    discoverer.apply(Change(services, True, relabeled))
    assert M + "service_label_team" not in discoverer.groups()[0].labels

    discoverer.apply(Change(slices, True, endpoint_slice()))
    assert discoverer.groups() == [TargetGroup("endpointslice/shop/web-abcde", (), {})]
    discoverer._gone.clear()  # what run() does once the update is sent
    assert discoverer.groups() == []
    assert not discoverer._refs  # nothing left pointing at the deleted slice


def test_a_relist_of_one_namespace_removes_only_that_namespaces_vanished_objects():
    discoverer = KubernetesDiscoverer("job/kubernetes/0", KubernetesSDConfig("pod"))
    shop, other = _informer("pod", "shop"), _informer("pod", "other")
    elsewhere = pod(name="db-1")
    elsewhere.metadata.namespace = "other"
    discoverer.apply(Replace(shop, [pod()]))
    discoverer.apply(Replace(other, [elsewhere]))
    assert [g.source for g in discoverer.groups()] == ["pod/other/db-1", "pod/shop/web-1"]
    discoverer.apply(Replace(shop, []))
    assert [(g.source, len(g.targets)) for g in discoverer.groups()] == [("pod/shop/web-1", 0), ("pod/other/db-1", 3)]
