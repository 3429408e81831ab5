"""A real Kubernetes API server for the tests: Debian's etcd and kube-apiserver built from source by make.

`KubeAPIServer(workdir)` starts etcd (free ports, data under `workdir`) and kube-apiserver on a loopback
secure port with a serving certificate of its own CA, a static token with cluster-admin rights
(`system:masters`), RBAC, and a service-account key pair; it waits for `/readyz` and writes a kubeconfig
(`kubeconfig`). There is no controller manager and no kubelet: objects are stored and validated but
nothing runs them, and each namespace's `default` ServiceAccount is created by `namespace()`.
Certificates and keys are made with the `openssl` command.
"""

from __future__ import annotations

import os
import ssl
import subprocess
import time
from pathlib import Path

import httpx
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from . import CACHE_DIR
from .ports import free_port
from .waiting import terminate

KUBE_APISERVER = CACHE_DIR / "bin" / "kube-apiserver"
ETCD = Path("/usr/bin/etcd")
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 5.0  # kube-apiserver waits for open watches to drain; nothing is lost by killing it after
ADMIN_TOKEN = "flamewatch-test-admin-token"
SERVICE_RANGE = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"  # the `kubernetes` Service's: the first of the range


class KubeAPIServer:
    """`host` is the address it serves and advertises; `prefix` runs etcd and it under a command (a
    cluster's `nsenter` into its network namespace); `flags` are added to kube-apiserver's own."""

    def __init__(self, workdir: Path, host: str = "127.0.0.1", prefix: tuple[str, ...] = (),
                 flags: tuple[str, ...] = ()) -> None:
        for binary, how in ((KUBE_APISERVER, "make .cache/bin/kube-apiserver"), (ETCD, "make /usr/bin/etcd")):
            if not binary.is_file():
                raise FileNotFoundError(f"{binary} is missing: `{how}` (or `make test`) installs it")
        self.workdir = workdir
        self.host, self._prefix, self._flags = host, prefix, flags
        self.port = free_port()
        self.url = f"https://{host}:{self.port}"
        self.kubeconfig = workdir / "kubeconfig"
        self.ca_file = workdir / "ca.crt"
        self._processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> KubeAPIServer:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._certificates()
        self.etcd_url = self._start_etcd()
        self._start_apiserver(self.etcd_url)
        self._wait_ready()
        self._write_kubeconfig()

    def stop(self) -> None:
        for process in reversed(self._processes):
            terminate(process, STOP_TIMEOUT_S)
        self._processes.clear()

    def api_client(self) -> k8s.ApiClient:
        return k8s_config.new_client_from_config(config_file=str(self.kubeconfig))

    def compact(self) -> int:
        """Compact etcd's history up to now, as the API server does every few minutes: a watch from an
        older resourceVersion then gets 410 Gone. Returns the revision compacted to."""
        status = httpx.post(self.etcd_url + "/v3/kv/range", json={"key": "AA=="}, timeout=5).json()
        revision = int(status["header"]["revision"])
        httpx.post(self.etcd_url + "/v3/kv/compaction", json={"revision": revision, "physical": True},
                   timeout=5).raise_for_status()
        return revision

    def namespace(self, name: str) -> str:
        """Create namespace `name` (if needed) with the `default` ServiceAccount a controller would add."""
        core = k8s.CoreV1Api(self.api_client())
        for create in (lambda: core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name))),
                       lambda: core.create_namespaced_service_account(
                           name, k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(name="default")))):
            try:
                create()
            except ApiException as exc:
                if exc.status != 409:  # already there
                    raise
        return name

    # ---------------------------------------------------------------------------------------- parts

    def _openssl(self, *args: str) -> None:
        subprocess.run(["openssl", *args], cwd=self.workdir, check=True, capture_output=True)

    def _certificates(self) -> None:
        self._openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=flamewatch-test-ca",
                      "-keyout", "ca.key", "-out", "ca.crt")
        (self.workdir / "server.ext").write_text(
            f"subjectAltName=IP:127.0.0.1,IP:{self.host},IP:{SERVICE_IP},DNS:localhost,DNS:kubernetes.default.svc\n"
            "extendedKeyUsage=serverAuth\n")
        self._openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kube-apiserver",
                      "-keyout", "server.key", "-out", "server.csr")
        self._openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                      "-days", "2", "-extfile", "server.ext", "-out", "server.crt")
        self._openssl("genrsa", "-out", "sa.key", "2048")
        self._openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        (self.workdir / "tokens.csv").write_text(f'{ADMIN_TOKEN},admin,admin-uid,"system:masters"\n')

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        with (self.workdir / f"{name}.log").open("wb") as log:
            process = subprocess.Popen([*self._prefix, *args], stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
        self._processes.append(process)
        return process

    def _start_etcd(self) -> str:
        client, peer = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
        self._spawn("etcd", [str(ETCD), "--name", "test", "--data-dir", str(self.workdir / "etcd"),
                             "--listen-client-urls", client, "--advertise-client-urls", client,
                             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                             "--initial-cluster", f"test={peer}", "--log-level", "warn"])
        return client

    def _start_apiserver(self, etcd_url: str) -> None:
        w = self.workdir
        self._spawn("kube-apiserver", [
            str(KUBE_APISERVER), f"--etcd-servers={etcd_url}", f"--bind-address={self.host}",
            f"--advertise-address={self.host}", f"--secure-port={self.port}", f"--cert-dir={w / 'certs'}",
            f"--tls-cert-file={w / 'server.crt'}", f"--tls-private-key-file={w / 'server.key'}",
            f"--token-auth-file={w / 'tokens.csv'}", "--authorization-mode=RBAC",
            f"--service-account-key-file={w / 'sa.pub'}", f"--service-account-signing-key-file={w / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_RANGE}", "--enable-priority-and-fairness=false",
            # Watches go to etcd, so a compaction (compact()) makes an old resourceVersion answer 410 Gone.
            "--watch-cache=false",
            # Nothing runs behind the `kubernetes` Service of a server on the loopback address, whose endpoint
            # v1.37 refuses to advertise ("may not be in the loopback range"): no endpoint is kept for it.
            *(["--endpoint-reconciler-type=none"] if self.host.startswith("127.") else []), *self._flags,
        ])

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        tls = ssl.create_default_context(cafile=str(self.ca_file))
        while time.monotonic() < deadline:
            for process in self._processes:
                if process.poll() is not None:
                    raise RuntimeError(f"{process.args[0]} exited with {process.returncode}:\n{self._logs()}")
            try:
                if httpx.get(self.url + "/readyz", headers=headers, verify=tls, timeout=2).status_code \
                        == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"kube-apiserver not ready after {START_TIMEOUT_S} s:\n{self._logs()}")

    def _logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.workdir.glob("*.log")))

    def _write_kubeconfig(self) -> None:
        self.kubeconfig.write_text(yaml.safe_dump(kubeconfig(self.url, self.ca_file, ADMIN_TOKEN)))
        os.chmod(self.kubeconfig, 0o600)


def kubeconfig(server: str, ca_file: Path, token: str, namespace: str = "default") -> dict:
    """A kubeconfig with one context: `server`, its CA and a bearer token."""
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "test", "preferences": {},
        "clusters": [{"name": "test", "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [{"name": "test", "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test", "namespace": namespace}}],
    }

