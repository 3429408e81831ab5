"""`flamewatch all` started as a user would: a subprocess, embedded storage in a temp dir, probed over HTTP,
stopped with SIGTERM. `make run` itself is run by the README's test (`test_readme.py`)."""

import concurrent.futures
import time

import httpx
import pytest
from e2e.allinone import start_all, stop
from infra import gotargets
from infra.ports import free_port
from infra.waiting import wait_for

from flamewatch.pprof import decode

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.go]

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
HEAP = "memory:inuse_space:bytes:space:bytes"
CONFIG = """
scrape_configs:
  - job_name: demo
    scrape_interval: 3s
    static_configs: [{{targets: ["{demo}"], labels: {{service_name: demo}}}}]
  - job_name: flamewatch
    scrape_interval: 3s
    static_configs: [{{targets: ["{self}"], labels: {{service_name: flamewatch}}}}]
    profiling_config:
      pprof_config:
        memory: {{path: /debug/pprof/heap}}
        goroutine: {{enabled: false}}
        mutex: {{enabled: false}}
        block: {{enabled: false}}
"""


def top_names(url: str, query: str) -> set[str]:
    r = httpx.get(url + "/api/v1/query", params={"query": query, "from": "now-10m", "format": "top",
                                                 "max_nodes": "10000"}, timeout=30)
    return {e["name"] for e in r.json()["top"]["entries"]} if r.status_code == 200 else set()


def test_flamewatch_all_profiles_a_go_program_and_itself_and_keeps_the_data(tmp_path):
    demo = gotargets.GoTarget(gotargets.build("workload"), tmp_path / "demo.log")
    demo.start()
    http_port, grpc_port = free_port(), free_port()
    url = f"http://127.0.0.1:{http_port}"
    config = tmp_path / "flamewatch.yaml"
    config.write_text(CONFIG.format(demo=demo.addr, self=f"127.0.0.1:{http_port}"))
    log = tmp_path / "all.log"
    try:
        process = start_all(tmp_path, config, http_port, grpc_port)
        wait_for(lambda: "main.cpuFibonacci" in top_names(url, CPU + '{service_name="demo"}'), 90,
                 "the demo program's CPU profile", log)
        own_heap = wait_for(lambda: top_names(url, HEAP + '{service_name="flamewatch"}'), 90,
                            "Flamewatch's own heap profile", log)
        assert any(name.startswith("flamewatch.") for name in own_heap), sorted(own_heap)[:20]
        assert (tmp_path / "data" / "postgres").is_dir() and (tmp_path / "data" / "objects").is_dir()
        assert stop(process) == 0, log.read_text()

        process = start_all(tmp_path, config, http_port, grpc_port)
        wait_for(lambda: httpx.get(url + "/readyz").status_code == 200, 60, "the restart", log)
        assert "main.cpuFibonacci" in top_names(url, CPU + '{service_name="demo"}')
        assert stop(process) == 0, log.read_text()
    finally:
        demo.stop()


def test_a_stop_does_not_wait_for_a_cpu_profile_in_flight(tmp_path):
    """A scrape of Flamewatch's own 60-s CPU profile was answered only when its seconds were up, and the
    stop waited for it (CI killed a process that took 14 s to stop). Now the profile answers at the stop
    with what it sampled, and the process ends at once."""
    http_port, grpc_port = free_port(), free_port()
    url = f"http://127.0.0.1:{http_port}"
    config = tmp_path / "flamewatch.yaml"
    config.write_text("scrape_configs: []\n")
    process = start_all(tmp_path, config, http_port, grpc_port)
    try:
        wait_for(lambda: httpx.get(url + "/readyz").status_code == 200, 60, "flamewatch all", tmp_path / "all.log")
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            scrape = pool.submit(httpx.get, url + "/debug/pprof/profile", params={"seconds": 60}, timeout=90)
            time.sleep(2)  # the profile is being taken
            started = time.monotonic()
            assert stop(process) == 0, (tmp_path / "all.log").read_text()
            assert time.monotonic() - started < 8, "the stop waited for the CPU profile's 60 seconds"
            answer = scrape.result(30)
        assert answer.status_code == 200, answer.text
        assert 1e9 < decode(answer.content).duration_nanos < 20e9
    finally:
        if process.poll() is None:
            process.kill()
