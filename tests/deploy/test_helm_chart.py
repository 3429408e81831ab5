"""The Helm chart `deploy/helm/flamewatch`, rendered by the real `helm` for each values file of its `ci/`
folder: lint clean, every object valid against the Kubernetes OpenAPI schemas, and what each values file
must change asserted object by object (replicas, autoscalers, collector shards and their `hashmod`
relabeling, the headless Services through which collectors find ingesters and queriers find each other,
the config checksum, secrets, security contexts, probes). Bad values files under
`testdata/bad/` must be refused at install with the message written on their first line.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
from collections import Counter
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from infra import helm
from kubernetes.client import V1Container, V1ContainerPort, V1ObjectMeta, V1Pod, V1PodSpec, V1PodStatus

from flamewatch import cli
from flamewatch.cli.flags import env_name, storage_config
from flamewatch.collector.config import parse_config
from flamewatch.collector.discovery.kubernetes_labels import pod_group
from flamewatch.collector.targetgroup import TargetGroup
from flamewatch.collector.targets import discovered_labels, final_labels

pytestmark = [pytest.mark.helm, pytest.mark.usefixtures("helm_binary")]

CI = helm.CHART / "ci"
VALUES_FILES = sorted(CI.glob("*.yaml"))
BAD = Path(__file__).parent / "testdata" / "bad"
FULL = f"{helm.RELEASE}-flamewatch"
KUBERNETES = helm.KUBE_VERSION
SERVICES = ("ingester", "querier", "frontend", "symbolizer", "collector")
# Object kinds kubernetes-validate has no schema for (custom resources): checked field by field below.
CUSTOM_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor")}


def _render(*names: str, sets: tuple[str, ...] = ()) -> list[dict]:
    return helm.render([CI / f"{name}-values.yaml" for name in names], sets)


def _by_kind(objects: list[dict], kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def _container(deployment: dict) -> dict:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def _env(deployment: dict) -> dict[str, dict]:
    return {e["name"]: e for e in _container(deployment)["env"]}


def _flamewatch_deployments(objects: list[dict]) -> dict[str, dict]:
    return {name: d for name, d in _by_kind(objects, "Deployment").items()
            if d["metadata"]["labels"]["app.kubernetes.io/component"] in SERVICES}


def _shard_config(objects: list[dict], shard: int) -> dict:
    configmap = _by_kind(objects, "ConfigMap")[f"{FULL}-collector"]
    return yaml.safe_load(configmap["data"][f"shard-{shard}.yaml"])


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
    deployments = _by_kind(helm.render([values]), "Deployment")
    for name, deployment in deployments.items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        context = _container(deployment)["securityContext"]
        assert context["readOnlyRootFilesystem"] is True, name
        assert context["allowPrivilegeEscalation"] is False, name
        assert context["capabilities"]["drop"] == ["ALL"], name
        # what must be written goes to emptyDirs (or claims), never the image's filesystem
        mounted = {m["mountPath"] for m in _container(deployment)["volumeMounts"]}
        assert "/tmp" in mounted, name


@pytest.mark.parametrize("values", VALUES_FILES, ids=lambda p: p.stem)
def test_services_are_probed_on_readyz_and_healthz(values: Path) -> None:
    objects = helm.render([values])
    services = _by_kind(objects, "Service")
    tls = {"scheme": "HTTPS"} if (yaml.safe_load(values.read_text()) or {}).get("security", {}).get("tls") else {}
    for name, deployment in _flamewatch_deployments(objects).items():
        container = _container(deployment)
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http", **tls}, name
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http", **tls}, name
        assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http", **tls}, name
        assert container["resources"]["requests"], name
        # the Service of the same name reaches the port the probes use
        assert "http" in {p["targetPort"] for p in services[name]["spec"]["ports"]}, name
        http = next(p["containerPort"] for p in container["ports"] if p["name"] == "http")
        assert _env(deployment)["FLAMEWATCH_HTTP_ADDRESS"]["value"] == f":{http}", name


@pytest.mark.parametrize("values", VALUES_FILES, ids=lambda p: p.stem)
def test_every_referenced_secret_and_configmap_is_rendered_or_named_in_values(values: Path) -> None:
    objects = helm.render([values])
    secrets = {name: set(s["data"]) for name, s in _by_kind(objects, "Secret").items()}
    existing = {"flamewatch-db": {"db-password"}, "flamewatch-s3": {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}}
    for name, deployment in _by_kind(objects, "Deployment").items():
        for env in _container(deployment)["env"]:
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                keys = secrets.get(ref["name"], existing.get(ref["name"]))
                assert keys is not None and ref["key"] in keys, (name, env)
        for volume in deployment["spec"]["template"]["spec"]["volumes"]:
            if "configMap" in volume:
                assert volume["configMap"]["name"] in _by_kind(objects, "ConfigMap"), name


def _selects(selector: dict, labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels, and matchExpressions with In or DoesNotExist) on labels."""
    def matches(expression: dict) -> bool:
        if expression["operator"] == "In":
            return labels.get(expression["key"]) in expression["values"]
        assert expression["operator"] == "DoesNotExist", expression
        return expression["key"] not in labels
    return (all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())
            and all(matches(e) for e in selector.get("matchExpressions", ())))


# --- what each values file changes


def test_default_values_render_a_small_complete_installation() -> None:
    objects = _render("default")
    kinds = Counter(o["kind"] for o in objects)
    assert kinds == {"Deployment": 7, "Service": 9, "PodDisruptionBudget": 5, "Secret": 2, "ConfigMap": 1,
                     "ServiceAccount": 1}
    deployments = _by_kind(objects, "Deployment")
    assert sorted(deployments) == sorted(f"{FULL}-{n}" for n in (
        "ingester", "querier", "frontend", "symbolizer", "collector-0", "postgres", "minio"))
    assert all(d["spec"]["replicas"] == 1 for d in deployments.values())
    # bundled storage: the services point at the bundled servers, credentials from the chart's Secrets
    ingester = _env(deployments[f"{FULL}-ingester"])
    assert ingester["FLAMEWATCH_STORAGE_POSTGRES_DSN"]["value"] == \
        f"postgresql://flamewatch@{FULL}-postgres:5432/flamewatch?sslmode=disable"
    assert ingester["PGPASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": f"{FULL}-postgres", "key": "password"}
    assert ingester["FLAMEWATCH_STORAGE_S3_ENDPOINT"]["value"] == f"{FULL}-minio:9000"
    assert ingester["FLAMEWATCH_STORAGE_S3_INSECURE"]["value"] == "true"
    secrets = _by_kind(objects, "Secret")
    password = base64.b64decode(secrets[f"{FULL}-postgres"]["data"]["password"]).decode()
    assert len(password) == 32  # generated, not a well-known default
    # no discovery by default: no token in the pods, no RBAC
    assert all(d["spec"]["template"]["spec"]["automountServiceAccountToken"] is False
               for d in deployments.values())
    assert not {"ClusterRole", "Role"} & set(kinds)


def test_querier_and_frontend_find_the_other_services() -> None:
    deployments = _by_kind(_render("default"), "Deployment")
    assert _env(deployments[f"{FULL}-querier"])["FLAMEWATCH_SYMBOLIZER_ADDRESS"]["value"] == f"{FULL}-symbolizer:4501"
    frontend = _env(deployments[f"{FULL}-frontend"])
    assert frontend["FLAMEWATCH_QUERIER_URL"]["value"] == f"http://{FULL}-querier:4200"
    collector = _env(deployments[f"{FULL}-collector-0"])
    assert collector["FLAMEWATCH_INGESTER_ADDRESS"]["value"] == f"dns:///{FULL}-ingester-headless:4101"
    assert _container(deployments[f"{FULL}-symbolizer"])["args"] == ["symbolizer"]
    # the symbolizer keeps nothing in Postgres
    assert "FLAMEWATCH_STORAGE_POSTGRES_DSN" not in _env(deployments[f"{FULL}-symbolizer"])


def _headless_service(objects: list[dict], component: str) -> dict:
    """The spec of `<fullname>-<component>-headless`, checked to be the component's gRPC port on its ready pods
    only, labelled for the ServiceMonitor to leave out."""
    service = _by_kind(objects, "Service")[f"{FULL}-{component}-headless"]
    assert service["metadata"]["labels"]["flamewatch.io/headless"] == "true"
    spec = service["spec"]
    assert (spec["clusterIP"], spec["publishNotReadyAddresses"]) == ("None", False)
    deployment = _by_kind(objects, "Deployment")[f"{FULL}-{component}"]
    grpc = next(p["containerPort"] for p in _container(deployment)["ports"] if p["name"] == "grpc")
    assert spec["ports"] == [{"name": "grpc", "port": grpc, "targetPort": "grpc", "protocol": "TCP"}]
    # it resolves to the component's pods and to no other Deployment's
    pods = {name: d["spec"]["template"]["metadata"]["labels"] for name, d in _by_kind(objects, "Deployment").items()}
    assert [name for name, labels in pods.items() if _selects({"matchLabels": spec["selector"]}, labels)] == \
        [f"{FULL}-{component}"]
    return spec


@pytest.mark.parametrize("values", ["default", "ha"])
def test_queriers_find_each_other_through_a_headless_service(values: str) -> None:
    """Each querier is given the name that resolves to every ready querier pod's gRPC address (the querier
    leaves its own out), whether `replicas` or an autoscaler sets how many run."""
    objects = _render(values)
    spec = _headless_service(objects, "querier")
    (port,) = spec["ports"]
    assert port["port"] == 4201
    querier = _env(_by_kind(objects, "Deployment")[f"{FULL}-querier"])
    assert querier["FLAMEWATCH_GRPC_ADDRESS"]["value"] == ":4201"
    assert querier["FLAMEWATCH_QUERY_PEERS"]["value"] == f"dns:///{FULL}-querier-headless:4201"


def test_without_split_queries_each_querier_merges_alone() -> None:
    objects = _render("default", sets=("querier.splitQueries=false",))
    assert "FLAMEWATCH_QUERY_PEERS" not in _env(_by_kind(objects, "Deployment")[f"{FULL}-querier"])
    services = _by_kind(objects, "Service")
    assert f"{FULL}-querier-headless" not in services
    assert {f"{FULL}-querier", f"{FULL}-ingester-headless"} <= set(services)


def test_the_default_scrape_config_loads_and_scrapes_every_service() -> None:
    text = _by_kind(_render("default"), "ConfigMap")[f"{FULL}-collector"]["data"]["shard-0.yaml"]
    config = parse_config(text, "shard-0.yaml")  # the collector's own loader
    assert [job.job_name for job in config.scrape_configs] == ["flamewatch"]
    raw = yaml.safe_load(text)["scrape_configs"][0]["static_configs"]
    addresses = {target for group in raw for target in group["targets"]}
    assert addresses == {f"{FULL}-ingester:4100", f"{FULL}-querier:4200", f"{FULL}-frontend:8080",
                         f"{FULL}-symbolizer:4500", f"{FULL}-collector-0:4300"}


def test_external_storage_uses_the_existing_secrets_and_no_bundled_servers() -> None:
    objects = _render("external")
    assert not _by_kind(objects, "Secret")
    deployments = _by_kind(objects, "Deployment")
    assert f"{FULL}-postgres" not in deployments and f"{FULL}-minio" not in deployments
    assert not _by_kind(objects, "PersistentVolumeClaim")
    for name in ("ingester", "querier"):
        env = _env(deployments[f"{FULL}-{name}"])
        assert env["FLAMEWATCH_STORAGE_POSTGRES_DSN"]["value"] == \
            "postgresql://flamewatch_app@db.internal.example.com:6432/profiles?sslmode=verify-full"
        assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "flamewatch-db", "key": "db-password"}
    for name in ("ingester", "querier", "symbolizer"):
        env = _env(deployments[f"{FULL}-{name}"])
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
    objects = _render("external", sets=(
        "postgres.external.existingSecret=", "postgres.external.password=pg-pass",
        "objectStorage.external.existingSecret=", "objectStorage.external.accessKey=AK",
        "objectStorage.external.secretKey=SK"))
    secrets = {name: {k: base64.b64decode(v).decode() for k, v in s["data"].items()}
               for name, s in _by_kind(objects, "Secret").items()}
    assert secrets == {f"{FULL}-postgres": {"password": "pg-pass"},
                       f"{FULL}-s3": {"access-key": "AK", "secret-key": "SK"}}
    env = _env(_by_kind(objects, "Deployment")[f"{FULL}-querier"])
    assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": f"{FULL}-postgres", "key": "password"}


def test_ha_values_autoscale_ingester_and_querier() -> None:
    objects = _render("ha")
    deployments = _by_kind(objects, "Deployment")
    autoscalers = _by_kind(objects, "HorizontalPodAutoscaler")
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
    assert _env(querier)["FLAMEWATCH_CACHE_DISK_DIR"]["value"] == "/var/cache/flamewatch"
    assert _env(querier)["FLAMEWATCH_CACHE_DISK_BYTES"]["value"] == "21474836480"
    volume = next(v for v in querier["spec"]["template"]["spec"]["volumes"] if v["name"] == "disk-cache")
    assert volume["emptyDir"]["sizeLimit"] == 23622320128


def test_ha_values_run_three_collector_shards_with_hashmod_relabeling() -> None:
    objects = _render("ha")
    deployments = _by_kind(objects, "Deployment")
    shards = [deployments[f"{FULL}-collector-{i}"] for i in range(3)]
    assert f"{FULL}-collector-3" not in deployments
    for i, shard in enumerate(shards):
        assert shard["spec"]["replicas"] == 1
        assert shard["spec"]["strategy"] == {"type": "Recreate"}  # never two pods of one shard at once
        assert shard["spec"]["selector"]["matchLabels"]["flamewatch.io/shard"] == str(i)
        (volume,) = [v for v in shard["spec"]["template"]["spec"]["volumes"] if "configMap" in v]
        assert volume["configMap"]["items"] == [{"key": f"shard-{i}.yaml", "path": "collector.yaml"}]
        for job in _shard_config(objects, i)["scrape_configs"]:
            assert job["relabel_configs"][-2:] == [
                {"source_labels": ["__address__"], "modulus": 3, "target_label": "__tmp_shard",
                 "action": "hashmod"},
                {"source_labels": ["__tmp_shard"], "regex": str(i), "action": "keep"}], (i, job["job_name"])
    # each shard keeps its own PDB and Service
    assert {f"{FULL}-collector-{i}" for i in range(3)} <= set(_by_kind(objects, "PodDisruptionBudget"))
    assert {f"{FULL}-collector-{i}" for i in range(3)} <= set(_by_kind(objects, "Service"))
    # the frontend's Targets page asks every shard
    assert _env(deployments[f"{FULL}-frontend"])["FLAMEWATCH_COLLECTOR_URL"]["value"] == \
        ",".join(f"http://{FULL}-collector-{i}:4300" for i in range(3))


def test_collector_shards_split_the_targets_between_them() -> None:
    """The rendered configurations, loaded and relabeled by the collector's own code: every target is
    kept by exactly one shard, and every shard gets some."""
    objects = _render("ha")
    configs = [parse_config(yaml.safe_dump(_shard_config(objects, i)), f"shard-{i}") for i in range(3)]
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
    job = next(j for j in _shard_config(_render("ha"), 1)["scrape_configs"] if j["job_name"] == "payments")
    assert job["static_configs"][0]["targets"][0] == f"payments-0.payments.{helm.NAMESPACE}.svc:6060"
    assert job["relabel_configs"][0]["target_label"] == "pod"


def test_the_config_checksum_changes_exactly_when_the_scrape_config_does() -> None:
    def checksums(*sets: str) -> list[str]:
        deployments = _by_kind(_render("ha", sets=sets), "Deployment")
        return [deployments[f"{FULL}-collector-{i}"]["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
                for i in range(3)]

    before = checksums()
    assert len(set(before)) == 3  # each shard's own file
    assert checksums("collector.global.scrape_interval=30s") != before
    changed = checksums("collector.scrapeConfigs[0].job_name=checkout")
    assert all(a != b for a, b in zip(changed, before, strict=True))
    assert checksums("logLevel=debug", "ingester.autoscaling.maxReplicas=12") == before


def test_ingress_and_service_monitor() -> None:
    objects = _render("ingress-monitoring")
    (ingress,) = _by_kind(objects, "Ingress").values()
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == [{"secretName": "flamewatch-tls", "hosts": ["flamewatch.example.com"]}]
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "flamewatch.example.com"
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": f"{FULL}-frontend", "port": {"name": "http"}}
    (monitor,) = _by_kind(objects, "ServiceMonitor").values()
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
    assert monitor["spec"]["endpoints"] == [{"port": "http", "path": "/metrics", "interval": "30s"}]
    # the monitor's selector picks exactly the Flamewatch services, each of which has an http port
    selector = monitor["spec"]["selector"]
    picked = [s for s in _by_kind(objects, "Service").values() if _selects(selector, s["metadata"]["labels"])]
    assert sorted(s["metadata"]["labels"]["app.kubernetes.io/component"] for s in picked) == sorted(SERVICES)
    assert all("http" in {p["name"] for p in s["spec"]["ports"]} for s in picked)
    # the headless Services reach the same pods again: scraping them too would count each pod twice
    headless = {name for name in _by_kind(objects, "Service") if name.endswith("-headless")}
    assert headless == {f"{FULL}-ingester-headless", f"{FULL}-querier-headless"}
    assert not headless & {s["metadata"]["name"] for s in picked}


def test_kubernetes_discovery_renders_its_job_and_namespaced_rbac() -> None:
    objects = _render("discovery")
    roles = [(o["kind"], o["metadata"].get("namespace")) for o in objects if "Role" in o["kind"]]
    assert sorted(roles) == [("Role", "payments"), ("Role", "shop"), ("RoleBinding", "payments"),
                             ("RoleBinding", "shop")]
    role = next(o for o in objects if o["kind"] == "Role")
    assert {r for rule in role["rules"] for r in rule["resources"]} == {"pods", "services", "endpoints",
                                                                        "endpointslices"}
    assert {v for rule in role["rules"] for v in rule["verbs"]} == {"get", "list", "watch"}
    binding = next(o for o in objects if o["kind"] == "RoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": FULL, "namespace": helm.NAMESPACE}]
    collector = _by_kind(objects, "Deployment")[f"{FULL}-collector-0"]
    assert collector["spec"]["template"]["spec"]["automountServiceAccountToken"] is True
    jobs = _shard_config(objects, 0)["scrape_configs"][1:]
    assert [job["job_name"] for job in jobs] == [f"kubernetes-pods-{t}" for t in PROFILE_TYPES]
    assert all(job["kubernetes_sd_configs"] == [{"role": "pod", "namespaces": {"names": ["shop", "payments"]}}]
               for job in jobs)
    # every namespace: one ClusterRole instead
    cluster = _render("default", sets=("collector.kubernetesDiscovery.enabled=true",))
    assert sorted(o["kind"] for o in cluster if "Role" in o["kind"]) == ["ClusterRole", "ClusterRoleBinding"]
    (cluster_role,) = _by_kind(cluster, "ClusterRole").values()
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
    objects = _render("default", sets=("collector.kubernetesDiscovery.enabled=true",))
    config = parse_config(_by_kind(objects, "ConfigMap")[f"{FULL}-collector"]["data"]["shard-0.yaml"])
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


# --- the rendered pods against the `flamewatch` command they run


def _parsed(deployment: dict, monkeypatch: pytest.MonkeyPatch):
    """The container's command line parsed by flamewatch's own parser, with the container's environment
    (a secret's value stands in as "<secret>/<key>")."""
    container = _container(deployment)
    for name in [n for n in os.environ if n.startswith("FLAMEWATCH_")]:
        monkeypatch.delenv(name)
    env = {}
    for var in container["env"]:
        ref = var.get("valueFrom", {}).get("secretKeyRef")
        env[var["name"]] = f"{ref['name']}/{ref['key']}" if ref else var["value"]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert container["command"] == ["flamewatch"]
    return cli.build_parser().parse_args(container["args"]), env


def _flags(command: str) -> set[str]:
    parser = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {env_name(flag) for action in parser.choices[command]._actions for flag in action.option_strings}


@pytest.mark.parametrize("values", VALUES_FILES, ids=lambda p: p.stem)
def test_every_flamewatch_variable_is_a_flag_of_the_command(values: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A misspelt FLAMEWATCH_* variable would be ignored without a word: each must name a flag."""
    for name, deployment in _flamewatch_deployments(helm.render([values])).items():
        args, env = _parsed(deployment, monkeypatch)
        unknown = {v for v in env if v.startswith("FLAMEWATCH_")} - _flags(args.command)
        assert not unknown, (name, unknown)


def test_the_storage_the_pods_open_is_the_configured_one(monkeypatch: pytest.MonkeyPatch) -> None:
    deployments = _by_kind(_render("external"), "Deployment")
    for name in ("ingester", "querier"):
        args, _ = _parsed(deployments[f"{FULL}-{name}"], monkeypatch)
        storage = storage_config(args)
        assert storage.postgres.dsn == \
            "postgresql://flamewatch_app@db.internal.example.com:6432/profiles?sslmode=verify-full"
        store = storage.object_store
        assert (store.bucket, store.endpoint, store.region, store.insecure, store.prefix) == \
            ("acme-profiles", "s3.eu-west-1.amazonaws.com", "eu-west-1", False, "prod/")
        assert (store.access_key, store.secret_key) == \
            ("flamewatch-s3/AWS_ACCESS_KEY_ID", "flamewatch-s3/AWS_SECRET_ACCESS_KEY")
    bundled = _by_kind(_render("default"), "Deployment")
    args, _ = _parsed(bundled[f"{FULL}-ingester"], monkeypatch)
    store = storage_config(args).object_store
    assert (store.endpoint, store.insecure) == (f"{FULL}-minio:9000", True)
    assert args.flush_interval == 0.5 and args.compaction_interval == 60


def test_services_listen_where_their_ports_and_services_say(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = _render("ha")
    services = _by_kind(objects, "Service")
    for name, deployment in _flamewatch_deployments(objects).items():
        args, _ = _parsed(deployment, monkeypatch)
        ports = {p["name"]: p["containerPort"] for p in _container(deployment)["ports"]}
        assert args.http_address == f":{ports['http']}", name
        if "grpc" in ports:
            assert args.grpc_address == f":{ports['grpc']}", name
        assert {p["targetPort"] for p in services[name]["spec"]["ports"]} == set(ports), name
    collector, _ = _parsed(_by_kind(objects, "Deployment")[f"{FULL}-collector-2"], monkeypatch)
    assert collector.config_file == "/etc/flamewatch/collector.yaml"
    # the collector spreads its batches over every ingester pod the headless Service resolves to
    assert collector.ingester_address == f"dns:///{FULL}-ingester-headless:4101"
    headless = _headless_service(objects, "ingester")
    assert headless["selector"] == services[f"{FULL}-ingester"]["spec"]["selector"]
    querier, _ = _parsed(_by_kind(objects, "Deployment")[f"{FULL}-querier"], monkeypatch)
    assert (querier.cache_bytes, querier.disk_cache_dir, querier.disk_cache_bytes) == \
        (536870912, "/var/cache/flamewatch", 21474836480)


def test_without_the_symbolizer_nothing_points_at_it() -> None:
    objects = _render("default", sets=("symbolizer.enabled=false",))
    assert not [o for o in objects if o["metadata"]["name"].endswith("-symbolizer")]
    assert "FLAMEWATCH_SYMBOLIZER_ADDRESS" not in _env(_by_kind(objects, "Deployment")[f"{FULL}-querier"])
    targets = {t for group in _shard_config(objects, 0)["scrape_configs"][0]["static_configs"]
               for t in group["targets"]}
    assert f"{FULL}-symbolizer:4500" not in targets and len(targets) == 4


def test_without_jobs_the_collector_gets_an_empty_but_valid_configuration() -> None:
    text = _by_kind(_render("default", sets=("collector.selfScrape=false",)), "ConfigMap")[f"{FULL}-collector"]
    config = parse_config(text["data"]["shard-0.yaml"], "shard-0.yaml")
    assert config.scrape_configs == ()


def test_image_and_pull_secrets_reach_every_pod() -> None:
    objects = _render("default", sets=("image.repository=registry.example.com/flamewatch", "image.tag=1.2.3",
                                       "imagePullSecrets[0].name=regcred"))
    for name, deployment in _by_kind(objects, "Deployment").items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["imagePullSecrets"] == [{"name": "regcred"}], name
        if name in _flamewatch_deployments(objects):
            assert _container(deployment)["image"] == "registry.example.com/flamewatch:1.2.3", name


def test_debuginfod_servers_reach_the_symbolizer_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = _render("default", sets=("symbolizer.debuginfodUrls={https://a.example.org,https://b.example.org}",))
    args, _ = _parsed(_by_kind(objects, "Deployment")[f"{FULL}-symbolizer"], monkeypatch)
    assert args.command == "symbolizer"
    assert args.debuginfod_urls == ["https://a.example.org", "https://b.example.org"]


def test_security_mounts_the_web_configuration_and_speaks_https_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = _render("security")
    deployments = _flamewatch_deployments(objects)
    assert sorted(deployments) == sorted(f"{FULL}-{s}" for s in ("ingester", "querier", "frontend", "symbolizer",
                                                                  "collector-0"))
    for name, deployment in deployments.items():
        container, pod = _container(deployment), deployment["spec"]["template"]["spec"]
        assert "--web.config.file=/etc/flamewatch/web/web.yml" in container["args"], name
        assert {"name": "web-config", "mountPath": "/etc/flamewatch/web", "readOnly": True} in container["volumeMounts"]
        secret = {"secretName": "flamewatch-web", "defaultMode": 0o440}
        assert {"name": "web-config", "secret": secret} in pod["volumes"]
        assert not [e for e in container["env"] if "WEB" in e["name"]]  # a file, never an environment variable
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert container[probe]["httpGet"]["scheme"] == "HTTPS", (name, probe)
        assert cli.build_parser().parse_args(container["args"]).web_config_file == "/etc/flamewatch/web/web.yml"
    env = _env(deployments[f"{FULL}-frontend"])
    assert env["FLAMEWATCH_QUERIER_URL"]["value"] == f"https://{FULL}-querier:4200"
    assert env["FLAMEWATCH_COLLECTOR_URL"]["value"] == f"https://{FULL}-collector-0:4300"
    (job,) = [j for j in _shard_config(objects, 0)["scrape_configs"] if j["job_name"] == "flamewatch"]
    assert (job["scheme"], job["authorization"], job["tls_config"]) == (
        "https", {"credentials_file": "/etc/flamewatch/web/scrape.token"}, {"ca_file": "/etc/flamewatch/web/ca.crt"})
    (monitor,) = _by_kind(objects, "ServiceMonitor").values()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["authorization"] == {"credentials": {"name": "flamewatch-metrics", "key": "token"}}
    assert endpoint["tlsConfig"] == {"ca": {"secret": {"name": "flamewatch-web", "key": "ca.crt"}}}


def test_without_security_nothing_is_mounted_and_http_is_plain() -> None:
    for name, deployment in _flamewatch_deployments(_render("default")).items():
        container = _container(deployment)
        assert not [a for a in container["args"] if a.startswith("--web.config.file")], name
        assert "scheme" not in container["readinessProbe"]["httpGet"]
        assert all(m["name"] != "web-config" for m in container["volumeMounts"])


def test_incidents_go_to_alertmanager_with_links_under_the_ingress(monkeypatch: pytest.MonkeyPatch) -> None:
    from flamewatch.cli.alerts import alerting_config

    deployments = _by_kind(_render("ingress-monitoring"), "Deployment")
    for component in ("ingester", "querier"):
        args, _ = _parsed(deployments[f"{FULL}-{component}"], monkeypatch)
        config = alerting_config(args)
        assert config.alertmanager_urls == ("http://alertmanager-operated.monitoring:9093",)
        assert config.external_url == "https://flamewatch.example.com"  # the Ingress's host, with TLS
    assert not any(name.startswith("FLAMEWATCH_ALERTMANAGER") for d in _by_kind(_render("default"), "Deployment")
                   .values() for name in _env(d))
    explicit = _by_kind(_render("default", sets=("alertmanager.url=http://a:9093\\,http://b:9093",
                                                 "externalUrl=http://ui.example:8080")), "Deployment")
    args, _ = _parsed(explicit[f"{FULL}-ingester"], monkeypatch)
    config = alerting_config(args)
    assert (config.alertmanager_urls, config.external_url) == (("http://a:9093", "http://b:9093"),
                                                               "http://ui.example:8080")
