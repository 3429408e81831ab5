"""A one-node Kubernetes cluster from real parts, in a network namespace of its own, for the cluster tests.

Every part is the real one, built or installed by `make kube-node`: etcd and kube-apiserver (`kubeapi`),
containerd with runc and the CNI plugins (Debian's), kubelet, kube-scheduler, kube-controller-manager and
kube-proxy (nftables mode) built from the same Kubernetes source as the API server, and CoreDNS built
from its Go module, which names the Services. No image registry is reachable, so the images pods run
are built by the Docker engine (`docker`) and imported into containerd's `k8s.io` namespace; pods name
them with `imagePullPolicy: Never`. The sandbox image is `tests/targets/pause`.

`KubeNode(workdir, images)` starts it all inside the network namespace `NETNS`, joined to the host by a
veth pair (host `HOST_IP`, node `NODE_IP`) with a host route to the pod subnet, so the tests reach the API
server, the pods and (through kube-proxy) Services' cluster IPs from the host, and nothing the node does
to its routes or nftables/iptables touches the host's. `stop()` takes it all down again: pods first (so
the kubelet unmounts their volumes and releases their addresses), then each process, containerd's shims,
the mounts under `workdir`, the namespace (its bridge and rules go with it) and the cgroups the kubelet
made.

Found on this machine (cgroup v1, one hierarchy per controller, without CAP_SYS_RESOURCE):
- kubelet v1.37 (the newest served) runs on cgroup v1 with `failCgroupV1: false`; it logs that v1 is
  deprecated;
- runc cannot lower a sandbox's `oom_score_adj` below the caller's: `restrict_oom_score_adj` in containerd;
- Docker leaves the host's FORWARD policy at DROP with bridge netfilter on: the CNI `firewall` plugin
  accepts the pods' traffic;
- containerd 1.6 does not answer the kubelet's RuntimeConfig call: the config names `cgroupfs`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from . import CACHE_DIR
from .kubeapi import SERVICE_RANGE, KubeAPIServer
from .ports import free_port
from .waiting import terminate

BIN = CACHE_DIR / "bin"
KUBELET, SCHEDULER, CONTROLLER_MANAGER, PROXY, COREDNS = (
    BIN / n for n in ("kubelet", "kube-scheduler", "kube-controller-manager", "kube-proxy", "coredns"))
CONTAINERD, RUNC, CTR, CNI_BIN = Path("/usr/bin/containerd"), Path("/usr/sbin/runc"), "ctr", Path("/usr/lib/cni")
NETNS = "flamewatch-node"
HOST_VETH, NODE_VETH = "fwnode-host", "fwnode-node"
HOST_IP, NODE_IP = "10.251.0.1", "10.251.0.2"
POD_SUBNET = "10.245.0.0/24"
BRIDGE = "fwnode0"
NODE_NAME = "flamewatch-node"
DNS_DOMAIN = "cluster.local"
CGROUP_ROOT = Path("/sys/fs/cgroup")
PPROF_PORT = 6060
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0
# What the kubelet, containerd and libcni leave at fixed paths outside the work directory.
# where the last node started on this machine keeps its files (a node, once stopped, removes it)
LAST_WORKDIR = Path("/run/flamewatch-test-node.workdir")
FIXED_PATHS = (Path("/var/lib/kubelet/device-plugins"), Path("/var/log/containers"), Path("/var/lib/cni/results"))


T = TypeVar("T")


class KubeNodeError(RuntimeError):
    """The node did not start; the message holds the logs of its parts."""


def nsenter(*args: str) -> list[str]:
    """The command run in the node's network namespace (`nsenter`, not `ip netns exec`, which mounts a
    /sys of its own that hides the cgroup hierarchies)."""
    return ["nsenter", f"--net=/run/netns/{NETNS}", *args]


def run(*args: str, check: bool = True, stdin: bytes | None = None, timeout: float = 120) -> str:
    done = subprocess.run(args, input=stdin, capture_output=True, timeout=timeout)
    if check and done.returncode != 0:
        raise KubeNodeError(f"{' '.join(args[:6])}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode(errors="replace")


class KubeNode:
    """`images` maps a role to the Docker tag to import: "pause" is the sandbox image, the rest are what
    the tests' pods run (`image(role)` gives the name a pod spec uses)."""

    def __init__(self, workdir: Path, images: Mapping[str, str]) -> None:
        missing = [p for p in (KUBELET, SCHEDULER, CONTROLLER_MANAGER, PROXY, COREDNS, CONTAINERD, RUNC,
                               CNI_BIN / "bridge") if not p.is_file()]
        if missing:
            raise FileNotFoundError(f"{', '.join(map(str, missing))} missing: `make kube-node` (or `make test`) "
                                    "builds and installs the node's parts")
        if "pause" not in images:
            raise ValueError("the node needs a pause image for its pods' sandboxes")
        self.workdir, self.images = workdir, dict(images)
        self.socket = workdir / "containerd" / "containerd.sock"
        self._processes: list[subprocess.Popen[bytes]] = []
        self.api: KubeAPIServer | None = None
        self.started_s = 0.0

    def __enter__(self) -> KubeNode:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------------------------ the API

    @property
    def kubeconfig(self) -> Path:
        assert self.api is not None
        return self.api.kubeconfig

    def api_client(self) -> k8s.ApiClient:
        assert self.api is not None
        return self.api.api_client()

    def image(self, role: str) -> str:
        """The name pods give the image of `role`: its Docker tag as containerd stores it."""
        return containerd_name(self.images[role])

    def namespace(self, name: str) -> str:
        """Namespace `name`, created if needed; its `default` ServiceAccount comes from the controllers."""
        core = k8s.CoreV1Api(self.api_client())
        try:
            core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
        except ApiException as exc:
            if exc.status != 409:
                raise
        self.until(lambda: _exists(lambda: core.read_namespaced_service_account("default", name)),
                   f"the default ServiceAccount of {name}")
        return name

    # ------------------------------------------------------------------------------------ starting

    def start(self) -> None:
        began = time.monotonic()
        self._clean_leftovers()
        LAST_WORKDIR.write_text(str(self.workdir))
        self._network()
        (self.workdir / "api").mkdir(parents=True, exist_ok=True)
        self.api = KubeAPIServer(self.workdir / "api", NODE_IP, tuple(nsenter()), (
            # the kubelet is reached at its node's address, not by its name (the host cannot resolve it)
            "--kubelet-preferred-address-types=InternalIP",))
        self.api.start()
        self._start_containerd()
        self._import(list(self.images.values()))
        self._start_kubelet()
        self._start_controllers()
        self._start_coredns()
        self.until(self._node_ready, f"node {NODE_NAME} Ready")
        self.namespace("default")
        self.started_s = time.monotonic() - began

    def _network(self) -> None:
        run("ip", "netns", "add", NETNS)
        run("ip", "link", "add", HOST_VETH, "type", "veth", "peer", "name", NODE_VETH)
        run("ip", "link", "set", NODE_VETH, "netns", NETNS)
        run("ip", "addr", "add", f"{HOST_IP}/30", "dev", HOST_VETH)
        run("ip", "link", "set", HOST_VETH, "up")
        for command in (["ip", "addr", "add", f"{NODE_IP}/30", "dev", NODE_VETH],
                        ["ip", "link", "set", NODE_VETH, "up"], ["ip", "link", "set", "lo", "up"],
                        ["ip", "route", "add", "default", "via", HOST_IP], ["sysctl", "-qw", "net.ipv4.ip_forward=1"]):
            run(*nsenter(*command))
        for subnet in (POD_SUBNET, SERVICE_RANGE):  # the host reaches pods and (through kube-proxy) Services
            run("ip", "route", "add", subnet, "via", NODE_IP)

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        with (self.workdir / "logs" / f"{name}.log").open("wb") as log:
            process = subprocess.Popen(nsenter(*args), stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                       start_new_session=True)
        self._processes.append(process)
        return process

    def _start_containerd(self) -> None:
        w = self.workdir
        (w / "cni" / "net.d").mkdir(parents=True, exist_ok=True)
        (w / "cni" / "net.d" / "10-flamewatch.conflist").write_text(json.dumps(self._cni_config(), indent=1))
        config = w / "containerd.toml"
        config.write_text(CONTAINERD_CONFIG.format(root=w / "containerd", pause=self.image("pause"),
                                                   runc=RUNC, cni_bin=CNI_BIN, cni_conf=w / "cni" / "net.d"))
        self._spawn("containerd", [str(CONTAINERD), "--config", str(config)])
        self.until(lambda: subprocess.run([CTR, "-a", str(self.socket), "version"], capture_output=True)
                   .returncode == 0, "containerd")

    def _cni_config(self) -> dict:
        return {"cniVersion": "1.0.0", "name": "flamewatch-node", "plugins": [
            {"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": True, "hairpinMode": True,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]], "routes": [{"dst": "0.0.0.0/0"}],
                      "dataDir": str(self.workdir / "cni" / "ipam")}},
            {"type": "firewall", "backend": "iptables"},
            {"type": "portmap", "capabilities": {"portMappings": True}},
            {"type": "loopback"}]}

    def load(self, images: Mapping[str, str]) -> None:
        """More images (role -> Docker tag) for the pods, imported as at the start."""
        self._import(list(images.values()))
        self.images.update(images)

    def _import(self, tags: list[str]) -> None:
        """The Docker engine's images, saved and imported into containerd's `k8s.io` namespace."""
        saved = subprocess.run(["docker", "save", *tags], capture_output=True, timeout=600)
        if saved.returncode != 0:
            raise KubeNodeError(f"docker save: {saved.stderr.decode(errors='replace')}")
        run(CTR, "-a", str(self.socket), "-n", "k8s.io", "images", "import", "-", stdin=saved.stdout, timeout=600)

    def _start_kubelet(self) -> None:
        w = self.workdir
        config = w / "kubelet.yaml"
        config.write_text(yaml.safe_dump({
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "cgroupDriver": "cgroupfs", "failCgroupV1": False, "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}", "address": "0.0.0.0", "port": free_port(),
            "readOnlyPort": 0, "healthzBindAddress": "127.0.0.1", "healthzPort": free_port(),
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"}, "clusterDNS": [NODE_IP], "clusterDomain": DNS_DOMAIN,
            "resolvConf": str(self._resolv_conf()), "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            # a test machine's disk and memory are shared: evict nothing for pressure
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
            "syncFrequency": "5s", "fileCheckFrequency": "2s", "nodeStatusUpdateFrequency": "5s",
            "podLogsDir": str(w / "pod-logs"), "staticPodPath": str(w / "manifests")}))
        (w / "manifests").mkdir(exist_ok=True)
        self._spawn("kubelet", [str(KUBELET), f"--config={config}", f"--kubeconfig={self.kubeconfig}",
                                f"--root-dir={w / 'kubelet'}", f"--cert-dir={w / 'kubelet' / 'pki'}",
                                f"--hostname-override={NODE_NAME}", f"--node-ip={NODE_IP}"])

    def _resolv_conf(self) -> Path:
        """Pods with `dnsPolicy: Default` resolve nothing here: the node has no upstream DNS of its own."""
        path = self.workdir / "resolv.conf"
        path.write_text(f"nameserver {NODE_IP}\n")
        return path

    def _start_controllers(self) -> None:
        w, kubeconfig = self.workdir, str(self.kubeconfig)
        assert self.api is not None
        self._spawn("kube-scheduler", [str(SCHEDULER), f"--kubeconfig={kubeconfig}", "--secure-port=0",
                                       "--leader-elect=false"])
        self._spawn("kube-controller-manager", [
            str(CONTROLLER_MANAGER), f"--kubeconfig={kubeconfig}", "--secure-port=0", "--leader-elect=false",
            f"--service-account-private-key-file={self.api.workdir / 'sa.key'}",
            f"--root-ca-file={self.api.ca_file}", "--use-service-account-credentials=false"])
        proxy = w / "kube-proxy.yaml"
        proxy.write_text(yaml.safe_dump({
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": kubeconfig}, "hostnameOverride": NODE_NAME, "mode": "nftables",
            "clusterCIDR": POD_SUBNET, "bindAddress": "127.0.0.1",
            "healthzBindAddress": f"127.0.0.1:{free_port()}", "metricsBindAddress": f"127.0.0.1:{free_port()}",
            # the host's conntrack table is not the test's to size
            "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"}}))
        self._spawn("kube-proxy", [str(PROXY), f"--config={proxy}"])

    def _start_coredns(self) -> None:
        corefile = self.workdir / "Corefile"
        corefile.write_text(COREFILE.format(domain=DNS_DOMAIN, kubeconfig=self.kubeconfig))
        self._spawn("coredns", [str(COREDNS), "-conf", str(corefile)])

    def _node_ready(self) -> bool:
        core = k8s.CoreV1Api(self.api_client())
        try:
            node = core.read_node(NODE_NAME)
        except ApiException:
            return False
        return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])

    def until(self, check: Callable[[], T], what: str, timeout: float = START_TIMEOUT_S,
              log: Path | None = None) -> T:
        """`check()` once it is truthy; KubeNodeError with the node's logs (and `log`'s end) if it is not
        within `timeout` seconds or a part of the node exits meanwhile."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            for process in self._processes:
                if process.poll() is not None:
                    raise KubeNodeError(f"{process.args[2]} exited with {process.returncode} while waiting for "
                                        f"{what}:\n{self.logs()}")
            last = check()
            if last:
                return last
            time.sleep(0.3)
        tail = f"\n--- {log.name}\n{log.read_text(errors='replace')[-4000:]}" if log else ""
        raise KubeNodeError(f"no {what} after {timeout:.0f} s (last: {last!r}):\n{self.logs(1500)}{tail}")

    def logs(self, tail: int = 3000) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-tail:]}"
                         for p in sorted([*self.workdir.glob("logs/*.log"), *self.workdir.glob("api/*.log")]))

    # ------------------------------------------------------------------------------------ stopping

    def stop(self) -> None:
        if self.api is not None and self._processes:
            self._delete_pods()
        for process in reversed(self._processes):
            terminate(process, STOP_TIMEOUT_S)
        self._processes.clear()
        if self.api is not None:
            self.api.stop()
        self._remove_containers()
        self._clean_leftovers()
        LAST_WORKDIR.unlink(missing_ok=True)

    def _delete_pods(self) -> None:
        """Every pod deleted and gone, so the kubelet tears each sandbox down (volumes, addresses)."""
        try:
            core = k8s.CoreV1Api(self.api_client())
            for ns in core.list_namespace().items:
                core.delete_collection_namespaced_pod(ns.metadata.name, grace_period_seconds=1)
            deadline = time.monotonic() + 60
            while core.list_pod_for_all_namespaces().items and time.monotonic() < deadline:
                time.sleep(0.5)
        except (ApiException, OSError, ValueError):
            pass  # what remains is killed below

    def _remove_containers(self) -> None:
        if self.socket.exists():
            ctr = [CTR, "-a", str(self.socket), "-n", "k8s.io"]
            for task in run(*ctr, "tasks", "ls", "-q", check=False).split():
                run(*ctr, "tasks", "kill", "-s", "KILL", task, check=False)
                run(*ctr, "tasks", "rm", "-f", task, check=False)
            for container in run(*ctr, "containers", "ls", "-q", check=False).split():
                run(*ctr, "containers", "rm", container, check=False)
        # shims outlive containerd by design
        run("pkill", "-KILL", "-f", f"containerd-shim-runc-v2 .*-address {self.socket}", check=False)

    def _clean_leftovers(self) -> None:
        """What a node (this one, or one killed before it could stop) leaves outside its processes."""
        self._kill_leftover_processes()
        # a node killed before it could stop left its mounts under its own work directory
        roots = {str(self.workdir), *([LAST_WORKDIR.read_text()] if LAST_WORKDIR.is_file() else [])}
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
                  if line.split()[1].startswith(tuple(roots))]
        for mount in sorted(mounts, reverse=True):
            run("umount", "-l", mount, check=False)
        for name in run("ip", "netns", "list", check=False).split():
            if name.startswith("cni-"):
                run("ip", "netns", "delete", name, check=False)
        run("ip", "netns", "delete", NETNS, check=False)  # its bridge, veth end and rules go with it
        run("ip", "link", "delete", HOST_VETH, check=False)
        for subnet in (POD_SUBNET, SERVICE_RANGE):
            run("ip", "route", "del", subnet, check=False)
        for hierarchy in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else ():
            pods = hierarchy / "kubepods"
            if pods.is_dir():
                directories = [pods, *(p for p in pods.rglob("*") if p.is_dir())]
                for directory in sorted(directories, key=lambda p: len(p.parts), reverse=True):
                    with contextlib.suppress(OSError):  # still busy: a process the kill missed
                        directory.rmdir()
        for path in FIXED_PATHS:
            shutil.rmtree(path, ignore_errors=True)
            with contextlib.suppress(OSError):  # kept when something else put files there
                path.parent.rmdir()


    @staticmethod
    def _kill_leftover_processes() -> None:
        """Every process still in the node's network namespaces: a node whose test run was killed leaves its
        etcd, API server, kubelet, containerd and pods running (they are in sessions of their own, so they
        outlive it), holding mounts and CPU that the next run needs."""
        spaces = [name for name in run("ip", "netns", "list", check=False).split()
                  if name == NETNS or name.startswith("cni-")]
        pids = {int(pid) for name in spaces for pid in run("ip", "netns", "pids", name, check=False).split()}
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)


def containerd_name(tag: str) -> str:
    """A Docker tag as containerd stores it: Docker Hub's full name when the tag names no registry."""
    first = tag.split("/")[0]
    if "/" in tag and ("." in first or ":" in first or first == "localhost"):
        return tag
    return f"docker.io/{tag}" if "/" in tag else f"docker.io/library/{tag}"


def pprof_container(name: str, image: str, *args: str, **fields) -> k8s.V1Container:
    """A container of a Go program of `tests/targets`, its image imported (never pulled), serving
    net/http/pprof on the port named `pprof`."""
    return k8s.V1Container(name=name, image=image, image_pull_policy="Never", args=list(args),
                           ports=[k8s.V1ContainerPort(name="pprof", container_port=PPROF_PORT)], **fields)


def _exists(read) -> bool:
    try:
        read()
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


CONTAINERD_CONFIG = """\
version = 2
root = "{root}/root"
state = "{root}/state"
[grpc]
  address = "{root}/containerd.sock"
[ttrpc]
  address = "{root}/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  # runc cannot set the sandbox's oom_score_adj below this process's (no CAP_SYS_RESOURCE here)
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{runc}"
        Root = "{root}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{cni_conf}"
"""

COREFILE = """\
.:53 {{
    errors
    kubernetes {domain} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} test
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 5
}}
"""
