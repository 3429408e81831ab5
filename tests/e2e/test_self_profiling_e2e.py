"""Every split service profiles itself: `/debug/pprof/profile` always, `/debug/pprof/heap` as a real pprof
heap profile when started with --self-profiling.heap, and otherwise a 404 that says how to turn it on."""

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from e2e.cluster import FLAMEWATCH, Cluster, Service
from infra.ports import free_port

from flamewatch.pprof import decode

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3]

HEAP_OFF = "heap profiling is off in this service: start it with --self-profiling.heap"


@contextmanager
def process(argv: list[str], log: Path) -> Iterator[str]:
    """A `flamewatch collector|frontend` on a free port, until the block ends; yields its base URL."""
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen([str(FLAMEWATCH), *argv, "--http-address", f"127.0.0.1:{port}"], stdout=out,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while not _ready(url):
            assert proc.poll() is None and time.monotonic() < deadline, f"{argv[0]} did not start:\n{log.read_text()}"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        assert proc.wait(30) == 0, log.read_text()


def _ready(url: str) -> bool:
    try:
        return httpx.get(url + "/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def collector_and_frontend(cluster: Cluster, workdir: Path, *flags: str) -> Iterator[dict[str, str]]:
    config = workdir / "collector.yaml"
    config.write_text("scrape_configs: []\n")
    with (process(["collector", "--config.file", str(config), "--ingester.address", cluster.ingester_grpc,
                   "--grpc-address", f"127.0.0.1:{free_port()}", *flags], workdir / "collector.log") as collector,
          process(["frontend", "--querier.url", cluster.querier_url, "--ui.dir", str(workdir / "no-ui"), *flags],
                  workdir / "frontend.log") as frontend):
        yield {"collector": collector, "frontend": frontend}


def test_without_the_flag_every_service_says_how_to_turn_heap_profiling_on(cluster: Cluster, tmp_path: Path):
    with collector_and_frontend(cluster, tmp_path) as others:
        urls = {"ingester": cluster.ingester_url, "querier": cluster.querier_url, **others}
        for name, url in urls.items():
            heap = httpx.get(url + "/debug/pprof/heap", timeout=30)
            assert heap.status_code == 404, (name, heap.status_code, heap.text)
            assert heap.json()["error"].startswith(HEAP_OFF), name
            cpu = httpx.get(url + "/debug/pprof/profile", params={"seconds": 1}, timeout=30)
            assert cpu.status_code == 200 and decode(cpu.content).sample_type_names()[1] == ("cpu", "nanoseconds"), \
                name


def test_with_the_flag_every_service_serves_its_heap_profile(cluster: Cluster, tmp_path: Path):
    flag = "--self-profiling.heap"
    ingester = Service("ingester", "heap-ingester", cluster.storage, tmp_path / "ingester.log", (flag,))
    querier = Service("querier", "heap-querier", cluster.storage, tmp_path / "querier.log", (flag,))
    ingester.start()
    try:
        querier.start()
        with collector_and_frontend(cluster, tmp_path, flag) as others:
            urls = {"ingester": ingester.url, "querier": querier.url, **others}
            for name, url in urls.items():
                heap = httpx.get(url + "/debug/pprof/heap", timeout=60)
                assert heap.status_code == 200, (name, heap.text)
                p = decode(heap.content)
                assert p.sample_type_names() == [("inuse_objects", "count"), ("inuse_space", "bytes")], name
                assert (p.string(p.period_type[0]), p.period) == ("space", 64 * 1024), name
                assert int(p.samples.values[:, 1].sum()) > 0 and len(p.functions) > 0, name
    finally:
        assert (ingester.stop(), querier.stop()) == (0, 0)
