"""The embedded Postgres after a crash: `flamewatch all` killed with SIGKILL leaves its Postgres running
(nothing could stop it), the next start reuses that server, and a clean stop of that next process stops
it, so no Postgres is left running on the data directory."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from e2e.test_startup import postgres_running, start_all
from infra.ports import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


def postgres_processes(data_dir: Path) -> list[int]:
    """The pids of every Postgres process serving `data_dir/postgres`, whatever its postmaster.pid says
    (the server and its children name the directory on their command line, or are children of one that
    does)."""
    pgdata = str((data_dir / "postgres").resolve()).encode()
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and pgdata in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue  # ended while we looked
    return found


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_clean_stop_after_a_kill_and_a_restart_stops_the_embedded_postgres(
        embedded_workdir: Path, how: signal.Signals):
    workdir = embedded_workdir
    first = start_all(workdir, free_port(), free_port())
    first.kill()
    first.wait(30)
    assert postgres_running(workdir / "data", settle_s=0), "SIGKILL cannot stop the embedded Postgres"
    second = start_all(workdir, free_port(), free_port())
    second.send_signal(how)
    assert second.wait(60) == 0, (workdir / "all.log").read_text()
    assert not postgres_running(workdir / "data"), (workdir / "all.log").read_text()
    assert postgres_processes(workdir / "data") == []


@pytest.fixture(autouse=True)
def _no_server_left(embedded_workdir: Path):
    """Should the test fail, stop the Postgres it left behind."""
    yield
    for pid in postgres_processes(embedded_workdir / "data"):
        os.kill(pid, signal.SIGQUIT)  # Postgres' immediate shutdown
