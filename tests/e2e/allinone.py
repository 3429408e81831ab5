"""`flamewatch all` as a subprocess on given ports, its log appended to `<workdir>/all.log`, stopped with
SIGTERM as a user's Ctrl-C or a supervisor would."""

import signal
import subprocess
from pathlib import Path

import httpx
from e2e.cluster import FLAMEWATCH


def start_all(workdir: Path, config: Path, http_port: int, grpc_port: int, *flags: str) -> subprocess.Popen:
    with (workdir / "all.log").open("ab") as log:  # the child keeps its own descriptor
        return subprocess.Popen([str(FLAMEWATCH), "all", "--config.file", str(config), "--http-address",
                                 f"127.0.0.1:{http_port}", "--grpc-address", f"127.0.0.1:{grpc_port}",
                                 "--self-profiling.heap",  # off by default; the test reads its own heap
                                 *flags], cwd=workdir, stdout=log, stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(60)


def incidents(http_port: int, namespace: str) -> list[dict]:
    """The incidents of the last hour `flamewatch all` on `http_port` lists for the namespace ([] while it
    does not answer yet)."""
    try:
        answer = httpx.get(f"http://127.0.0.1:{http_port}/api/v1/incidents", timeout=5,
                           params={"from": "now-1h", "query": f'{{namespace="{namespace}"}}'})
    except httpx.HTTPError:
        return []
    return answer.json()["incidents"] if answer.status_code == 200 else []
