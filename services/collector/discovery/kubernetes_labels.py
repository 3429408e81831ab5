"""Kubernetes API objects as target groups with the `__meta_kubernetes_*` labels Prometheus documents.

Pure functions over the `kubernetes` client's model objects (`V1Pod`, `V1EndpointSlice`, `V1Endpoints`,
`V1Service`, `V1Node`); the watching lives in `kubernetes.py`. One group per object, its source
`<role>/<namespace>/<name>`:

- pod: a target per container port (`<pod IP>:<port>`), a port-less target on the pod IP for a container
  without ports, nothing until the pod has an IP.
- endpointslice / endpoints: a target per endpoint address and port, with the labels of the pod it points
  to and of the service the object belongs to; container ports of those pods that no endpoint names get
  targets of their own, as in Prometheus.
- service: a target per port at `<service>.<namespace>.svc:<port>`.
- node: one target at the node's address and its kubelet's port, `instance` set to the node's name; the
  address is the first of its InternalIP, InternalDNS, ExternalIP, ExternalDNS, LegacyHostIP and Hostname
  addresses (none: no target). Nodes have no namespace: the source is `node/<name>`.

Label and annotation names are sanitised the Prometheus way: every character outside [a-zA-Z0-9_]
becomes `_` (`app.kubernetes.io/name` -> `app_kubernetes_io_name`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flamewatch.collector.targetgroup import TargetGroup
from flamewatch.labels.sanitize import name_part

__all__ = [
    "ADDRESS", "endpoints_group", "endpointslice_group", "node_group", "object_key", "pod_group", "pod_labels",
    "service_group",
]

ADDRESS = "__address__"
META = "__meta_kubernetes_"
NAMESPACE = META + "namespace"

PodLookup = Callable[[str, str], Any]  # (namespace, name) -> V1Pod or None
ServiceLookup = Callable[[str, str], Any]  # (namespace, name) -> V1Service or None

SERVICE_NAME_LABEL = "kubernetes.io/service-name"  # how an EndpointSlice names its service


def object_key(obj: Any) -> tuple[str, str]:
    return obj.metadata.namespace or "", obj.metadata.name


def _metadata_labels(metadata: Any, role: str) -> dict[str, str]:
    """`_label_<n>`, `_labelpresent_<n>`, `_annotation_<n>`, `_annotationpresent_<n>` of one object."""
    out: dict[str, str] = {}
    for kind, values in (("label", metadata.labels), ("annotation", metadata.annotations)):
        for name, value in (values or {}).items():
            clean = name_part(name)
            out[f"{META}{role}_{kind}_{clean}"] = value
            out[f"{META}{role}_{kind}present_{clean}"] = "true"
    return out


def _group(role: str, obj: Any, targets: list[dict[str, str]], labels: dict[str, str]) -> TargetGroup:
    namespace, name = object_key(obj)
    return TargetGroup(f"{role}/{namespace}/{name}", tuple(targets), labels)


def _join_host_port(host: str, port: int | str) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# ------------------------------------------------------------------------------------------------- pods


def pod_labels(pod: Any) -> dict[str, str]:
    """The labels every target of a pod carries, in any role."""
    status, spec = pod.status, pod.spec
    labels = {
        NAMESPACE: pod.metadata.namespace or "",
        META + "pod_name": pod.metadata.name,
        META + "pod_ip": (status and status.pod_ip) or "",
        META + "pod_ready": _pod_ready(status),
        META + "pod_phase": (status and status.phase) or "",
        META + "pod_node_name": (spec and spec.node_name) or "",
        META + "pod_host_ip": (status and status.host_ip) or "",
        META + "pod_uid": pod.metadata.uid or "",
        **_metadata_labels(pod.metadata, "pod"),
    }
    controller = next((ref for ref in pod.metadata.owner_references or () if ref.controller), None)
    if controller is not None:
        labels[META + "pod_controller_kind"] = controller.kind
        labels[META + "pod_controller_name"] = controller.name
    return labels


def _pod_ready(status: Any) -> str:
    for condition in (status and status.conditions) or ():
        if condition.type == "Ready":
            return condition.status.lower()
    return "unknown"


def _containers(pod: Any) -> list[tuple[Any, bool]]:
    """(container, is init container): init containers too, as Prometheus lists them."""
    spec = pod.spec
    if spec is None:
        return []
    return [(c, True) for c in spec.init_containers or ()] + [(c, False) for c in spec.containers or ()]


def _container_labels(pod: Any, container: Any, init: bool) -> dict[str, str]:
    labels = {
        META + "pod_container_name": container.name,
        META + "pod_container_image": container.image or "",
        META + "pod_container_init": "true" if init else "false",
    }
    container_id = _container_id(pod, container.name, init)
    if container_id:
        labels[META + "pod_container_id"] = container_id
    return labels


def _container_id(pod: Any, name: str, init: bool) -> str:
    statuses = (pod.status.init_container_statuses if init else pod.status.container_statuses) if pod.status else None
    return next((s.container_id or "" for s in statuses or () if s.name == name), "")


def _port_labels(port: Any) -> dict[str, str]:
    return {
        META + "pod_container_port_name": port.name or "",
        META + "pod_container_port_number": str(port.container_port),
        META + "pod_container_port_protocol": port.protocol or "TCP",
    }


def _pod_targets(pod: Any, ip: str) -> list[dict[str, str]]:
    targets = []
    for container, init in _containers(pod):
        base = _container_labels(pod, container, init)
        if not container.ports:  # no port to go by: relabeling may add one to the bare pod IP
            targets.append({ADDRESS: ip, **base})
        for port in container.ports or ():
            targets.append({ADDRESS: _join_host_port(ip, port.container_port), **base, **_port_labels(port)})
    return targets


def pod_group(pod: Any) -> TargetGroup:
    ip = (pod.status and pod.status.pod_ip) or ""
    return _group("pod", pod, _pod_targets(pod, ip) if ip else [], pod_labels(pod))


# -------------------------------------------------------------------------------------------- services


def _service_object_labels(service: Any) -> dict[str, str]:
    return {META + "service_name": service.metadata.name, **_metadata_labels(service.metadata, "service")}


def service_group(service: Any) -> TargetGroup:
    spec = service.spec
    common = {META + "service_type": spec.type or ""}
    if spec.type == "ExternalName":
        common[META + "service_external_name"] = spec.external_name or ""
    else:
        common[META + "service_cluster_ip"] = spec.cluster_ip or ""
    namespace, name = object_key(service)
    targets = [{ADDRESS: f"{name}.{namespace}.svc:{port.port}",
                META + "service_port_name": port.name or "",
                META + "service_port_number": str(port.port),
                META + "service_port_protocol": port.protocol or "TCP",
                **common} for port in spec.ports or ()]
    labels = {NAMESPACE: namespace, **_service_object_labels(service)}
    return _group("service", service, targets, labels)


# ------------------------------------------------------------------------------------------------ nodes

# The address a node is reached at: the first type it has, in this order (Prometheus's order).
NODE_ADDRESS_TYPES = ("InternalIP", "InternalDNS", "ExternalIP", "ExternalDNS", "LegacyHostIP", "Hostname")


def node_group(node: Any) -> TargetGroup:
    status = node.status
    first: dict[str, str] = {}  # address type -> its first address
    for address in (status and status.addresses) or ():
        first.setdefault(address.type, address.address)
    labels = {META + "node_name": node.metadata.name,
              META + "node_provider_id": (node.spec and node.spec.provider_id) or "",
              **_metadata_labels(node.metadata, "node"),
              **{f"{META}node_address_{name_part(kind)}": value for kind, value in first.items()}}
    host = next((first[kind] for kind in NODE_ADDRESS_TYPES if kind in first), None)
    endpoints = status and status.daemon_endpoints
    port = endpoints and endpoints.kubelet_endpoint and endpoints.kubelet_endpoint.port
    targets = [{ADDRESS: _join_host_port(host, port or 0), "instance": node.metadata.name}] if host else []
    return TargetGroup(f"node/{node.metadata.name}", tuple(targets), labels)


# ---------------------------------------------------------------------------- endpointslices, endpoints


def _pod_of(ref: Any, namespace: str, pods: PodLookup) -> Any:
    if ref is None or ref.kind != "Pod":
        return None
    return pods(ref.namespace or namespace, ref.name)


def _pod_target_labels(pod: Any, port_number: int | None, port_protocol: str | None) -> dict[str, str]:
    """A pod's labels plus those of its container serving the endpoint's port, when one declares it."""
    labels = pod_labels(pod)
    for container, init in _containers(pod):
        for port in container.ports or ():
            if port.container_port == port_number and (port.protocol or "TCP") == (port_protocol or "TCP"):
                return {**labels, **_container_labels(pod, container, init), **_port_labels(port)}
    return labels


def _endpoint_pod_labels(pod: Any, port: Any, seen_pods: dict[str, Any], covered: set[tuple[str, int]]
                         ) -> dict[str, str]:
    """The labels of the pod behind an endpoint's address, noting the pod and its port as covered (the
    pod's other container ports get targets of their own, see `_extra_pod_targets`)."""
    key = pod.metadata.uid or pod.metadata.name
    seen_pods[key] = pod
    covered.add((key, port.port))
    return _pod_target_labels(pod, port.port, port.protocol)


def _extra_pod_targets(seen_pods: Mapping[str, Any], covered: set[tuple[str, int]]) -> list[dict[str, str]]:
    """Container ports of the endpoints' pods that no endpoint names: Prometheus adds them as targets too."""
    targets = []
    for pod in seen_pods.values():
        ip = (pod.status and pod.status.pod_ip) or ""
        if not ip:
            continue
        for container, init in _containers(pod):
            for port in container.ports or ():
                if (pod.metadata.uid or pod.metadata.name, port.container_port) in covered:
                    continue
                targets.append({ADDRESS: _join_host_port(ip, port.container_port), **pod_labels(pod),
                                **_container_labels(pod, container, init), **_port_labels(port)})
    return targets


def _service_labels(namespace: str, name: str, services: ServiceLookup) -> dict[str, str]:
    service = services(namespace, name) if name else None
    if service is None:
        return {META + "service_name": name} if name else {}
    return _service_object_labels(service)


def _bool(value: bool | None) -> str:
    return "true" if value else "false"


def endpointslice_group(eps: Any, pods: PodLookup, services: ServiceLookup) -> TargetGroup:
    namespace, _ = object_key(eps)
    prefix = META + "endpointslice_"
    labels = {NAMESPACE: namespace, prefix + "name": eps.metadata.name,
              prefix + "address_type": eps.address_type or "",
              **_metadata_labels(eps.metadata, "endpointslice"),
              **_service_labels(namespace, (eps.metadata.labels or {}).get(SERVICE_NAME_LABEL, ""), services)}
    targets: list[dict[str, str]] = []
    seen_pods: dict[str, Any] = {}
    covered: set[tuple[str, int]] = set()
    for endpoint in eps.endpoints or ():
        pod = _pod_of(endpoint.target_ref, namespace, pods)
        for port in eps.ports or ():
            for address in endpoint.addresses or ():
                target = _slice_endpoint_labels(endpoint, prefix)
                target.update({ADDRESS: _join_host_port(address, port.port if port.port is not None else ""),
                               prefix + "port_name": port.name or "",
                               prefix + "port_protocol": port.protocol or "TCP",
                               prefix + "port": str(port.port if port.port is not None else ""),
                               })
                if port.app_protocol:
                    target[prefix + "port_app_protocol"] = port.app_protocol
                if pod is not None:
                    target.update(_endpoint_pod_labels(pod, port, seen_pods, covered))
                targets.append(target)
    return _group("endpointslice", eps, targets + _extra_pod_targets(seen_pods, covered), labels)


def _slice_endpoint_labels(endpoint: Any, prefix: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    ref = endpoint.target_ref
    if ref is not None:
        labels[prefix + "address_target_kind"] = ref.kind or ""
        labels[prefix + "address_target_name"] = ref.name or ""
    conditions = endpoint.conditions
    if conditions is not None:
        for name in ("ready", "serving", "terminating"):
            value = getattr(conditions, name)
            if value is not None:
                labels[f"{prefix}endpoint_conditions_{name}"] = _bool(value)
    for key, value in (("endpoint_hostname", endpoint.hostname), ("endpoint_node_name", endpoint.node_name),
                       ("endpoint_zone", endpoint.zone)):
        if value:
            labels[prefix + key] = value
    return labels


def endpoints_group(endpoints: Any, pods: PodLookup, services: ServiceLookup) -> TargetGroup:
    namespace, name = object_key(endpoints)
    labels = {NAMESPACE: namespace, META + "endpoints_name": name,
              **_metadata_labels(endpoints.metadata, "endpoints"), **_service_labels(namespace, name, services)}
    targets: list[dict[str, str]] = []
    seen_pods: dict[str, Any] = {}
    covered: set[tuple[str, int]] = set()
    for subset in endpoints.subsets or ():
        addresses = [(a, "true") for a in subset.addresses or ()] + \
                    [(a, "false") for a in subset.not_ready_addresses or ()]
        for port in subset.ports or ():
            for address, ready in addresses:
                target = {ADDRESS: _join_host_port(address.ip, port.port),
                          META + "endpoint_port_name": port.name or "",
                          META + "endpoint_port_protocol": port.protocol or "TCP",
                          META + "endpoint_ready": ready}
                target.update(_address_labels(address))
                pod = _pod_of(address.target_ref, namespace, pods)
                if pod is not None:
                    target.update(_endpoint_pod_labels(pod, port, seen_pods, covered))
                targets.append(target)
    return _group("endpoints", endpoints, targets + _extra_pod_targets(seen_pods, covered), labels)


def _address_labels(address: Any) -> dict[str, str]:
    labels = {}
    if address.hostname:
        labels[META + "endpoint_hostname"] = address.hostname
    if address.node_name:
        labels[META + "endpoint_node_name"] = address.node_name
    if address.target_ref is not None:
        labels[META + "endpoint_address_target_kind"] = address.target_ref.kind or ""
        labels[META + "endpoint_address_target_name"] = address.target_ref.name or ""
    return labels
