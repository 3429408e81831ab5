"""The chart in a real cluster (`infra.kubenode`): `helm install` with its bundled Postgres and MinIO and
Kubernetes discovery on, from the images this checkout builds. Every pod becomes Ready; the collector
finds an annotated demo pod through the API with its service account, scrapes it over the pod network and
pushes to the ingesters through their headless Service; the frontend's Service answers the UI and the query
API with the demo's functions. Scaled to three ingesters, the pushes spread over all three; `helm upgrade`
rolls every Flamewatch pod and loses no acknowledged profile; `helm uninstall` leaves nothing behind. In
`mode: single` one pod runs every service and shows the same. With `security.existingSecret` and
`security.tls`, every port serves TLS, nothing passes without a credential, and the services' own token
and CA carry their calls, two queriers' split merge among them. The figures (install to all Ready,
install to the demo's first flamegraph) are printed for the record.

The tests of the `installed` release run in file order on it."""

from __future__ import annotations

import hashlib
import secrets
import ssl
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import httpx
import pytest
from e2e.pushes import rewritten
from infra import docker, helm
from infra.certs import CertificateAuthority
from infra.kubenode import PPROF_PORT, KubeNode, pprof_container
from kubernetes import client as k8s

pytestmark = [pytest.mark.cluster, pytest.mark.docker, pytest.mark.helm, pytest.mark.usefixtures("helm_binary")]

RELEASE = "fw"
CONNECTION_AGE_S = 10
DEMO_FUNCTIONS = {"main.cpuFibonacci", "main.cpuHashLoop"}
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
S = 10**9
HOUR = 3600 * S


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
    """Every pod of the namespace Ready, once every Deployment and StatefulSet has all of its pods: the
    controllers create pods a while after `helm install` returns, later on a loaded machine, so Ready pods
    alone can be an early few."""
    if not workloads_complete(k8s.AppsV1Api(core.api_client), namespace):
        return None
    pods = core.list_namespaced_pod(namespace).items
    ok = pods and all(any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
                      for p in pods if p.status.phase != "Succeeded")
    return pods if ok else None


def workloads_complete(apps: k8s.AppsV1Api, namespace: str) -> bool:
    workloads = [*apps.list_namespaced_deployment(namespace).items,
                 *apps.list_namespaced_stateful_set(namespace).items]
    def complete(w) -> bool:
        wanted = 1 if w.spec.replicas is None else w.spec.replicas
        return ((w.status.observed_generation or 0) >= w.metadata.generation
                and (w.status.ready_replicas or 0) == wanted and (w.status.updated_replicas or 0) == wanted)
    return all(complete(w) for w in workloads)


def install(node: KubeNode, release: str, images: dict[str, str], *values: str,
            secret_files: dict[str, dict[str, str]] | None = None) -> Installed:
    """A namespace with the annotated demo pod and Secrets (`secret_files`: name -> file name -> text), and the release
    installed into it with discovery of that namespace; once every pod is Ready."""
    namespace = node.namespace(f"profiling-{uuid.uuid4().hex[:6]}")
    core = k8s.CoreV1Api(node.api_client())
    for name, files in (secret_files or {}).items():
        core.create_namespaced_secret(namespace, k8s.V1Secret(metadata=k8s.V1ObjectMeta(name=name), string_data=files))
    # the demo: a Go program serving net/http/pprof, annotated as the chart's discovery expects
    core.create_namespaced_pod(namespace, k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="demo", labels={"app": "demo"}, annotations={
            "profiles.grafana.com/cpu.scrape": "true", "profiles.grafana.com/cpu.port_name": "pprof",
            "profiles.grafana.com/service_name": "demo"}),
        spec=k8s.V1PodSpec(containers=[pprof_container("demo", images["workload"], "-addr", f":{PPROF_PORT}")])))
    began = time.monotonic()
    sets = [*image_values(images), "collector.kubernetesDiscovery.enabled=true",
            f"collector.kubernetesDiscovery.namespaces={{{namespace}}}", *values]
    helm.run("install", release, str(helm.CHART), *kube(node, namespace), *(a for v in sets for a in ("--set", v)))
    node.until(lambda: pods_ready(core, namespace), "every pod of the release Ready", 300)
    return Installed(namespace, time.monotonic() - began, began)


def uninstall(node: KubeNode, release: str, namespace: str) -> None:
    if release in helm.run("list", "--short", *kube(node, namespace)).split():
        helm.run("uninstall", release, *kube(node, namespace), "--wait", "--timeout", "3m")


@pytest.fixture(scope="module")
def installed(kube_node: KubeNode, chart_images: dict[str, str]) -> Iterator[Installed]:
    # collectors find ingesters added later when their connection is renewed: soon, in a test
    release = install(kube_node, RELEASE, chart_images,
                      f"ingester.extraArgs={{--grpc.max-connection-age={CONNECTION_AGE_S}}}")
    yield release
    uninstall(kube_node, RELEASE, release.namespace)


def demo_flamegraph_s(node: KubeNode, release: str, installed: Installed) -> float:
    """Seconds from `helm install` to the demo's functions in a CPU flamegraph through the frontend Service."""
    url = service_url(node, installed.namespace, f"{release}-flamewatch-frontend")
    assert "<div id=\"root\">" in httpx.get(url + "/", timeout=10).text  # the UI
    found = node.until(lambda: top_functions(url) if top_functions(url) >= DEMO_FUNCTIONS else None,
                       "the demo's functions through the frontend Service", 180)
    assert found >= DEMO_FUNCTIONS
    return time.monotonic() - installed.began


def kube(node: KubeNode, namespace: str) -> list[str]:
    return ["--kubeconfig", str(node.kubeconfig), "--namespace", namespace]


def service_url(kube_node: KubeNode, namespace: str, name: str, scheme: str = "http") -> str:
    service = k8s.CoreV1Api(kube_node.api_client()).read_namespaced_service(name, namespace)
    return f"{scheme}://{service.spec.cluster_ip}:{service.spec.ports[0].port}"


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
    first_s = demo_flamegraph_s(kube_node, RELEASE, installed)
    print(f"\nhelm install to every pod Ready: {installed.ready_s:.1f} s; "
          f"to the demo's first flamegraph through the frontend Service: {first_s:.1f} s")


def component_pods(core: k8s.CoreV1Api, namespace: str, component: str) -> list[k8s.V1Pod]:
    return core.list_namespaced_pod(namespace, label_selector=f"app.kubernetes.io/component={component}").items


def ingested(pod_ip: str) -> float:
    """The profiles an ingester pod stored, from its metrics."""
    metrics = httpx.get(f"http://{pod_ip}:4100/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith("flamewatch_ingested_profiles_total{"))


def test_three_ingesters_each_get_the_collectors_pushes(kube_node: KubeNode, installed: Installed) -> None:
    core, apps = k8s.CoreV1Api(kube_node.api_client()), k8s.AppsV1Api(kube_node.api_client())
    apps.patch_namespaced_deployment_scale(f"{RELEASE}-flamewatch-ingester", installed.namespace,
                                           {"spec": {"replicas": 3}})

    def three_ready() -> list[str] | None:
        ips = [p.status.pod_ip for p in component_pods(core, installed.namespace, "ingester")
               if any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])]
        return ips if len(ips) == 3 else None

    ips = kube_node.until(three_ready, "three Ready ingesters", 120)
    before = {ip: ingested(ip) for ip in ips}
    grown = kube_node.until(lambda: (now := {ip: ingested(ip) for ip in ips}) and
                            (now if all(now[ip] > before[ip] for ip in ips) else None),
                            "pushes reaching every ingester", 4 * CONNECTION_AGE_S + 60)
    assert all(grown[ip] > before[ip] for ip in ips), (before, grown)


def profiles_in(url: str, start_ns: int, end_ns: int) -> int:
    answer = httpx.get(f"{url}/api/v1/query", timeout=30, params={
        "query": f'{CPU}{{service_name="demo"}}', "from": str(start_ns), "until": str(end_ns), "format": "top"})
    assert answer.status_code == 200, answer.text
    return answer.json()["profiles"]


def test_an_upgrade_rolls_every_flamewatch_pod_and_keeps_every_acknowledged_profile(
        kube_node: KubeNode, installed: Installed) -> None:
    core = k8s.CoreV1Api(kube_node.api_client())
    url = service_url(kube_node, installed.namespace, f"{RELEASE}-flamewatch-frontend")
    window = (time.time_ns() - 600 * S, time.time_ns() - 20 * S)  # closed: every push in it acknowledged
    stored = profiles_in(url, *window)
    assert stored > 0
    flamewatch = {"ingester", "querier", "frontend", "symbolizer", "collector"}
    old = {p.metadata.uid for c in flamewatch for p in component_pods(core, installed.namespace, c)}
    helm.run("upgrade", RELEASE, str(helm.CHART), *kube(kube_node, installed.namespace), "--reuse-values",
             "--set", "logLevel=debug", "--wait", "--timeout", "5m")

    def rolled() -> bool:
        pods = [p for c in flamewatch for p in component_pods(core, installed.namespace, c)]
        return not {p.metadata.uid for p in pods} & old and pods_ready(core, installed.namespace) is not None

    kube_node.until(rolled, "every Flamewatch pod replaced and Ready", 300)
    assert kube_node.until(lambda: _answer(lambda: profiles_in(url, *window)), "the query API after the upgrade",
                           60) == stored


def _answer(ask):
    try:
        return ask()
    except (httpx.HTTPError, AssertionError):
        return None


def test_uninstall_leaves_nothing_of_the_release(kube_node: KubeNode, installed: Installed) -> None:
    selector = f"app.kubernetes.io/instance={RELEASE}"  # on every object the chart renders
    core, apps = k8s.CoreV1Api(kube_node.api_client()), k8s.AppsV1Api(kube_node.api_client())
    rbac = k8s.RbacAuthorizationV1Api(kube_node.api_client())
    ns = installed.namespace
    assert len(apps.list_namespaced_deployment(ns, label_selector=selector).items) >= 7
    assert rbac.list_namespaced_role(ns, label_selector=selector).items  # discovery's, in the namespace named
    uninstall(kube_node, RELEASE, installed.namespace)
    kube_node.until(lambda: not core.list_namespaced_pod(ns, label_selector=selector).items,
                    "the release's pods gone", 120)
    left = {
        "deployments": apps.list_namespaced_deployment(ns, label_selector=selector).items,
        "services": core.list_namespaced_service(ns, label_selector=selector).items,
        "secrets": core.list_namespaced_secret(ns, label_selector=selector).items,
        "config maps": core.list_namespaced_config_map(ns, label_selector=selector).items,
        "service accounts": core.list_namespaced_service_account(ns, label_selector=selector).items,
        "roles": rbac.list_namespaced_role(ns, label_selector=selector).items,
        "role bindings": rbac.list_namespaced_role_binding(ns, label_selector=selector).items,
        "cluster roles": rbac.list_cluster_role(label_selector=selector).items,
        "disruption budgets": k8s.PolicyV1Api(kube_node.api_client()).list_namespaced_pod_disruption_budget(
            ns, label_selector=selector).items,
        "claims": core.list_namespaced_persistent_volume_claim(ns).items,  # none: persistence is off by default
    }
    assert not any(left.values()), {kind: [o.metadata.name for o in found] for kind, found in left.items() if found}
    # the demo, which is not the release's, runs on
    assert core.read_namespaced_pod("demo", ns).status.phase == "Running"


def test_the_single_process_mode_runs_one_pod_that_shows_the_demo_pods_functions(
        kube_node: KubeNode, chart_images: dict[str, str]) -> None:
    single = install(kube_node, "one", chart_images, "mode=single")
    try:
        core = k8s.CoreV1Api(kube_node.api_client())
        components = sorted(p.metadata.labels.get("app.kubernetes.io/component", p.metadata.name)
                            for p in core.list_namespaced_pod(single.namespace).items)
        assert components == ["all", "demo", "minio", "postgres"]
        first_s = demo_flamegraph_s(kube_node, "one", single)
        print(f"\nmode single: helm install to every pod Ready: {single.ready_s:.1f} s; "
              f"to the demo's first flamegraph through the frontend Service: {first_s:.1f} s")
    finally:
        uninstall(kube_node, "one", single.namespace)


SERVER_NAME = "flamewatch"  # the one name the services' certificate carries, which every caller checks


def web_config(directory: Path, token: str, password: str) -> dict[str, str]:
    """The Secret's files: the web configuration (HTTPS and gRPC over TLS with a certificate of the tests'
    own CA, an admin user, the services' own token) and the files it names; `client` is what the services
    show and check of each other: the token, read from its file, and the CA with the certificate's name."""
    ca = CertificateAuthority.create(directory)
    server = ca.issue(SERVER_NAME, names=[SERVER_NAME], file_name="server")
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(10)).decode()
    return {"web.yml": f"""tls_server_config:
  cert_file: server.crt
  key_file: server.key
basic_auth_users:
  admin: {hashed}
bearer_tokens:
  flamewatch: sha256:{hashlib.sha256(token.encode()).hexdigest()}
access:
  admin: {{read: ["*"], write: ["*"], admin: true}}
  flamewatch: {{read: ["*"], write: ["*"], admin: true}}
client:
  authorization: {{credentials_file: flamewatch.token}}
  tls_config: {{ca_file: ca.crt, server_name: {SERVER_NAME}}}
""", "flamewatch.token": token, "ca.crt": ca.cert.read_text(), "server.crt": server.cert.read_text(),
            "server.key": server.key.read_text()}


def metric(client: httpx.Client, url: str, name: str) -> float:
    text = client.get(f"{url}/metrics").raise_for_status().text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def test_with_security_every_service_asks_for_a_credential_and_shows_its_own_to_the_others(
        kube_node: KubeNode, chart_images: dict[str, str], tmp_path: Path) -> None:
    """The web configuration from a Secret of the user's, mounted in every pod (in the collector, inside the
    directory of its configuration): every port serves TLS, no request passes without a credential, and
    the services' own token and CA carry the collector's pushes and its profiling of Flamewatch, the
    frontend's queries and the two queriers' split merge."""
    token, password = secrets.token_hex(32), secrets.token_hex(16)
    web = "/etc/flamewatch/web"
    release = install(kube_node, "sec", chart_images, "security.existingSecret=flamewatch-web", "security.tls=true",
                      "querier.replicas=2", "querier.extraArgs={--query.split-min-profiles=1}",
                      f"security.selfScrape.authorization.credentials_file={web}/flamewatch.token",
                      f"security.selfScrape.tls_config.ca_file={web}/ca.crt",
                      f"security.selfScrape.tls_config.server_name={SERVER_NAME}",
                      secret_files={"flamewatch-web": web_config(tmp_path, token, password)})
    ns, core = release.namespace, k8s.CoreV1Api(kube_node.api_client())
    tenant = {"X-Scope-OrgID": "anonymous"}
    checked = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    # the certificate names SERVER_NAME, not the addresses dialled: sent and checked as the services do
    tls = {"verify": checked, "timeout": 30, "event_hooks": {"request": [
        lambda request: request.extensions.update(sni_hostname=SERVER_NAME)]}}
    try:
        with httpx.Client(**tls) as anyone, httpx.Client(auth=("admin", password), headers=tenant, **tls) as admin:
            url = service_url(kube_node, ns, "sec-flamewatch-frontend", "https")
            ask = {"query": f"{CPU}{{}}", "from": "now-10m"}
            assert anyone.get(f"{url}/api/v1/query", params=ask).status_code == 401
            assert anyone.get(f"{url}/api/v1/query", params=ask, auth=("admin", "wrong")).status_code == 401
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):  # TLS: not our CA, refused
                httpx.get(f"{url}/api/v1/query", params=ask, timeout=10)
            # the collector pushed the demo's profiles, and Flamewatch's own, with what the Secret holds
            for service in ("demo", "flamewatch-querier"):
                kube_node.until(lambda s=service: profiles_of(admin, url, s, "now-10m", "now"),
                                f"{service}'s profiles through the frontend Service, asked as admin", 180)

            # three past hours of a service pushed to the ingesters' Service (the demo's CPU profile as stored,
            # downloaded: Go serves one CPU profile at a time, and the collector's scrapes keep the demo busy)
            download = admin.get(f"{url}/api/v1/query", params={
                "query": f'{CPU}{{service_name="demo"}}', "from": "now-10m", "format": "pprof"})
            assert download.status_code == 200, download.text
            ingester = service_url(kube_node, ns, "sec-flamewatch-ingester", "https")
            push = {"params": {"__name__": "process_cpu", "service_name": "history"}}
            assert anyone.post(f"{ingester}/ingest", content=download.content, **push).status_code == 401
            now = time.time_ns()
            first_hour = now - now % HOUR - 3 * HOUR
            for hour in range(3):
                at = first_hour + hour * HOUR + 600 * S
                answer = anyone.post(f"{ingester}/ingest", content=rewritten(download.content, time_ns=at),
                                     headers={**tenant, "Authorization": f"Bearer {token}"}, **push)
                assert answer.status_code == 200, answer.text

            # merged by both queriers: the one asked hands the other a piece over gRPC, with the token
            queriers = [f"https://{p.status.pod_ip}:4200" for p in component_pods(core, ns, "querier")]
            assert len(queriers) == 2
            kube_node.until(lambda: profiles_of(admin, url, "history", str(first_hour), str(now)) == 3,
                            "the three pushed hours in one merge", 120)
            before = sum(metric(admin, q, "flamewatch_querier_partial_profiles_total") for q in queriers)
            assert profiles_of(admin, url, "history", str(first_hour), str(now)) == 3
            by_peer = sum(metric(admin, q, "flamewatch_querier_partial_profiles_total") for q in queriers) - before
            assert 1 <= by_peer <= 2, by_peer  # the pieces of the three hours the asked querier did not merge
    finally:
        uninstall(kube_node, "sec", ns)


def profiles_of(client: httpx.Client, url: str, service: str, start: str, end: str) -> int:
    """How many CPU profiles of `service` a merge over [start, end] holds (0 when it cannot be asked yet)."""
    try:
        answer = client.get(f"{url}/api/v1/query", params={
            "query": f'{CPU}{{service_name="{service}"}}', "from": start, "until": end, "format": "top"})
    except httpx.HTTPError:
        return 0
    return answer.json()["profiles"] if answer.status_code == 200 else 0
