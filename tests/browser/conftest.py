"""Browser tests: `flamewatch all` on free ports scraping a real Go program, and Debian's chromium driven
by Playwright (no browser download). Each test gets a fresh page at 1280×800 and leaves a screenshot
under .cache/screenshots/ named after it."""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from e2e.cluster import FLAMEWATCH
from infra import gotargets
from infra.ports import free_port
from infra.waiting import answers, wait_for

CHROMIUM = Path("/usr/bin/chromium")
# Without the background-networking flags chromium's own connections are refused by a closed network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / ".cache" / "screenshots"
UI_INDEX = Path(__file__).resolve().parents[2] / "services" / "frontend" / "ui" / "dist" / "index.html"
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
HOT_FUNCTION = "main.cpuFibonacci"
SCRAPE_INTERVAL_S = 2
CONFIG = """
scrape_configs:
  - job_name: {job}
    scrape_interval: {interval}s
    static_configs: [{{targets: ["{target}"], labels: {{service_name: {job}}}}}]
    profiling_config:
      pprof_config:
        mutex: {{enabled: false}}
        block: {{enabled: false}}
"""


@dataclass(frozen=True)
class Served:
    url: str
    started_ms: int


def points(url: str, query: str) -> int:
    """The points of the query's timeline over 15 minutes, at the step the UI asks for (the API's default: 10 s)."""
    r = httpx.get(url + "/api/v1/query_range", params={"query": query, "from": "now-15m"}, timeout=30)
    return sum(len(s["points"]) for s in r.json()["series"]) if r.status_code == 200 else 0


@contextlib.contextmanager
def scraping_flamewatch(workdir: Path, job: str, target: str,
                        *flags: str) -> Iterator[tuple[str, Path, subprocess.Popen]]:
    """`flamewatch all` on free ports scraping `target` as `job` (its service_name too) every
    SCRAPE_INTERVAL_S, with more `flags`: its URL, log and process."""
    http_port, grpc_port = free_port(), free_port()
    config = workdir / "flamewatch.yaml"
    config.write_text(CONFIG.format(job=job, interval=SCRAPE_INTERVAL_S, target=target))
    log = workdir / "all.log"
    with log.open("ab") as out:
        process = subprocess.Popen([str(FLAMEWATCH), "all", "--config.file", str(config), "--http-address",
                                    f"127.0.0.1:{http_port}", "--grpc-address", f"127.0.0.1:{grpc_port}",
                                    # tracing every allocation would slow each query down for nothing here
                                    "--no-self-profiling.heap", *flags],
                                   cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield f"http://127.0.0.1:{http_port}", log, process
    finally:
        terminate(process)


def _hot_function_seen(url: str) -> bool:
    r = httpx.get(url + "/api/v1/query", params={"query": CPU + '{service_name="demo"}', "from": "now-10m",
                                                 "format": "top", "max_nodes": "1000"}, timeout=30)
    return r.status_code == 200 and any(e["name"] == HOT_FUNCTION for e in r.json()["top"]["entries"])


@pytest.fixture(scope="module")
def flamewatch_ui(_go_workload: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`flamewatch all` serving the built UI, with a few CPU profiles of the Go program already stored."""
    assert UI_INDEX.is_file(), f"no UI build at {UI_INDEX}: run `make ui`"
    workdir = tmp_path_factory.mktemp("flamewatch-ui")
    demo = gotargets.GoTarget(_go_workload, workdir / "demo.log")
    demo.start()
    started_ms = int(time.time() * 1000)
    try:
        with scraping_flamewatch(workdir, "demo", demo.addr) as (url, log, _):
            wait_for(lambda: points(url, CPU + '{service_name="demo"}') >= 3, 240,
                     "CPU profiles of the Go program in three steps", log)
            wait_for(lambda: _hot_function_seen(url), 60, f"{HOT_FUNCTION} in the stored profiles", log)
            yield Served(url, started_ms)
    finally:
        demo.stop()


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.is_file() or shutil.which("chromium"), "Debian's chromium is missing: run `make test`"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@contextlib.contextmanager
def open_page(chromium, name: str, **context_options) -> Iterator[object]:
    """A fresh page in a context of its own (`context_options` as Playwright's `new_context` takes them);
    its screenshot is saved as `name` whether the test passes or fails, and page errors fail it."""
    context = chromium.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True,
                                   **context_options)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(30_000)
    try:
        yield page
    finally:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        file_name = re.sub(r"[^\w.-]+", "_", name)
        try:
            page.screenshot(path=str(SCREENSHOTS / f"{file_name}.png"), full_page=False)
        finally:
            context.close()
    assert not errors, f"errors in the page: {errors}"


@pytest.fixture
def page(chromium, request: pytest.FixtureRequest) -> Iterator[object]:
    with open_page(chromium, request.node.name) as fresh:
        yield fresh


@contextlib.contextmanager
def secured_flamewatch(workdir: Path, web_config: Path) -> Iterator[str]:
    """`flamewatch all` on free ports behind this web configuration file, no scrape configuration; its URL
    once it is ready."""
    with flamewatch_all(workdir, "--web.config.file", str(web_config)) as url:
        yield url


@contextlib.contextmanager
def flamewatch_all(workdir: Path, *flags: str) -> Iterator[str]:
    """`flamewatch all` on free ports with these flags and no scrape configuration; its URL once it is ready."""
    http_port, grpc_port = free_port(), free_port()
    url = f"http://127.0.0.1:{http_port}"
    log = workdir / "all.log"
    with log.open("ab") as out:
        process = subprocess.Popen([str(FLAMEWATCH), "all", *flags, "--http-address", f"127.0.0.1:{http_port}",
                                    "--grpc-address", f"127.0.0.1:{grpc_port}", "--no-self-profiling.heap"],
                                   cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: answers(url + "/readyz"), 120, "flamewatch all to be ready", log, process)
        yield url
    finally:
        terminate(process)


def terminate(process: subprocess.Popen) -> None:
    """SIGTERM, as a user's Ctrl-C; SIGKILL after a minute."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
