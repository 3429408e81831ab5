"""Kubernetes discovery: pods, endpointslices, endpoints, services or nodes, with Prometheus's meta labels.

A `KubernetesDiscoverer` runs one `Informer` thread (`kubernetes_watch.py`) per object kind and namespace
its role needs: the role's own kind, plus pods and services for `endpoints` and `endpointslice`, whose
targets carry the labels of the pod behind each address and of the service. The event loop keeps the
objects, rebuilds only the groups an event touches (a pod's change reaches the endpointslices that name
it through a reverse index, never through a re-list) and sends the full list of groups after each burst
of events. A deleted object's group is sent once with no targets, then forgotten.

The client comes from `kubeconfig_file`, from `api_server` (no authentication), or, with neither, from
the pod's service account: `KUBERNETES_SERVICE_HOST`/`_PORT` and the token and CA under
`SERVICE_ACCOUNT_DIR` (the token is re-read as the kubelet rotates it).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.incluster_config import InClusterConfigLoader

from flamewatch.collector.config import KubernetesSDConfig
from flamewatch.collector.discovery import Up
from flamewatch.collector.discovery.kubernetes_labels import (
    endpoints_group,
    endpointslice_group,
    node_group,
    object_key,
    pod_group,
    service_group,
)
from flamewatch.collector.discovery.kubernetes_watch import Change, Informer, ListCall, Replace, poster
from flamewatch.collector.targetgroup import TargetGroup

__all__ = ["RESYNC_S", "SERVICE_ACCOUNT_DIR", "KubernetesDiscoverer", "informers", "kubernetes_discoverer"]

RESYNC_S = 600.0
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")

Key = tuple[str, str]  # (namespace, name)

# role -> the object kinds it watches; the first is the one its groups are built from.
_KINDS = {"pod": ("pod",), "service": ("service",), "endpoints": ("endpoints", "pod", "service"),
          "endpointslice": ("endpointslice", "pod", "service"), "node": ("node",)}
_CLUSTER_SCOPED = {"node"}  # listed across the cluster whatever `namespaces` says

# kind -> (API class, method for one namespace, method for all namespaces)
_LISTS = {
    "pod": (k8s.CoreV1Api, "list_namespaced_pod", "list_pod_for_all_namespaces"),
    "service": (k8s.CoreV1Api, "list_namespaced_service", "list_service_for_all_namespaces"),
    "endpoints": (k8s.CoreV1Api, "list_namespaced_endpoints", "list_endpoints_for_all_namespaces"),
    "endpointslice": (k8s.DiscoveryV1Api, "list_namespaced_endpoint_slice", "list_endpoint_slice_for_all_namespaces"),
    "node": (k8s.CoreV1Api, "", "list_node"),
}


def kubernetes_discoverer(name: str, config: KubernetesSDConfig) -> KubernetesDiscoverer:
    """The discoverer of one `kubernetes_sd_configs` entry."""
    return KubernetesDiscoverer(name, config)


def api_client(config: KubernetesSDConfig) -> k8s.ApiClient:
    """A client for the configured API server; raises ConfigException for a bad kubeconfig or missing token."""
    configuration = k8s.Configuration()
    if config.api_server:
        configuration.host = config.api_server
    else:
        where = f"kubeconfig {config.kubeconfig_file}" if config.kubeconfig_file else "in-cluster configuration"
        try:
            if config.kubeconfig_file:
                k8s_config.load_kube_config(config_file=config.kubeconfig_file, client_configuration=configuration)
            else:
                InClusterConfigLoader(token_filename=str(SERVICE_ACCOUNT_DIR / "token"),
                                      cert_filename=str(SERVICE_ACCOUNT_DIR / "ca.crt")).load_and_set(configuration)
        except (k8s_config.ConfigException, OSError, ValueError) as exc:  # a file that is not YAML: ValueError
            raise k8s_config.ConfigException(f"{where}: {exc}") from exc
    configuration.retries = False  # the informer retries with backoff and says why; no silent waits in between
    return k8s.ApiClient(configuration)


def own_namespace(config: KubernetesSDConfig) -> str:
    """The collector's namespace: its service account's, else the kubeconfig context's, else `default`."""
    path = SERVICE_ACCOUNT_DIR / "namespace"
    if path.is_file():
        return path.read_text().strip()
    if config.kubeconfig_file:
        try:
            _, context = k8s_config.list_kube_config_contexts(config_file=config.kubeconfig_file)
            return context.get("context", {}).get("namespace") or "default"
        except (k8s_config.ConfigException, OSError):
            return "default"  # the informers report the broken kubeconfig, with backoff
    return "default"


def informers(name: str, config: KubernetesSDConfig, kinds: tuple[str, ...], post: Callable[[Replace | Change], None],
              stop: threading.Event, **options: Any) -> list[Informer]:
    """One informer per kind and namespace of `config` (its API server, credentials, namespaces and
    selectors), posting to `post`; `options` are the Informer's (resync_s, backoff)."""
    namespaces = list(config.namespaces.names)
    if config.namespaces.own_namespace:
        namespaces.append(own_namespace(config))
    connect = functools.cache(lambda: api_client(config))
    return [Informer(name, kind, namespace, functools.partial(_lister, connect, kind, namespace),
                     _selectors(config, kind), post, stop, **options)
            for kind in kinds
            for namespace in ([""] if kind in _CLUSTER_SCOPED else sorted(set(namespaces)) or [""])]


def _lister(connect: Callable[[], k8s.ApiClient], kind: str, namespace: str) -> ListCall:
    try:
        api_class, namespaced, everywhere = _LISTS[kind]
        api = api_class(connect())
    except Exception:
        connect.cache_clear()  # type: ignore[attr-defined]  # a fixed kubeconfig is read again next time
        raise
    if namespace:
        return getattr(api, namespaced), (namespace,)
    return getattr(api, everywhere), ()


def _selectors(config: KubernetesSDConfig, kind: str) -> dict[str, str]:
    for selector in config.selectors:
        if selector.role == kind:
            return {key: value for key, value in (("label_selector", selector.label),
                                                  ("field_selector", selector.field)) if value}
    return {}


class KubernetesDiscoverer:
    def __init__(self, name: str, config: KubernetesSDConfig, *, resync_s: float = RESYNC_S,
                 backoff: tuple[float, float] | None = None):
        self.name, self.config = name, config
        self.role = config.role
        self._resync_s, self._backoff = resync_s, backoff
        self._objects: dict[str, dict[Key, Any]] = defaultdict(dict)  # kind -> key -> object
        self._groups: dict[Key, TargetGroup] = {}  # main object -> its group
        self._refs: dict[tuple[str, Key], set[Key]] = defaultdict(set)  # (kind, key) -> main objects naming it
        self._named: dict[Key, set[tuple[str, Key]]] = defaultdict(set)  # main object -> what it names
        self._gone: list[TargetGroup] = []  # empty groups of deleted objects, sent once

    def __repr__(self) -> str:
        return f"KubernetesDiscoverer({self.name!r}, role={self.role})"

    async def run(self, up: Up) -> None:
        queue: asyncio.Queue[Replace | Change] = asyncio.Queue()
        stop = threading.Event()
        informers = self._informers(poster(asyncio.get_running_loop(), queue, stop), stop)
        waiting = set(informers)  # the first `up` comes once every informer has listed
        for informer in informers:
            informer.start()
        try:
            last: list[TargetGroup] | None = None
            while True:
                events = [await queue.get()]
                while not queue.empty():
                    events.append(queue.get_nowait())
                for event in events:
                    self.apply(event)
                    if isinstance(event, Replace):
                        waiting.discard(event.informer)
                if not waiting:
                    groups = self.groups()
                    if groups != last:
                        up(groups)
                        last = groups
                    self._gone.clear()
        finally:
            stop.set()

    def groups(self) -> list[TargetGroup]:
        """Every current group, plus the empty groups of objects deleted since the last call."""
        return [*self._gone, *(self._groups[key] for key in sorted(self._groups))]

    # ---------------------------------------------------------------------------------- informers

    def _informers(self, post: Callable[[Replace | Change], None], stop: threading.Event) -> list[Informer]:
        options = {"resync_s": self._resync_s} | ({"backoff": self._backoff} if self._backoff else {})
        return informers(self.name, self.config, _KINDS[self.role], post, stop, **options)

    # ------------------------------------------------------------------------------------- events

    def apply(self, event: Replace | Change) -> None:
        """Update the objects of one kind and rebuild the groups the change reaches."""
        kind, store = event.informer.kind, self._objects[event.informer.kind]
        if isinstance(event, Replace):
            scope = event.informer.namespace
            old = {key for key in store if not scope or key[0] == scope}
            new = {object_key(obj): obj for obj in event.objects}
            for key in old - new.keys():
                del store[key]
            store.update(new)
            touched = old | new.keys()
        else:
            key = object_key(event.obj)
            if event.deleted:
                store.pop(key, None)
            else:
                store[key] = event.obj
            touched = {key}
        self._rebuild(kind, touched)

    def _rebuild(self, kind: str, keys: set[Key]) -> None:
        if kind == _KINDS[self.role][0]:
            for key in keys:
                self._regroup(key)
            return
        # The groups that looked this pod or service up when they were built, found or not (see _looker).
        dependents = set().union(*(self._refs.get((kind, key), set()) for key in keys)) if keys else set()
        for key in dependents:
            self._regroup(key)

    def _regroup(self, key: Key) -> None:
        obj = self._objects[_KINDS[self.role][0]].get(key)
        self._unlink(key)
        if obj is None:
            if key in self._groups:
                self._gone.append(TargetGroup(self._groups.pop(key).source, (), {}))
            return
        self._groups[key] = self._build(key, obj)

    def _build(self, key: Key, obj: Any) -> TargetGroup:
        if self.role == "pod":
            return pod_group(obj)
        if self.role == "service":
            return service_group(obj)
        if self.role == "node":
            return node_group(obj)
        lookup_pod = self._looker("pod", key)
        lookup_service = self._looker("service", key)
        build = endpointslice_group if self.role == "endpointslice" else endpoints_group
        return build(obj, lookup_pod, lookup_service)

    def _looker(self, kind: str, owner: Key) -> Callable[[str, str], Any]:
        """Looks objects up for `owner`'s group and remembers which it asked for, found or not."""
        def lookup(namespace: str, name: str) -> Any:
            ref = (kind, (namespace, name))
            self._refs[ref].add(owner)
            self._named[owner].add(ref)
            return self._objects[kind].get((namespace, name))
        return lookup

    def _unlink(self, owner: Key) -> None:
        for ref in self._named.pop(owner, ()):
            owners = self._refs.get(ref)
            if owners is not None:
                owners.discard(owner)
                if not owners:
                    del self._refs[ref]

