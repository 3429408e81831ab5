"""`flamewatch all` as the subject of a benchmark (`restart.py`, `soak.py`): started on a data directory,
timed to its first `/readyz` 200, killed or stopped, and its embedded Postgres found and stopped.

The embedded Postgres runs as its own process (pgserver's `pg_ctl`), so a kill -9 of Flamewatch leaves it
running, as it would on a laptop; `kill_postgres` is the other case, a crash that takes both down (a
container or a machine going away), after which Postgres recovers from its WAL on the next start.

The benchmark makes itself the subreaper of what it starts (`become_subreaper`): Postgres, daemonised by
`pg_ctl`, is then its child once orphaned, and a killed postmaster is reaped here as an init process would
reap it. Where the machine's init does not reap orphans, a killed postmaster stays a zombie, which
pgserver takes for a running server, and the next start fails with "connection refused".
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from demo_cost import children, postmaster_pid  # noqa: E402
from infra.ports import free_port  # noqa: E402

FLAMEWATCH = ROOT / ".venv" / "bin" / "flamewatch"
READY_TIMEOUT_S = 180.0
POLL_S = 0.02
PR_SET_CHILD_SUBREAPER = 36


@dataclass
class AllInOne:
    """One `flamewatch all` process on `data`, with the addresses it serves."""

    data: Path
    process: subprocess.Popen
    http: str
    grpc: str
    tls: ssl.SSLContext | None = None  # what a client trusts when the process serves HTTPS

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.http}"

    @property
    def postgres(self) -> Path:
        return self.data / "postgres"


def environment(env: dict[str, str] | None = None, compile_each_start: bool = False) -> dict[str, str]:
    """This process's environment plus `env`. Without `compile_each_start`, PYTHONDONTWRITEBYTECODE is
    dropped: an installed Flamewatch has its modules compiled (pip compiles a wheel at install, and a
    checkout's first run writes __pycache__), while with it set every start compiles the ~150 modules of
    Flamewatch from source again (about 1 s of CPU)."""
    base = {k: v for k, v in os.environ.items() if compile_each_start or k != "PYTHONDONTWRITEBYTECODE"}
    return {**base, **(env or {})}


def start(data: Path, extra: list[str] | None = None, env: dict[str, str] | None = None,
          log_name: str = "flamewatch.log", tls: ssl.SSLContext | None = None) -> tuple[AllInOne, float]:
    """Start `flamewatch all` on `data` with the environment `env` (by default `environment()`); the
    process and the seconds from its start to `/readyz` 200. With `tls` (a web configuration file in
    `extra` that has tls_server_config), `/readyz` is asked over https, trusting that context."""
    http, grpc = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    with (data.parent / log_name).open("ab") as log:
        started = time.monotonic()
        process = subprocess.Popen([str(FLAMEWATCH), "all", "--data-dir", str(data), "--http-address", http,
                                    "--grpc-address", grpc, "--log.level", "warning", *(extra or [])],
                                   stdout=log, stderr=subprocess.STDOUT, env=env or environment())
    node = AllInOne(data, process, http, grpc, tls)
    return node, wait_ready(node, started, data.parent / log_name)


def wait_ready(node: AllInOne, started: float, log: Path) -> float:
    with httpx.Client(timeout=1, verify=node.tls or True) as client:
        while time.monotonic() - started < READY_TIMEOUT_S:
            if node.process.poll() is not None:  # the log goes with the temporary directory: show its end
                tail = log.read_text(errors="replace")[-3000:]
                raise SystemExit(f"flamewatch all exited with {node.process.returncode} before it was ready:\n{tail}")
            try:
                if client.get(f"{node.url}/readyz").status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(POLL_S)
    raise SystemExit(f"flamewatch all was not ready after {READY_TIMEOUT_S:.0f} s")


def become_subreaper() -> None:
    """Orphaned descendants (the daemonised Postgres) become this process's children (Linux prctl)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def reap() -> None:
    """Collect every exited child, so none stays a zombie."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def kill(node: AllInOne) -> None:
    """kill -9, as a crash or an OOM kill would."""
    node.process.kill()
    node.process.wait()


def postgres_pids(node: AllInOne) -> list[int]:
    """The embedded Postgres's postmaster and its children (none when it is not running)."""
    postmaster = postmaster_pid(node.postgres)
    if postmaster is None or not Path(f"/proc/{postmaster}").exists():
        return []
    return [postmaster, *children(postmaster)]


def kill_postgres(node: AllInOne) -> None:
    """kill -9 of the embedded Postgres, every process of it."""
    pids = postgres_pids(node)
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    _wait_gone(pids, 10)


def stop(node: AllInOne) -> None:
    """Stop Flamewatch, then its embedded Postgres if that is still running (a Postgres adopted from a
    killed process may be), with a fast shutdown."""
    if node.process.poll() is None:
        node.process.terminate()
        try:
            node.process.wait(60)
        except subprocess.TimeoutExpired:
            kill(node)
    pids = postgres_pids(node)
    if pids:
        _signal(pids[0], signal.SIGINT)
        if not _wait_gone(pids[:1], 30):
            kill_postgres(node)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # exited meanwhile
        os.kill(pid, sig)


def _wait_gone(pids: list[int], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reap()
        if not any(Path(f"/proc/{pid}").exists() and not _zombie(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return False
