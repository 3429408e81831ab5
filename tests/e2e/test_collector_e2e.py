"""The collector as its own process, scraping a real Go target into the ingester, read back through the
querier; target status and configuration reloads over HTTP."""

import contextlib
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import grpc
import httpx
import pytest
from e2e.calls import rest
from e2e.cluster import FLAMEWATCH, Cluster
from infra.ports import free_port
from prometheus_client.parser import text_string_to_metric_families

from flamewatch.api.flamewatch.v1 import collector_pb2, collector_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

TENANT = "e2e-collector"
CONFIG = """
scrape_configs:
  - job_name: {job}
    scrape_interval: 2s
    static_configs: [{{targets: ["{target}"], labels: {{service_name: workload}}}}]
"""


def wait_for(check, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


@contextlib.contextmanager
def running_collector(cluster: Cluster, config_text: str, workdir: Path, name: str = "collector"):
    """`flamewatch collector` on free ports with this configuration: (url, config path, gRPC address, pid)."""
    config = workdir / f"{name}.yaml"
    config.write_text(config_text)
    port, grpc_port = free_port(), free_port()
    with (workdir / f"{name}.log").open("wb") as log:
        process = subprocess.Popen([str(FLAMEWATCH), "collector", "--config.file", str(config), "--ingester.address",
                                    cluster.ingester_grpc, "--tenant", TENANT, "--http-address", f"127.0.0.1:{port}",
                                    "--grpc-address", f"127.0.0.1:{grpc_port}"],
                                   stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(url), 30, "the collector to answer")
        yield url, config, f"127.0.0.1:{grpc_port}", process.pid
    finally:
        process.terminate()
        assert process.wait(30) == 0, (workdir / f"{name}.log").read_text()


@pytest.fixture
def collector(cluster: Cluster, go_target: str, tmp_path: Path):
    with running_collector(cluster, CONFIG.format(job="demo", target=go_target), tmp_path) as running:
        yield running


def _ready(url: str) -> bool:
    try:
        return httpx.get(url + "/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def all_up(url: str) -> bool:
    """Some targets, and every one of them up (an empty list, before discovery ran, is not "all up")."""
    targets = httpx.get(url + "/api/v1/targets").json()["data"]["activeTargets"]
    return bool(targets) and all(t["health"] == "up" for t in targets)


def test_scraped_profiles_reach_the_querier_and_targets_report_health(cluster: Cluster, collector, go_target):
    url, _, _, _ = collector
    cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

    def stored_cpu():
        types = rest(cluster, "/profile_types", TENANT, {"from": "now-5m"})["data"]
        return cpu in {t["id"] for t in types}

    wait_for(stored_cpu, 30, "a CPU profile to be stored")
    body = rest(cluster, "/query", TENANT, {"query": cpu + '{service_name="workload",job="demo"}',
                                            "from": "now-5m", "format": "top", "max_nodes": "10000"})
    names = {e["name"] for e in body["top"]["entries"]}
    assert {"main.cpuFibonacci", "main.cpuHashLoop"} <= names

    targets = httpx.get(url + "/api/v1/targets").json()["data"]["activeTargets"]
    assert {t["profileType"] for t in targets} == {"process_cpu", "memory", "goroutine", "mutex", "block"}
    for t in targets:
        assert t["labels"] == {"job": "demo", "instance": go_target, "service_name": "workload"}
        assert t["discoveredLabels"]["__address__"] == go_target
    wait_for(lambda: all_up(url), 20, "every target to be up")


def test_reload_applies_a_good_file_and_keeps_running_on_a_bad_one(collector, go_target):
    url, config, _, pid = collector
    config.write_text(CONFIG.format(job="renamed", target=go_target))
    assert httpx.post(url + "/-/reload").json() == {"status": "success"}
    wait_for(lambda: pools(url) == {"renamed"}, 10, "the renamed job to replace the old one")

    config.write_text("scrape_configs:\n  - job_name: x\n    scrape_timeout: 20s\n")
    r = httpx.post(url + "/-/reload")
    assert r.status_code == 400
    assert r.json() == {"error": f"{config}: scrape_configs[0].scrape_timeout: 20s must not exceed "
                                 "scrape_interval 10s"}
    time.sleep(1)
    assert pools(url) == {"renamed"}

    config.write_text(CONFIG.format(job="after-hangup", target=go_target))
    os.kill(pid, signal.SIGHUP)
    wait_for(lambda: pools(url) == {"after-hangup"}, 10, "SIGHUP to reload the configuration")


def pools(url: str) -> set[str]:
    return {t["scrapePool"] for t in httpx.get(url + "/api/v1/targets").json()["data"]["activeTargets"]}


@contextlib.contextmanager
def running_frontend(cluster: Cluster, collector_urls: str, workdir: Path):
    port = free_port()
    with (workdir / "frontend.log").open("wb") as log:
        process = subprocess.Popen([str(FLAMEWATCH), "frontend", "--http-address", f"127.0.0.1:{port}",
                                    "--querier.url", cluster.querier_url, "--collector.url", collector_urls,
                                    "--ui.dir", str(workdir / "no-ui")],
                                   stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(url), 30, "the frontend to answer")
        yield url
    finally:
        process.terminate()
        assert process.wait(30) == 0, (workdir / "frontend.log").read_text()


@pytest.fixture
def frontend(cluster: Cluster, collector, tmp_path: Path):
    with running_frontend(cluster, collector[0], tmp_path) as url:
        yield url


def test_four_services_as_processes_answer_through_the_frontend(cluster: Cluster, collector, frontend):
    """collector → ingester (gRPC) → MinIO + Postgres ← querier ← frontend (/api proxied)."""
    cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
    headers = {"X-Scope-OrgID": TENANT}

    def flamegraph_names():
        r = httpx.get(frontend + "/api/v1/query", params={"query": cpu + '{job="demo"}', "from": "now-5m",
                                                          "max_nodes": "10000"}, headers=headers)
        return set(r.json()["flamegraph"]["names"]) if r.status_code == 200 else set()

    names = wait_for(flamegraph_names, 40, "a CPU flamegraph through the frontend")
    assert "main.cpuFibonacci" in names
    r = httpx.get(frontend + "/api/v1/query", params={"query": "nope{"}, headers=headers)
    assert r.status_code == 400 and r.json()["error"].startswith("invalid selector")
    metrics = httpx.get(cluster.querier_url + "/metrics").text
    assert 'flamewatch_query_seconds_count{kind="flamegraph"}' in metrics
    assert 'flamewatch_request_errors_total{code="INVALID_ARGUMENT"}' in metrics
    # the blocks the answer came from were read from MinIO, and the ingester wrote them there
    assert _sample(metrics, "flamewatch_objstore_read_ranges_total", backend="s3") > 0
    assert _sample(metrics, "flamewatch_objstore_read_bytes_total", backend="s3") > 0
    written = httpx.get(cluster.ingester_url + "/metrics").text
    assert _sample(written, "flamewatch_objstore_written_bytes_total", backend="s3") > 0
    assert _sample(written, "flamewatch_objstore_operations_total", backend="s3", operation="put") > 0
    targets = httpx.get(frontend + "/api/v1/targets").json()["data"]["activeTargets"]  # from the collector
    assert {t["scrapePool"] for t in targets} == {"demo"}
    page = httpx.get(frontend + "/")
    assert page.status_code == 200 and "The web UI is not built" in page.text
    assert httpx.get(frontend + "/assets/../../etc/passwd").status_code == 404


def _sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of a /metrics page (0 when it has none)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return sample.value
    return 0.0


def test_the_page_without_a_ui_links_only_to_what_the_frontend_serves(frontend):
    """In split mode the frontend passes /api to the querier; the collector's targets are not there."""
    page = httpx.get(frontend + "/")
    links = re.findall(r'href="([^"]+)"', page.text)
    assert links, page.text
    for link in links:
        r = httpx.get(frontend + link, headers={"X-Scope-OrgID": TENANT})
        assert r.status_code == 200, (link, r.status_code, r.text)


def test_target_status_over_grpc_matches_rest(collector, go_target):
    url, _, grpc_address, _ = collector
    wait_for(lambda: all_up(url), 30, "every target to be up")
    with grpc.insecure_channel(grpc_address) as channel:
        reply = collector_pb2_grpc.CollectorServiceStub(channel).Targets(collector_pb2.TargetsRequest(), timeout=10)
    rest_targets = httpx.get(url + "/api/v1/targets").json()["data"]["activeTargets"]
    assert [(t.job, t.profile_type, t.scrape_url) for t in reply.targets] == [
        (t["scrapePool"], t["profileType"], t["scrapeUrl"]) for t in rest_targets]
    for t in reply.targets:
        assert {p.name: p.value for p in t.labels} == {"job": "demo", "instance": go_target,
                                                       "service_name": "workload"}
        assert t.health == "up" and t.last_scrape_ns > 0 and t.last_error == ""


def test_the_frontend_lists_the_targets_of_every_collector_shard(cluster: Cluster, go_target: str, tmp_path: Path):
    """Two collectors (a chart's shards) and one that is down: the Targets API lists both shards' targets
    and names the missing one in `warnings`."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens once closed
    with (running_collector(cluster, CONFIG.format(job="shard-a", target=go_target), tmp_path, "a") as a,
          running_collector(cluster, CONFIG.format(job="shard-b", target=go_target), tmp_path, "b") as b,
          running_frontend(cluster, f"{a[0]}, {b[0]},{down}", tmp_path) as url):
        wait_for(lambda: pools(a[0]) and pools(b[0]), 20, "both collectors to list their targets")
        body = httpx.get(url + "/api/v1/targets").json()
    assert body["status"] == "success"
    targets = body["data"]["activeTargets"]
    assert {t["scrapePool"] for t in targets} == {"shard-a", "shard-b"}
    assert len(targets) == 10  # five profile types from each shard
    assert targets == sorted(targets, key=lambda t: (t["scrapePool"], t["scrapeUrl"]))
    (warning,) = body["warnings"]
    assert warning.startswith(f"the collector at {down}/api/v1/targets did not list its targets: ")
