"""The Helm chart `deploy/helm/flamewatch`, rendered by the real `helm` for each values file of its `ci/`
folder: lint clean, every object valid against the Kubernetes OpenAPI schemas, and what each values file
must change asserted object by object (replicas, autoscalers, collector shards and their `hashmod`
relabeling, the headless Services through which collectors find ingesters and queriers find each other,
the config checksum, secrets, security contexts, probes). Bad values files under
`testdata/bad/` must be refused at install with the message written on their first line. The pods'
command lines against the `flamewatch` command they run are test_helm_pods.py's; the helpers are `chart`'s.
"""

from __future__ import annotations

import base64
import re
from collections import Counter
from pathlib import Path

import chart
import kubernetes_validate
import pytest
import yaml
from chart import FULL, SERVICES, VALUES_FILES
from infra import helm
from kubernetes.client import V1Container, V1ContainerPort, V1ObjectMeta, V1Pod, V1PodSpec, V1PodStatus

from flamewatch.collector.config import parse_config
from flamewatch.collector.discovery.kubernetes_labels import pod_group
from flamewatch.collector.targetgroup import TargetGroup
from flamewatch.collector.targets import discovered_labels, final_labels

pytestmark = [pytest.mark.helm, pytest.mark.usefixtures("helm_binary")]

BAD = Path(__file__).parent / "testdata" / "bad"
KUBERNETES = helm.KUBE_VERSION
# Object kinds kubernetes-validate has no schema for (custom resources): checked field by field below.
CUSTOM_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor")}


# --- every values file


@pytest.mark.parametrize("values", VALUES_FILES, ids=lambda p: p.stem)
def test_lint_is_clean(values: Path) -> None:
    out = helm.lint([values])
    assert "1 chart(s) linted, 0 chart(s) failed" in out
    assert not re.search(r"\[(WARNING|ERROR)\]", out), out


@pytest.mark.parametrize("values", VALUES_FILES, ids=lambda p: p.stem)
def test_every_object_is_valid_kubernetes(values: Path) -> None:
    objects = helm.render([values])
    assert objects
    for obj in objects:
        if (obj["apiVersion"], obj["kind"]) in CUSTOM_KINDS:
            continue
        # strict: a field the schema does not know (a typo in a template) is an error too
        kubernetes_validate.validate(obj, KUBERNETES, strict=True)


@pytest.mark.parametrize("values", VALUES_FILES, ids=lambda p: p.stem)
def test_pods_run_as_non_root_on_a_read_only_filesystem(values: Path) -> None:
    deployments = chart.by_kind(helm.render([values]), "Deployment")
    for name, deployment in deployments.items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        context = chart.container(deployment)["securityContext"]
        assert context["readOnlyRootFilesystem"] is True, name
        assert context["allowPrivilegeEscalation"] is False, name
        assert context["capabilities"]["drop"] == ["ALL"], name
        # what must be written goes to emptyDirs (or claims), never the image's filesystem
        mounted = {m["mountPath"] for m in chart.container(deployment)["volumeMounts"]}
        assert "/tmp" in mounted, name


@pytest.mark.parametrize("values", VALUES_FILES, ids=lambda p: p.stem)
def test_services_are_probed_on_readyz_and_healthz(values: Path) -> None:
    objects = helm.render([values])
    services = chart.by_kind(objects, "Service")
    tls = {"scheme": "HTTPS"} if (yaml.safe_load(values.read_text()) or {}).get("security", {}).get("tls") else {}
    for name, deployment in chart.flamewatch_deployments(objects).items():
        container = chart.container(deployment)
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http", **tls}, name
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http", **tls}, name
        assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http", **tls}, name
        assert container["resources"]["requests"], name
        # the Service of the same name reaches the port the probes use
        assert "http" in {p["targetPort"] for p in services[name]["spec"]["ports"]}, name
        http = next(p["containerPort"] for p in container["ports"] if p["name"] == "http")
        assert chart.env(deployment)["FLAMEWATCH_HTTP_ADDRESS"]["value"] == f":{http}", name


@pytest.mark.parametrize("values", VALUES_FILES, ids=lambda p: p.stem)
def test_every_referenced_secret_and_configmap_is_rendered_or_named_in_values(values: Path) -> None:
    objects = helm.render([values])
    secrets = {name: set(s["data"]) for name, s in chart.by_kind(objects, "Secret").items()}
    existing = {"flamewatch-db": {"db-password"}, "flamewatch-s3": {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}}
    for name, deployment in chart.by_kind(objects, "Deployment").items():
        for env in chart.container(deployment)["env"]:
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                keys = secrets.get(ref["name"], existing.get(ref["name"]))
                assert keys is not None and ref["key"] in keys, (name, env)
        for volume in deployment["spec"]["template"]["spec"]["volumes"]:
            if "configMap" in volume:
                assert volume["configMap"]["name"] in chart.by_kind(objects, "ConfigMap"), name


# --- what each values file changes


def test_default_values_render_a_small_complete_installation() -> None:
    objects = chart.render("default")
    kinds = Counter(o["kind"] for o in objects)
    assert kinds == {"Deployment": 7, "Service": 9, "PodDisruptionBudget": 5, "Secret": 2, "ConfigMap": 1,
                     "ServiceAccount": 1}
    deployments = chart.by_kind(objects, "Deployment")
    assert sorted(deployments) == sorted(f"{FULL}-{n}" for n in (
        "ingester", "querier", "frontend", "symbolizer", "collector-0", "postgres", "minio"))
    assert all(d["spec"]["replicas"] == 1 for d in deployments.values())
    # bundled storage: the services point at the bundled servers, credentials from the chart's Secrets
    ingester = chart.env(deployments[f"{FULL}-ingester"])
    assert ingester["FLAMEWATCH_STORAGE_POSTGRES_DSN"]["value"] == \
        f"postgresql://flamewatch@{FULL}-postgres:5432/flamewatch?sslmode=disable"
    assert ingester["PGPASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": f"{FULL}-postgres", "key": "password"}
    assert ingester["FLAMEWATCH_STORAGE_S3_ENDPOINT"]["value"] == f"{FULL}-minio:9000"
    assert ingester["FLAMEWATCH_STORAGE_S3_INSECURE"]["value"] == "true"
    secrets = chart.by_kind(objects, "Secret")
    password = base64.b64decode(secrets[f"{FULL}-postgres"]["data"]["password"]).decode()
    assert len(password) == 32  # generated, not a well-known default
    # no discovery by default: no token in the pods, no RBAC
    assert all(d["spec"]["template"]["spec"]["automountServiceAccountToken"] is False
               for d in deployments.values())
    assert not {"ClusterRole", "Role"} & set(kinds)


def test_querier_and_frontend_find_the_other_services() -> None:
    deployments = chart.by_kind(chart.render("default"), "Deployment")
    querier = chart.env(deployments[f"{FULL}-querier"])
    assert querier["FLAMEWATCH_SYMBOLIZER_ADDRESS"]["value"] == f"{FULL}-symbolizer:4501"
    frontend = chart.env(deployments[f"{FULL}-frontend"])
    assert frontend["FLAMEWATCH_QUERIER_URL"]["value"] == f"http://{FULL}-querier:4200"
    collector = chart.env(deployments[f"{FULL}-collector-0"])
    assert collector["FLAMEWATCH_INGESTER_ADDRESS"]["value"] == f"dns:///{FULL}-ingester-headless:4101"
    assert chart.container(deployments[f"{FULL}-symbolizer"])["args"] == ["symbolizer"]
    # the symbolizer keeps nothing in Postgres
    assert "FLAMEWATCH_STORAGE_POSTGRES_DSN" not in chart.env(deployments[f"{FULL}-symbolizer"])


@pytest.mark.parametrize("values", ["default", "ha"])
def test_queriers_find_each_other_through_a_headless_service(values: str) -> None:
    """Each querier is given the name that resolves to every ready querier pod's gRPC address (the querier
    leaves its own out), whether `replicas` or an autoscaler sets how many run."""
    objects = chart.render(values)
    spec = chart.headless_service(objects, "querier")
    (port,) = spec["ports"]
    assert port["port"] == 4201
    querier = chart.env(chart.by_kind(objects, "Deployment")[f"{FULL}-querier"])
    assert querier["FLAMEWATCH_GRPC_ADDRESS"]["value"] == ":4201"
    assert querier["FLAMEWATCH_QUERY_PEERS"]["value"] == f"dns:///{FULL}-querier-headless:4201"


def test_without_split_queries_each_querier_merges_alone() -> None:
    objects = chart.render("default", sets=("querier.splitQueries=false",))
    assert "FLAMEWATCH_QUERY_PEERS" not in chart.env(chart.by_kind(objects, "Deployment")[f"{FULL}-querier"])
    services = chart.by_kind(objects, "Service")
    assert f"{FULL}-querier-headless" not in services
    assert {f"{FULL}-querier", f"{FULL}-ingester-headless"} <= set(services)


def test_the_default_scrape_config_loads_and_scrapes_every_service() -> None:
    text = chart.by_kind(chart.render("default"), "ConfigMap")[f"{FULL}-collector"]["data"]["shard-0.yaml"]
    config = parse_config(text, "shard-0.yaml")  # the collector's own loader
    assert [job.job_name for job in config.scrape_configs] == ["flamewatch"]
    raw = yaml.safe_load(text)["scrape_configs"][0]["static_configs"]
    addresses = {target for group in raw for target in group["targets"]}
    assert addresses == {f"{FULL}-ingester:4100", f"{FULL}-querier:4200", f"{FULL}-frontend:8080",
                         f"{FULL}-symbolizer:4500", f"{FULL}-collector-0:4300"}


def test_external_storage_uses_the_existing_secrets_and_no_bundled_servers() -> None:
    objects = chart.render("external")
    assert not chart.by_kind(objects, "Secret")
    deployments = chart.by_kind(objects, "Deployment")
    assert f"{FULL}-postgres" not in deployments and f"{FULL}-minio" not in deployments
    assert not chart.by_kind(objects, "PersistentVolumeClaim")
    for name in ("ingester", "querier"):
        env = chart.env(deployments[f"{FULL}-{name}"])
        assert env["FLAMEWATCH_STORAGE_POSTGRES_DSN"]["value"] == \
            "postgresql://flamewatch_app@db.internal.example.com:6432/profiles?sslmode=verify-full"
        assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "flamewatch-db", "key": "db-password"}
    for name in ("ingester", "querier", "symbolizer"):
        env = chart.env(deployments[f"{FULL}-{name}"])
        assert env["FLAMEWATCH_STORAGE_S3_ENDPOINT"]["value"] == "s3.eu-west-1.amazonaws.com"
        assert env["FLAMEWATCH_STORAGE_S3_REGION"]["value"] == "eu-west-1"
        assert env["FLAMEWATCH_STORAGE_S3_BUCKET"]["value"] == "acme-profiles"
        assert env["FLAMEWATCH_STORAGE_S3_PREFIX"]["value"] == "prod/"
        assert env["FLAMEWATCH_STORAGE_S3_INSECURE"]["value"] == "false"
        assert env["FLAMEWATCH_STORAGE_S3_ACCESS_KEY"]["valueFrom"]["secretKeyRef"] == \
            {"name": "flamewatch-s3", "key": "AWS_ACCESS_KEY_ID"}
        assert env["FLAMEWATCH_STORAGE_S3_SECRET_KEY"]["valueFrom"]["secretKeyRef"] == \
            {"name": "flamewatch-s3", "key": "AWS_SECRET_ACCESS_KEY"}
        # no credential is written into the pod spec itself
        assert not any("value" in e and "secret" in e["name"].lower() for e in env.values())


def test_external_storage_with_passwords_in_values_puts_them_in_the_charts_secrets() -> None:
    objects = chart.render("external", sets=(
        "postgres.external.existingSecret=", "postgres.external.password=pg-pass",
        "objectStorage.external.existingSecret=", "objectStorage.external.accessKey=AK",
        "objectStorage.external.secretKey=SK"))
    secrets = {name: {k: base64.b64decode(v).decode() for k, v in s["data"].items()}
               for name, s in chart.by_kind(objects, "Secret").items()}
    assert secrets == {f"{FULL}-postgres": {"password": "pg-pass"},
                       f"{FULL}-s3": {"access-key": "AK", "secret-key": "SK"}}
    env = chart.env(chart.by_kind(objects, "Deployment")[f"{FULL}-querier"])
    assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": f"{FULL}-postgres", "key": "password"}


def test_ha_values_autoscale_ingester_and_querier() -> None:
    objects = chart.render("ha")
    deployments = chart.by_kind(objects, "Deployment")
    autoscalers = chart.by_kind(objects, "HorizontalPodAutoscaler")
    assert sorted(autoscalers) == [f"{FULL}-ingester", f"{FULL}-querier"]
    ingester = autoscalers[f"{FULL}-ingester"]["spec"]
    assert (ingester["minReplicas"], ingester["maxReplicas"]) == (3, 10)
    assert ingester["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"{FULL}-ingester"}
    assert ingester["metrics"][0]["resource"]["target"]["averageUtilization"] == 60
    # the autoscaler owns the replica count: the Deployments leave it out, so an upgrade does not reset it
    assert "replicas" not in deployments[f"{FULL}-ingester"]["spec"]
    assert "replicas" not in deployments[f"{FULL}-querier"]["spec"]
    assert deployments[f"{FULL}-frontend"]["spec"]["replicas"] == 2
    querier = deployments[f"{FULL}-querier"]
    assert chart.env(querier)["FLAMEWATCH_CACHE_DISK_DIR"]["value"] == "/var/cache/flamewatch"
    assert chart.env(querier)["FLAMEWATCH_CACHE_DISK_BYTES"]["value"] == "21474836480"
    volume = next(v for v in querier["spec"]["template"]["spec"]["volumes"] if v["name"] == "disk-cache")
    assert volume["emptyDir"]["sizeLimit"] == 23622320128


def test_ha_values_run_three_collector_shards_with_hashmod_relabeling() -> None:
    objects = chart.render("ha")
    deployments = chart.by_kind(objects, "Deployment")
    shards = [deployments[f"{FULL}-collector-{i}"] for i in range(3)]
    assert f"{FULL}-collector-3" not in deployments
    for i, shard in enumerate(shards):
        assert shard["spec"]["replicas"] == 1
        assert shard["spec"]["strategy"] == {"type": "Recreate"}  # never two pods of one shard at once
        assert shard["spec"]["selector"]["matchLabels"]["flamewatch.io/shard"] == str(i)
        (volume,) = [v for v in shard["spec"]["template"]["spec"]["volumes"] if "configMap" in v]
        assert volume["configMap"]["items"] == [{"key": f"shard-{i}.yaml", "path": "collector.yaml"}]
        for job in chart.shard_config(objects, i)["scrape_configs"]:
            assert job["relabel_configs"][-2:] == [
                {"source_labels": ["__address__"], "modulus": 3, "target_label": "__tmp_shard",
                 "action": "hashmod"},
                {"source_labels": ["__tmp_shard"], "regex": str(i), "action": "keep"}], (i, job["job_name"])
    # each shard keeps its own PDB and Service
    assert {f"{FULL}-collector-{i}" for i in range(3)} <= set(chart.by_kind(objects, "PodDisruptionBudget"))
    assert {f"{FULL}-collector-{i}" for i in range(3)} <= set(chart.by_kind(objects, "Service"))
    # the frontend's Targets page asks every shard
    assert chart.env(deployments[f"{FULL}-frontend"])["FLAMEWATCH_COLLECTOR_URL"]["value"] == \
        ",".join(f"http://{FULL}-collector-{i}:4300" for i in range(3))


def test_collector_shards_split_the_targets_between_them() -> None:
    """The rendered configurations, loaded and relabeled by the collector's own code: every target is
    kept by exactly one shard, and every shard gets some."""
    objects = chart.render("ha")
    configs = [parse_config(yaml.safe_dump(chart.shard_config(objects, i)), f"shard-{i}") for i in range(3)]
    addresses = [f"10.0.{n // 250}.{n % 250}:6060" for n in range(600)]
    kept_by: dict[str, list[int]] = {address: [] for address in addresses}
    for shard, config in enumerate(configs):
        job = next(j for j in config.scrape_configs if j.job_name == "payments")
        group = TargetGroup("test", tuple({"__address__": a} for a in addresses), {})
        for target in group.targets:
            labels = final_labels(job, discovered_labels(job, group, target))
            if labels is not None:
                kept_by[target["__address__"]].append(shard)
    assert all(len(shards) == 1 for shards in kept_by.values())
    sizes = Counter(shards[0] for shards in kept_by.values())
    assert sorted(sizes) == [0, 1, 2] and min(sizes.values()) > 100, sizes


def test_user_scrape_configs_are_templated_and_keep_their_own_rules() -> None:
    job = next(j for j in chart.shard_config(chart.render("ha"), 1)["scrape_configs"] if j["job_name"] == "payments")
    assert job["static_configs"][0]["targets"][0] == f"payments-0.payments.{helm.NAMESPACE}.svc:6060"
    assert job["relabel_configs"][0]["target_label"] == "pod"


def test_the_config_checksum_changes_exactly_when_the_scrape_config_does() -> None:
    def checksums(*sets: str) -> list[str]:
        deployments = chart.by_kind(chart.render("ha", sets=sets), "Deployment")
        return [deployments[f"{FULL}-collector-{i}"]["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
                for i in range(3)]

    before = checksums()
    assert len(set(before)) == 3  # each shard's own file
    assert checksums("collector.global.scrape_interval=30s") != before
    changed = checksums("collector.scrapeConfigs[0].job_name=checkout")
    assert all(a != b for a, b in zip(changed, before, strict=True))
    assert checksums("logLevel=debug", "ingester.autoscaling.maxReplicas=12") == before


def test_ingress_and_service_monitor() -> None:
    objects = chart.render("ingress-monitoring")
    (ingress,) = chart.by_kind(objects, "Ingress").values()
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == [{"secretName": "flamewatch-tls", "hosts": ["flamewatch.example.com"]}]
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "flamewatch.example.com"
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": f"{FULL}-frontend", "port": {"name": "http"}}
    (monitor,) = chart.by_kind(objects, "ServiceMonitor").values()
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
    assert monitor["spec"]["endpoints"] == [{"port": "http", "path": "/metrics", "interval": "30s"}]
    # the monitor's selector picks exactly the Flamewatch services, each of which has an http port
    selector = monitor["spec"]["selector"]
    picked = [s for s in chart.by_kind(objects, "Service").values() if chart.selects(selector, s["metadata"]["labels"])]
    assert sorted(s["metadata"]["labels"]["app.kubernetes.io/component"] for s in picked) == sorted(SERVICES)
    assert all("http" in {p["name"] for p in s["spec"]["ports"]} for s in picked)
    # the headless Services reach the same pods again: scraping them too would count each pod twice
    headless = {name for name in chart.by_kind(objects, "Service") if name.endswith("-headless")}
    assert headless == {f"{FULL}-ingester-headless", f"{FULL}-querier-headless"}
    assert not headless & {s["metadata"]["name"] for s in picked}


def test_kubernetes_discovery_renders_its_job_and_namespaced_rbac() -> None:
    objects = chart.render("discovery")
    roles = [(o["kind"], o["metadata"].get("namespace")) for o in objects if "Role" in o["kind"]]
    assert sorted(roles) == [("Role", "payments"), ("Role", "shop"), ("RoleBinding", "payments"),
                             ("RoleBinding", "shop")]
    role = next(o for o in objects if o["kind"] == "Role")
    assert {r for rule in role["rules"] for r in rule["resources"]} == {"pods", "services", "endpoints",
                                                                        "endpointslices"}
    assert {v for rule in role["rules"] for v in rule["verbs"]} == {"get", "list", "watch"}
    binding = next(o for o in objects if o["kind"] == "RoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": FULL, "namespace": helm.NAMESPACE}]
    collector = chart.by_kind(objects, "Deployment")[f"{FULL}-collector-0"]
    assert collector["spec"]["template"]["spec"]["automountServiceAccountToken"] is True
    jobs = chart.shard_config(objects, 0)["scrape_configs"][1:]
    assert [job["job_name"] for job in jobs] == [f"kubernetes-pods-{t}" for t in PROFILE_TYPES]
    assert all(job["kubernetes_sd_configs"] == [{"role": "pod", "namespaces": {"names": ["shop", "payments"]}}]
               for job in jobs)
    # every namespace: one ClusterRole instead
    cluster = chart.render("default", sets=("collector.kubernetesDiscovery.enabled=true",))
    assert sorted(o["kind"] for o in cluster if "Role" in o["kind"]) == ["ClusterRole", "ClusterRoleBinding"]
    (cluster_role,) = chart.by_kind(cluster, "ClusterRole").values()
    assert {r for rule in cluster_role["rules"] for r in rule["resources"]} == {
        "pods", "services", "endpoints", "endpointslices", "nodes"}


PROFILE_TYPES = {"cpu": "process_cpu", "memory": "memory", "goroutine": "goroutine", "mutex": "mutex",
                 "block": "block"}


def _annotated_pod(name: str, annotations: dict[str, str], phase: str = "Running") -> V1Pod:
    ports = [V1ContainerPort(name="pprof", container_port=6060), V1ContainerPort(name="http", container_port=8080)]
    return V1Pod(metadata=V1ObjectMeta(name=name, namespace="shop", uid=name, annotations=annotations),
                 spec=V1PodSpec(containers=[V1Container(name="app", image="app:1", ports=ports)]),
                 status=V1PodStatus(phase=phase, pod_ip="10.0.0.9"))


def _scraped(config, job_name: str, pods: list[V1Pod]) -> dict[str, dict[str, str]]:
    """pod/container port -> final labels (with __address__, __scheme__, __profile_path__) of what the job keeps."""
    job = next(j for j in config.scrape_configs if j.job_name == job_name)
    kept = {}
    for pod in pods:
        group = pod_group(pod)
        for target in group.targets:
            labels = final_labels(job, discovered_labels(job, group, target))
            if labels is not None:
                port = target["__meta_kubernetes_pod_container_port_name"]
                kept[f"{pod.metadata.name}/{port}"] = {k: v for k, v in labels.items() if not k.startswith("__meta_")}
    return kept


def test_kubernetes_discovery_by_default_scrapes_pods_annotated_the_pyroscope_way() -> None:
    objects = chart.render("default", sets=("collector.kubernetesDiscovery.enabled=true",))
    config = parse_config(chart.by_kind(objects, "ConfigMap")[f"{FULL}-collector"]["data"]["shard-0.yaml"])
    jobs = {job.job_name: job for job in config.scrape_configs}
    assert {"kubernetes-pods-cpu", "kubernetes-pods-memory"} <= set(jobs)
    assert [name for name, ep in jobs["kubernetes-pods-cpu"].profiling_config.pprof_config.items()
            if ep.enabled] == ["process_cpu"]
    assert [name for name, ep in jobs["kubernetes-pods-memory"].profiling_config.pprof_config.items()
            if ep.enabled] == ["memory"]
    g = "profiles.grafana.com/"
    pods = [
        _annotated_pod("by-number", {g + "cpu.scrape": "true", g + "cpu.port": "6060"}),
        _annotated_pod("by-name", {g + "cpu.scrape": "true", g + "cpu.port_name": "http", g + "cpu.scheme": "https",
                                   g + "cpu.path": "/custom/profile", g + "service_name": "checkout"}),
        _annotated_pod("memory-only", {g + "memory.scrape": "true", g + "memory.port_name": "pprof"}),
        _annotated_pod("not-annotated", {}),
        _annotated_pod("no-port", {g + "cpu.scrape": "true"}),
        _annotated_pod("finished", {g + "cpu.scrape": "true", g + "cpu.port": "6060"}, phase="Succeeded"),
    ]
    cpu = _scraped(config, "kubernetes-pods-cpu", pods)
    assert sorted(cpu) == ["by-name/http", "by-number/pprof"]
    assert cpu["by-number/pprof"] == {
        "__address__": "10.0.0.9:6060", "__scheme__": "http", "job": "kubernetes-pods-cpu", "namespace": "shop",
        "pod": "by-number", "container": "app", "service_name": "shop/app", "instance": "10.0.0.9:6060"}
    by_name = cpu["by-name/http"]
    assert (by_name["__address__"], by_name["__scheme__"], by_name["__profile_path__"], by_name["service_name"]) == (
        "10.0.0.9:8080", "https", "/custom/profile", "checkout")
    assert sorted(_scraped(config, "kubernetes-pods-memory", pods)) == ["memory-only/pprof"]


# --- refused values


def _expected_error(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# error: "), f"{path.name}: the first line must be `# error: <message>`"
    return first.removeprefix("# error: ")


@pytest.mark.parametrize("values", sorted(BAD.glob("*.yaml")), ids=lambda p: p.stem)
def test_bad_values_are_refused_with_a_clear_message(values: Path) -> None:
    with pytest.raises(helm.HelmError) as refused:
        helm.render([values])
    assert _expected_error(values) in str(refused.value)
