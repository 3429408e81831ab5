"""Incidents reach a real Alertmanager: an OOM kill posted to an ingester started with `--alertmanager.url`
shows in Alertmanager's `GET /api/v2/alerts` with its labels and the permalink to the incident, and
Alertmanager's webhook delivers it to the test's receiver; the same event again sends nothing; with
Alertmanager down the recording still succeeds and the alert arrives once it is back. `/metrics` counts
the incident (`flamewatch_incidents_total`) and the alert (`flamewatch_alertmanager_notifications_total`).
`flamewatch all` links to its own address and tells the age of the last heap before the kill.
The README's Alertmanager route loads in the real Alertmanager and takes Flamewatch's alerts, not others."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from e2e.allinone import start_all, stop
from e2e.cluster import Cluster, Service
from e2e.pushes import rewritten
from infra import REPO_ROOT
from infra.alertmanager import AlertmanagerServer, WebhookReceiver
from infra.ports import free_port
from infra.waiting import wait_for
from prometheus_client.parser import text_string_to_metric_families

from flamewatch.rpc.tenant import DEFAULT_TENANT

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.alertmanager]

UI = "https://flamewatch.example.com"


@pytest.fixture
def ingester(cluster: Cluster, alertmanager: AlertmanagerServer) -> Iterator[Service]:
    """An ingester of the cluster's storage that sends incidents to the test's Alertmanager."""
    name = f"alerting-{uuid.uuid4().hex[:6]}"
    service = cluster.add_ingester(name, "--alertmanager.url", alertmanager.url, "--web.external-url", UI)
    yield service
    cluster.extra.pop(name)
    assert service.stop() == 0, service.log_text()


def oom_kill(service_name: str) -> dict:
    return {"kind": "oom_kill", "time": time.time_ns(), "exit_code": 137, "memory_limit_bytes": 64 << 20,
            "labels": {"namespace": "shop", "pod": f"{service_name}-7d9", "container": "app",
                       "service_name": service_name, "node": "node-1"}}


def post(url: str, event: dict) -> dict:
    answer = httpx.post(f"{url}/api/v1/events", json={"events": [event]}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def incident_id(cluster: Cluster, service_name: str) -> int:
    answer = httpx.get(f"{cluster.querier_url}/api/v1/incidents", timeout=30,
                       params={"from": "now-1h", "query": f'{{service_name="{service_name}"}}'})
    [incident] = answer.json()["incidents"]
    return incident["id"]


def metric(url: str, name: str, **labels: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def alerts_of(alertmanager: AlertmanagerServer, service_name: str) -> list[dict]:
    return alertmanager.alerts(filter=f'service_name="{service_name}"')


def delivered(alertmanager: AlertmanagerServer, service_name: str) -> list[dict]:
    return [a for a in alertmanager.receiver.alerts() if a["labels"].get("service_name") == service_name]


def test_an_oom_kill_reaches_alertmanager_and_its_webhook_once(cluster: Cluster, ingester: Service,
                                                              alertmanager: AlertmanagerServer):
    service_name = f"leaky-{uuid.uuid4().hex[:6]}"
    event = oom_kill(service_name)
    assert post(ingester.url, event) == {"recorded": 1, "duplicates": 0}

    [alert] = wait_for(lambda: alerts_of(alertmanager, service_name), 30, "the alert in Alertmanager",
                       ingester.log_path)
    incident = incident_id(cluster, service_name)
    permalink = f"{UI}/?view=incidents&incident={incident}&tenant={DEFAULT_TENANT}"
    assert alert["labels"] == {**event["labels"], "alertname": "FlamewatchOOMKill", "severity": "warning",
                               "kind": "oom_kill", "tenant": DEFAULT_TENANT, "incident": str(incident)}
    assert alert["annotations"]["permalink"] == permalink == alert["generatorURL"]
    assert alert["annotations"]["summary"] == f"OOM kill of container app of pod shop/{service_name}-7d9"
    assert "exit code 137, memory limit 64 MiB" in alert["annotations"]["description"]
    assert alert["status"]["state"] == "active"

    [notified] = wait_for(lambda: delivered(alertmanager, service_name), 30, "the webhook's notification",
                          alertmanager.log_path)
    assert notified["annotations"]["permalink"] == permalink and notified["status"] == "firing"

    assert post(ingester.url, event) == {"recorded": 0, "duplicates": 1}
    time.sleep(3)  # group_interval is 1 s: a second alert would have been notified by now
    assert len(delivered(alertmanager, service_name)) == 1 and len(alerts_of(alertmanager, service_name)) == 1
    assert metric(ingester.url, "flamewatch_alertmanager_notifications_total", result="sent") == 1
    assert metric(ingester.url, "flamewatch_incidents_total", kind="oom_kill", service_name=service_name) == 1


def test_with_alertmanager_down_the_event_is_recorded_and_alerted_once_it_is_back(
        cluster: Cluster, ingester: Service, alertmanager: AlertmanagerServer):
    alertmanager.stop()
    service_name = f"leaky-{uuid.uuid4().hex[:6]}"
    started = time.monotonic()
    assert post(ingester.url, oom_kill(service_name)) == {"recorded": 1, "duplicates": 0}
    assert time.monotonic() - started < 5  # recording never waits for Alertmanager
    wait_for(lambda: metric(ingester.url, "flamewatch_alertmanager_notifications_total", result="retried") >= 1, 30,
             "a failed attempt", ingester.log_path)
    assert "cannot be reached" in ingester.log_text()

    alertmanager.start()
    [alert] = wait_for(lambda: alerts_of(alertmanager, service_name), 60, "the retried alert", ingester.log_path)
    assert alert["labels"]["incident"] == str(incident_id(cluster, service_name))
    wait_for(lambda: delivered(alertmanager, service_name), 30, "the webhook's notification", alertmanager.log_path)
    assert metric(ingester.url, "flamewatch_alertmanager_notifications_total", result="sent") == 1


def test_an_alertmanager_that_asks_for_basic_auth_gets_the_credentials_of_the_url(cluster: Cluster, tmp_path: Path):
    with WebhookReceiver() as receiver, AlertmanagerServer(tmp_path, receiver,
                                                           basic_auth=("flamewatch", "s3cret-pass")) as server:
        assert httpx.get(f"{server.url}/api/v2/alerts", timeout=10).status_code == 401
        url = server.url.replace("http://", "http://flamewatch:s3cret-pass@")
        ingester = cluster.add_ingester("alerting-basic-auth", "--alertmanager.url", url)
        try:
            post(ingester.url, oom_kill("leaky-auth"))
            [alert] = wait_for(lambda: alerts_of(server, "leaky-auth"), 30, "the alert", ingester.log_path)
            assert "permalink" not in alert["annotations"]  # an ingester has no UI address of its own
            assert "s3cret-pass" not in ingester.log_text() and "flamewatch:xxxxx@" in ingester.log_text()
        finally:
            cluster.extra.pop("alerting-basic-auth")
            assert ingester.stop() == 0, ingester.log_text()


@pytest.mark.go
def test_flamewatch_all_links_its_alerts_to_its_own_address_and_tells_the_last_heaps_age(
        embedded_workdir: Path, alertmanager: AlertmanagerServer, go_profiles: dict[str, bytes]):
    http_port, grpc_port = free_port(), free_port()
    config = embedded_workdir / "flamewatch.yaml"
    config.write_text("scrape_configs: []\n")
    log = embedded_workdir / "all.log"
    process = start_all(embedded_workdir, config, http_port, grpc_port, "--alertmanager.url", alertmanager.url)
    try:
        url = f"http://127.0.0.1:{http_port}"
        wait_for(lambda: httpx.get(f"{url}/readyz").status_code == 200, 60, "flamewatch all", log,
                 process)
        kill = oom_kill("leaky-all")
        heap_at = kill["time"] - 7 * 10**9
        program = {k: v for k, v in kill["labels"].items() if k != "node"}
        pushed = httpx.post(f"{url}/ingest", params=program, content=rewritten(go_profiles["heap"], time_ns=heap_at),
                            timeout=30)
        assert pushed.status_code == 200, pushed.text
        post(url, kill)
        [alert] = wait_for(lambda: alerts_of(alertmanager, "leaky-all"), 30, "the alert", log)
        incident = alert["labels"]["incident"]
        assert alert["annotations"]["permalink"] == (f"http://localhost:{http_port}/?view=incidents&incident="
                                                     f"{incident}&tenant={DEFAULT_TENANT}")
        assert alert["annotations"]["last_heap_age"] == "7 s"  # the querier's incidents, in the same process
        assert "Its last heap profile was taken 7 s before." in alert["annotations"]["description"]
        assert metric(url, "flamewatch_incidents_total", kind="oom_kill", service_name="leaky-all") == 1
        assert stop(process) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()


def test_the_readme_route_loads_in_alertmanager_and_takes_flamewatchs_alerts(tmp_path: Path):
    readme = (REPO_ROOT / "README.md").read_text()
    [text] = re.findall(r"<!-- alertmanager-config -->\n```yaml\n(.*?)```", readme, re.S)
    with WebhookReceiver() as receiver, AlertmanagerServer(tmp_path, receiver, config_text=text) as server:
        ends = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 600))
        alerts = [{"labels": {"alertname": name, "service_name": "api"}, "endsAt": ends}
                  for name in ("FlamewatchOOMKill", "FlamewatchRestart", "FlamewatchRegression", "KubePodCrashLooping")]
        assert httpx.post(f"{server.url}/api/v2/alerts", json=alerts, timeout=10).status_code == 200
        routed = wait_for(lambda: {a["labels"]["alertname"]: [r["name"] for r in a["receivers"]]
                                   for a in server.alerts()}, 10, "the alerts", server.log_path)
    assert routed == {"FlamewatchOOMKill": ["oncall"], "FlamewatchRestart": ["oncall"],
                      "FlamewatchRegression": ["oncall"], "KubePodCrashLooping": ["default"]}
