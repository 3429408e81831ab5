"""The OOM supervisor of `examples/oom-supervisor/` on its own, in a real memory cgroup: it restarts what
ends, tells a kernel OOM kill (the cgroup's counter went up) from another non-zero exit, records each run
once with `flamewatch event` (here a stand-in that writes down its arguments and the cgroup's counter at
that moment), and removes its cgroup when it stops. With a real Flamewatch: `e2e/test_oom_kill_e2e.py`."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from infra import cgroups
from infra.waiting import wait_for

pytestmark = [pytest.mark.cgroup]

HOG = "import itertools\nheld = [b'x' * (1 << 20) for _ in itertools.count()]"  # 1 MiB written at a time


def stand_in(tmp_path: Path, cgroup: Path) -> Path:
    """A `flamewatch` that writes its arguments and the cgroup's OOM-kill count as one line each call."""
    counter = cgroups.counter_file(cgroup)
    script = tmp_path / "flamewatch"
    script.write_text(f"#!/bin/sh\necho \"$* | $(grep '^oom_kill ' {counter})\" >> {tmp_path / 'events.txt'}\n"
                      "echo recorded\n")
    script.chmod(0o755)
    return script


def supervise(tmp_path: Path, cgroup: Path, *flags: str, program: list[str]) -> subprocess.Popen:
    command = [sys.executable, str(cgroups.SUPERVISOR), "--name", cgroup.name, "--memory-limit", "64M",
               "--label", "service_name=batch", "--flamewatch", str(stand_in(tmp_path, cgroup)),
               "--restart-delay", "0.1", *flags, "--", *program]
    return subprocess.Popen(command, stderr=subprocess.PIPE, text=True)


def events(tmp_path: Path) -> list[dict[str, str]]:
    """Each recorded call as {flag: value}, with the counter the stand-in read under "counter"."""
    lines = (tmp_path / "events.txt").read_text().splitlines() if (tmp_path / "events.txt").exists() else []
    out = []
    for line in lines:
        args, _, counter = line.partition(" | ")
        words = shlex.split(args)[1:]  # after "event"
        out.append({**dict(zip(words[::2], words[1::2], strict=True)), "counter": counter})
    return out


def test_non_zero_exits_are_recorded_once_per_run_and_restarted(tmp_path: Path, memory_cgroup: Path):
    process = supervise(tmp_path, memory_cgroup, "--max-restarts", "2", program=["sh", "-c", "exit 3"])
    _, log = process.communicate(timeout=60)
    assert process.returncode == 0, log
    runs = events(tmp_path)
    assert [(e["--kind"], e["--exit-code"], e["--restart-count"]) for e in runs] == [
        ("restart", "3", "0"), ("restart", "3", "1"), ("restart", "3", "2")], log
    assert len({e["--key"] for e in runs}) == 3 and all(e["--key"].startswith(f"{memory_cgroup.name}/") for e in runs)
    assert all(int(e["--started"]) < int(e["--time"]) for e in runs)
    assert all(e["--label"] == "service_name=batch" and e["--memory-limit"] == str(64 << 20) for e in runs)
    assert all(e["counter"] == "oom_kill 0" for e in runs)
    assert not memory_cgroup.exists(), "the supervisor left its cgroup behind"


def test_a_kernel_oom_kill_is_told_apart_by_the_cgroups_counter(tmp_path: Path, memory_cgroup: Path):
    process = supervise(tmp_path, memory_cgroup, "--max-restarts", "1", program=[sys.executable, "-c", HOG])
    _, log = process.communicate(timeout=120)
    assert process.returncode == 0, log
    runs = events(tmp_path)
    assert [(e["--kind"], e["--exit-code"], e["counter"]) for e in runs] == [
        ("oom_kill", "137", "oom_kill 1"), ("oom_kill", "137", "oom_kill 2")], log
    assert "ended with exit code 137" in log and "(OOM-killed)" in log
    assert not memory_cgroup.exists()


def test_a_clean_exit_is_restarted_but_not_recorded(tmp_path: Path, memory_cgroup: Path):
    process = supervise(tmp_path, memory_cgroup, "--max-restarts", "1", program=["true"])
    _, log = process.communicate(timeout=60)
    assert process.returncode == 0 and log.count("ended with exit code 0") == 2, log
    assert events(tmp_path) == []


def test_sigterm_stops_the_program_records_nothing_and_removes_the_cgroup(tmp_path: Path, memory_cgroup: Path):
    process = supervise(tmp_path, memory_cgroup, program=["sleep", "300"])
    wait_for(lambda: memory_cgroup.exists() and (memory_cgroup / "cgroup.procs").read_text().split(), 30,
             "the program in its cgroup", interval_s=0.05)
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        _, log = process.communicate(timeout=30)
    finally:  # on a timeout, leave no supervisor (and no open pipe) to the tests after this one
        process.kill()
        process.communicate()
    assert process.returncode == 0 and time.monotonic() - started < 10, log
    assert events(tmp_path) == [] and not memory_cgroup.exists()
