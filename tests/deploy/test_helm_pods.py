"""The chart's rendered pods against the `flamewatch` command they run: each container's command line and
environment parsed by Flamewatch's own parser, for every values file of the chart's `ci/` folder. Every
FLAMEWATCH_* variable names a flag of its command, the storage the pods open is the configured one, the
services listen where their ports and Services say, and each optional part (symbolizer, security, image
pull secrets, debuginfod servers, Alertmanager) reaches exactly the pods that use it."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import chart
import pytest
from chart import FULL, VALUES_FILES
from infra import helm

from flamewatch import cli
from flamewatch.cli.flags import env_name, storage_config
from flamewatch.collector.config import parse_config

pytestmark = [pytest.mark.helm, pytest.mark.usefixtures("helm_binary")]


def _parsed(deployment: dict, monkeypatch: pytest.MonkeyPatch):
    """The container's command line parsed by flamewatch's own parser, with the container's environment
    (a secret's value stands in as "<secret>/<key>")."""
    container = chart.container(deployment)
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
    for name, deployment in chart.flamewatch_deployments(helm.render([values])).items():
        args, env = _parsed(deployment, monkeypatch)
        unknown = {v for v in env if v.startswith("FLAMEWATCH_")} - _flags(args.command)
        assert not unknown, (name, unknown)


def test_the_storage_the_pods_open_is_the_configured_one(monkeypatch: pytest.MonkeyPatch) -> None:
    deployments = chart.by_kind(chart.render("external"), "Deployment")
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
    bundled = chart.by_kind(chart.render("default"), "Deployment")
    args, _ = _parsed(bundled[f"{FULL}-ingester"], monkeypatch)
    store = storage_config(args).object_store
    assert (store.endpoint, store.insecure) == (f"{FULL}-minio:9000", True)
    assert args.flush_interval == 0.5 and args.compaction_interval == 60


def test_services_listen_where_their_ports_and_services_say(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = chart.render("ha")
    services = chart.by_kind(objects, "Service")
    for name, deployment in chart.flamewatch_deployments(objects).items():
        args, _ = _parsed(deployment, monkeypatch)
        ports = {p["name"]: p["containerPort"] for p in chart.container(deployment)["ports"]}
        assert args.http_address == f":{ports['http']}", name
        if "grpc" in ports:
            assert args.grpc_address == f":{ports['grpc']}", name
        assert {p["targetPort"] for p in services[name]["spec"]["ports"]} == set(ports), name
    collector, _ = _parsed(chart.by_kind(objects, "Deployment")[f"{FULL}-collector-2"], monkeypatch)
    assert collector.config_file == "/etc/flamewatch/collector.yaml"
    # the collector spreads its batches over every ingester pod the headless Service resolves to
    assert collector.ingester_address == f"dns:///{FULL}-ingester-headless:4101"
    headless = chart.headless_service(objects, "ingester")
    assert headless["selector"] == services[f"{FULL}-ingester"]["spec"]["selector"]
    querier, _ = _parsed(chart.by_kind(objects, "Deployment")[f"{FULL}-querier"], monkeypatch)
    assert (querier.cache_bytes, querier.disk_cache_dir, querier.disk_cache_bytes) == \
        (536870912, "/var/cache/flamewatch", 21474836480)


def test_without_the_symbolizer_nothing_points_at_it() -> None:
    objects = chart.render("default", sets=("symbolizer.enabled=false",))
    assert not [o for o in objects if o["metadata"]["name"].endswith("-symbolizer")]
    assert "FLAMEWATCH_SYMBOLIZER_ADDRESS" not in chart.env(chart.by_kind(objects, "Deployment")[f"{FULL}-querier"])
    targets = {t for group in chart.shard_config(objects, 0)["scrape_configs"][0]["static_configs"]
               for t in group["targets"]}
    assert f"{FULL}-symbolizer:4500" not in targets and len(targets) == 4


def test_without_jobs_the_collector_gets_an_empty_but_valid_configuration() -> None:
    objects = chart.render("default", sets=("collector.selfScrape=false",))
    text = chart.by_kind(objects, "ConfigMap")[f"{FULL}-collector"]
    config = parse_config(text["data"]["shard-0.yaml"], "shard-0.yaml")
    assert config.scrape_configs == ()


def test_image_and_pull_secrets_reach_every_pod() -> None:
    objects = chart.render("default", sets=("image.repository=registry.example.com/flamewatch", "image.tag=1.2.3",
                                       "imagePullSecrets[0].name=regcred"))
    for name, deployment in chart.by_kind(objects, "Deployment").items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["imagePullSecrets"] == [{"name": "regcred"}], name
        if name in chart.flamewatch_deployments(objects):
            assert chart.container(deployment)["image"] == "registry.example.com/flamewatch:1.2.3", name


def test_debuginfod_servers_reach_the_symbolizer_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = chart.render("default", sets=("symbolizer.debuginfodUrls={https://a.example.org,https://b.example.org}",))
    args, _ = _parsed(chart.by_kind(objects, "Deployment")[f"{FULL}-symbolizer"], monkeypatch)
    assert args.command == "symbolizer"
    assert args.debuginfod_urls == ["https://a.example.org", "https://b.example.org"]


def test_security_mounts_the_web_configuration_and_speaks_https_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = chart.render("security")
    deployments = chart.flamewatch_deployments(objects)
    assert sorted(deployments) == sorted(f"{FULL}-{s}" for s in ("ingester", "querier", "frontend", "symbolizer",
                                                                  "collector-0"))
    for name, deployment in deployments.items():
        container, pod = chart.container(deployment), deployment["spec"]["template"]["spec"]
        assert "--web.config.file=/etc/flamewatch/web/web.yml" in container["args"], name
        assert {"name": "web-config", "mountPath": "/etc/flamewatch/web", "readOnly": True} in container["volumeMounts"]
        secret = {"secretName": "flamewatch-web", "defaultMode": 0o440}
        assert {"name": "web-config", "secret": secret} in pod["volumes"]
        assert not [e for e in container["env"] if "WEB" in e["name"]]  # a file, never an environment variable
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert container[probe]["httpGet"]["scheme"] == "HTTPS", (name, probe)
        assert cli.build_parser().parse_args(container["args"]).web_config_file == "/etc/flamewatch/web/web.yml"
    env = chart.env(deployments[f"{FULL}-frontend"])
    assert env["FLAMEWATCH_QUERIER_URL"]["value"] == f"https://{FULL}-querier:4200"
    assert env["FLAMEWATCH_COLLECTOR_URL"]["value"] == f"https://{FULL}-collector-0:4300"
    (job,) = [j for j in chart.shard_config(objects, 0)["scrape_configs"] if j["job_name"] == "flamewatch"]
    assert (job["scheme"], job["authorization"], job["tls_config"]) == (
        "https", {"credentials_file": "/etc/flamewatch/web/scrape.token"}, {"ca_file": "/etc/flamewatch/web/ca.crt"})
    (monitor,) = chart.by_kind(objects, "ServiceMonitor").values()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["authorization"] == {"credentials": {"name": "flamewatch-metrics", "key": "token"}}
    assert endpoint["tlsConfig"] == {"ca": {"secret": {"name": "flamewatch-web", "key": "ca.crt"}}}


def test_without_security_nothing_is_mounted_and_http_is_plain() -> None:
    for name, deployment in chart.flamewatch_deployments(chart.render("default")).items():
        container = chart.container(deployment)
        assert not [a for a in container["args"] if a.startswith("--web.config.file")], name
        assert "scheme" not in container["readinessProbe"]["httpGet"]
        assert all(m["name"] != "web-config" for m in container["volumeMounts"])


def test_incidents_go_to_alertmanager_with_links_under_the_ingress(monkeypatch: pytest.MonkeyPatch) -> None:
    from flamewatch.cli.alerts import alerting_config

    deployments = chart.by_kind(chart.render("ingress-monitoring"), "Deployment")
    for component in ("ingester", "querier"):
        args, _ = _parsed(deployments[f"{FULL}-{component}"], monkeypatch)
        config = alerting_config(args)
        assert config.alertmanager_urls == ("http://alertmanager-operated.monitoring:9093",)
        assert config.external_url == "https://flamewatch.example.com"  # the Ingress's host, with TLS
    default = chart.by_kind(chart.render("default"), "Deployment").values()
    assert not any(name.startswith("FLAMEWATCH_ALERTMANAGER") for d in default for name in chart.env(d))
    explicit = chart.by_kind(chart.render("default", sets=("alertmanager.url=http://a:9093\\,http://b:9093",
                                                 "externalUrl=http://ui.example:8080")), "Deployment")
    args, _ = _parsed(explicit[f"{FULL}-ingester"], monkeypatch)
    config = alerting_config(args)
    assert (config.alertmanager_urls, config.external_url) == (("http://a:9093", "http://b:9093"),
                                                               "http://ui.example:8080")
