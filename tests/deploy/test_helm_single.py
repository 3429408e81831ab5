"""The chart's single-process mode (`mode: single`), rendered by the real `helm`: one Flamewatch pod runs
`flamewatch all` with the storage and the scrape configuration the microservices would get, behind the
frontend Service's name and port, and none of the microservices' objects. (Lint, object validity, security
contexts, probes and flags are checked for `ci/single-values.yaml` with every values file in
test_helm_chart.py; the cluster test installs it.)"""

from __future__ import annotations

import pytest
import yaml
from chart import FULL, by_kind
from infra import helm

from flamewatch.collector.config import parse_config

pytestmark = [pytest.mark.helm, pytest.mark.usefixtures("helm_binary")]



def test_one_pod_runs_every_service_behind_the_frontends_service() -> None:
    objects = helm.render(sets=["mode=single", "collector.kubernetesDiscovery.enabled=true"])
    deployments = by_kind(objects, "Deployment")
    assert set(deployments) == {f"{FULL}-all", f"{FULL}-postgres", f"{FULL}-minio"}
    single = deployments[f"{FULL}-all"]
    assert single["spec"]["replicas"] == 1 and single["spec"]["strategy"]["type"] == "Recreate"
    pod = single["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["args"] == ["all", "--config.file=/etc/flamewatch/collector.yaml"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["FLAMEWATCH_HTTP_ADDRESS"] == ":8080" and env["FLAMEWATCH_DATA_DIR"] == "/var/lib/flamewatch"
    volumes = [v["name"] for v in pod["volumes"]]
    assert len(volumes) == len(set(volumes)), volumes
    assert {"FLAMEWATCH_STORAGE_POSTGRES_DSN", "FLAMEWATCH_STORAGE_S3_BUCKET"} <= set(env)
    assert pod["automountServiceAccountToken"] is True  # discovery reads the API with it

    service = by_kind(objects, "Service")[f"{FULL}-frontend"]
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "all"
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [("http", 8080), ("grpc", 4040)]

    config = by_kind(objects, "ConfigMap")[f"{FULL}-all"]["data"]["collector.yaml"]
    loaded = parse_config(config)
    jobs = {job.job_name: job for job in loaded.scrape_configs}
    assert {"flamewatch", "kubernetes-pods-cpu", "kubernetes-pods-memory"} <= set(jobs)
    [group] = yaml.safe_load(config)["scrape_configs"][0]["static_configs"]
    assert group == {"targets": [f"{FULL}-frontend:8080"], "labels": {"service_name": "flamewatch"}}
    assert "checksum/config" in single["spec"]["template"]["metadata"]["annotations"]


def test_microservices_remain_the_default() -> None:
    deployments = by_kind(helm.render(), "Deployment")
    assert f"{FULL}-all" not in deployments and f"{FULL}-ingester" in deployments
