"""Grafana's Pyroscope datasource pointed at `flamewatch all` as a user runs it: embedded storage, one HTTP
port, the Go workload scraped. Through the published Connect clients (tests/targets/grafanaclient), the
flamegraph shows the workload's hot functions and matches what `/api/v1/query` answers."""

import time

import httpx
import pytest
from e2e.allinone import start_all, stop
from e2e.grafana import GrafanaClient, self_by_name, top_names
from e2e.pushes import WORKLOAD_FUNCTIONS
from infra import gotargets
from infra.ports import free_port
from infra.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.go]

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
DEMO = '{service_name="demo"}'
SETTLE_MS = 15_000  # a 3 s CPU scrape is stored a few seconds after its time
CONFIG = """
scrape_configs:
  - job_name: demo
    scrape_interval: 3s
    static_configs: [{{targets: ["{demo}"], labels: {{service_name: demo}}}}]
"""


def test_grafana_reads_what_flamewatch_all_scraped(tmp_path):
    client = GrafanaClient(gotargets.build("grafanaclient"))
    demo = gotargets.GoTarget(gotargets.build("workload"), tmp_path / "demo.log")
    demo.start()
    http_port, grpc_port = free_port(), free_port()
    url = f"http://127.0.0.1:{http_port}"
    config = tmp_path / "flamewatch.yaml"
    config.write_text(CONFIG.format(demo=demo.addr))
    log = tmp_path / "all.log"
    process = start_all(tmp_path, config, http_port, grpc_port)
    try:
        wait_for(lambda: httpx.get(url + "/readyz").status_code == 200, 60, "flamewatch all", log)
        start_ms = time.time_ns() // 10**6 - 60_000

        def settled_end() -> int:
            """An end well before now, so no scrape still in flight lands in the range between two calls."""
            return time.time_ns() // 10**6 - SETTLE_MS

        def scraped() -> int:
            end = settled_end()
            fg = client.run(url, start_ms, end, "-selector", DEMO,
                            "-calls", "SelectMergeStacktraces")["SelectMergeStacktraces"]
            return end if "main.cpuFibonacci" in fg.get("names", []) else 0

        end_ms = wait_for(scraped, 120, "the demo's CPU profile over Connect", log)
        out = client.run(url, start_ms, end_ms, "-selector", DEMO, "-max-nodes", "16384",
                         "-calls", "ProfileTypes,SelectMergeStacktraces")
        assert CPU in {t["id"] for t in out["ProfileTypes"]}
        fg = out["SelectMergeStacktraces"]
        assert WORKLOAD_FUNCTIONS["process_cpu"] & set(top_names(self_by_name(fg), 10))
        ours = httpx.get(url + "/api/v1/query", params={"query": CPU + DEMO, "from": str(start_ms),
                                                        "until": str(end_ms), "max_nodes": "16384"}).json()
        assert fg["total"] == ours["flamegraph"]["total"] > 0
        assert stop(process) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
        demo.stop()
