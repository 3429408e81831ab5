"""A Prometheus server process for the tests: it scrapes targets and evaluates alerting rules.

The binary is built by `make` from Prometheus's Go module (`go install github.com/prometheus/prometheus/
cmd/prometheus@<pinned>`) into `.cache/bin`. It runs on 127.0.0.1 with its data, configuration and log
under a work directory; `query` and `alerts` read its HTTP API.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx

from . import CACHE_DIR
from .ports import free_port
from .waiting import terminate

PROMETHEUS_BINARY = CACHE_DIR / "bin" / "prometheus"
START_TIMEOUT_S = 60.0


class PrometheusServer:
    def __init__(self, workdir: Path, scrape_targets: list[str], rules: str, interval: str = "1s",
                 binary: Path = PROMETHEUS_BINARY) -> None:
        if not binary.is_file():
            raise FileNotFoundError(f"Prometheus not found at {binary}: run `make test-deps` to build it")
        self.binary, self.workdir = binary, workdir
        self.address = f"127.0.0.1:{free_port()}"
        self.log_path = workdir / "prometheus.log"
        (workdir / "rules.yml").write_text(rules)
        targets = ", ".join(f'"{t}"' for t in scrape_targets)
        (workdir / "prometheus.yml").write_text(
            f"global: {{scrape_interval: {interval}, evaluation_interval: {interval}}}\n"
            f"rule_files: [rules.yml]\n"
            f"scrape_configs:\n  - job_name: flamewatch\n    static_configs: [{{targets: [{targets}]}}]\n")
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [str(self.binary), "--config.file", str(self.workdir / "prometheus.yml"),
                 "--storage.tsdb.path", str(self.workdir / "data"), "--web.listen-address", self.address],
                cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"Prometheus exited with {self._process.returncode}:\n{self.log_path.read_text()}")
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"Prometheus not ready after {START_TIMEOUT_S} s:\n{self.log_path.read_text()}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            terminate(process, 15)

    def query(self, expr: str) -> list[dict]:
        answer = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10).json()
        return answer["data"]["result"]

    def alerts(self) -> list[dict]:
        return httpx.get(f"{self.url}/api/v1/alerts", timeout=10).json()["data"]["alerts"]

    def __enter__(self) -> PrometheusServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
