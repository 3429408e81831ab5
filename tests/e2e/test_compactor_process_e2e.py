"""`flamewatch all` compacts in a process of its own (issue 21: a round in the process that answers
queries made a cold query 25 times slower), and only while there is something to compact (the process
takes ~120 MB): the compactor is its child, started when an hour of stored profiles has ended, compacts
it, logs into the same stream, exits when done, and goes away with `all`, whether `all` is stopped or
killed. The test holds the tenant's compaction lock in Postgres to keep the compactor waiting, alive,
while it looks at it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest
from e2e.allinone import start_all, stop
from e2e.pushes import rewritten
from infra.ports import free_port
from infra.waiting import wait_for

from flamewatch.storage.compaction import tenant_lock
from flamewatch.storage.postgres import PostgresConfig, open_database

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.go]

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
HOUR = 3600 * 10**9
TENANT = "anonymous"  # a push without X-Scope-OrgID


def children(pid: int) -> list[int]:
    return [int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()]


def compactor_of(pid: int) -> int | None:
    for child in children(pid):
        if b"compactor" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
            return child
    return None


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_all_compacts_in_a_child_process_while_there_is_work_and_it_goes_away_with_all(
        tmp_path, go_profiles, postgres_dsn) -> None:
    http_port, grpc_port = free_port(), free_port()
    url, log = f"http://127.0.0.1:{http_port}", tmp_path / "all.log"
    config = tmp_path / "flamewatch.yaml"
    config.write_text("scrape_configs: []\n")
    flags = ("--compaction.interval", "0.5", "--storage.postgres-dsn", postgres_dsn)
    process = start_all(tmp_path, config, http_port, grpc_port, *flags)
    db = open_database(PostgresConfig(dsn=postgres_dsn, pool_min=1, pool_max=2))
    try:
        wait_for(lambda: httpx.get(url + "/readyz").status_code == 200, 60, "flamewatch all", log)
        time.sleep(3)  # six intervals with nothing to compact
        assert compactor_of(process.pid) is None, log.read_text()
        now = time.time_ns()
        hour = now - now % HOUR - 2 * HOUR  # ended long enough ago to be compacted at once
        with tenant_lock(db, TENANT) as held:  # the compactor finds the tenant taken and waits for it
            assert held
            for minute in (5, 25):
                answer = httpx.post(url + "/ingest", params={"__name__": "process_cpu", "service_name": "api"},
                                    content=rewritten(go_profiles["cpu"], time_ns=hour + minute * 60 * 10**9),
                                    timeout=30)
                assert answer.status_code == 200, answer.text
            child = wait_for(lambda: compactor_of(process.pid), 30, "the compactor process", log)
            lower = min(19, os.getpriority(os.PRIO_PROCESS, process.pid) + 10)  # it lowers itself as it starts
            wait_for(lambda: os.getpriority(os.PRIO_PROCESS, child) == lower, 30, "the compactor's lower priority",
                     log)
            # killed with SIGKILL, `all` sends its compactor nothing: the compactor notices by itself
            process.send_signal(signal.SIGKILL)
            process.wait(10)
            wait_for(lambda: gone(child), 15, "the compactor to stop after its parent was killed", log)

            process = start_all(tmp_path, config, http_port, grpc_port, *flags)
            wait_for(lambda: httpx.get(url + "/readyz").status_code == 200, 60, "flamewatch all again", log)
            child = wait_for(lambda: compactor_of(process.pid), 30, "the new compactor process", log)
        # the lock released: the hour is compacted, and the compactor exits, its work done
        wait_for(lambda: "1 hour block(s)" in log.read_text(), 60, "the compactor's hour block", log)
        wait_for(lambda: gone(child), 30, "the compactor to exit once nothing is left to compact", log)
        assert "nothing left to compact" in log.read_text()
        merged = httpx.get(url + "/api/v1/query", params={"query": CPU + "{}", "from": str(hour // 10**6),
                                                          "until": str((hour + HOUR) // 10**6)}, timeout=30).json()
        assert merged["profiles"] == 2, merged
        time.sleep(2)
        assert compactor_of(process.pid) is None, log.read_text()  # not started again: nothing is due
        assert stop(process) == 0, log.read_text()
    finally:
        db.close()
        if process.poll() is None:
            process.kill()
            process.wait()
