"""What a killed test session left is stopped by the next (`infra.leftovers`), and nothing else is.

Real processes, a real lock; the sweep is limited to the processes these tests start, so that it
cannot touch the session running them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from infra import leftovers

SLEEPER = "import time; time.sleep(600)"


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen]]:
    processes: list[subprocess.Popen] = []
    yield processes
    for p in processes:
        p.kill()
        p.wait()


def _start(processes: list[subprocess.Popen], *args: str, session: str | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != leftovers.SESSION_ENV}
    if session is not None:
        env[leftovers.SESSION_ENV] = session
    process = subprocess.Popen([sys.executable, "-c", SLEEPER, *args], env=env)
    processes.append(process)
    return process


def test_a_killed_sessions_processes_and_work_directories_are_swept(tmp_path: Path, spawned: list) -> None:
    left = leftovers.work_dir("e2e", tmp_path)
    (left / "pgdata").mkdir()
    old_session = _start(spawned, session="a-killed-session")
    in_left_dir = _start(spawned, str(left / "pgdata"))  # no mark (its environment was replaced), its directory
    ours = _start(spawned, session="this-session")
    unmarked = _start(spawned, str(tmp_path / "elsewhere"))
    other_files = tmp_path / "flamewatch-block-1"  # not a work directory of the tests
    other_files.write_bytes(b"kept")

    killed, removed = leftovers.sweep(tmp_path, "this-session", [p.pid for p in spawned])

    assert sorted(killed) == sorted([old_session.pid, in_left_dir.pid])
    assert old_session.wait(10) == in_left_dir.wait(10) == -9
    assert ours.poll() is None and unmarked.poll() is None
    assert removed == [left] and not left.exists() and other_files.read_bytes() == b"kept"


def test_work_directories_are_open_to_the_servers_user_and_named_for_the_sweep(tmp_path: Path) -> None:
    path = leftovers.work_dir("cluster", tmp_path)
    assert path.name.startswith("flamewatch-test-cluster-") and path.stat().st_mode & 0o777 == 0o755


def test_one_session_at_a_time_holds_the_lock_and_a_dead_holder_frees_it(tmp_path: Path) -> None:
    first = leftovers.take_lock(tmp_path)
    assert first is not None
    assert leftovers.take_lock(tmp_path) is None  # a second session beside the first sweeps nothing
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[1]); "
                               "from infra import leftovers; from pathlib import Path; "
                               "assert leftovers.take_lock(Path(sys.argv[2])) is None; print('refused', flush=True)",
                               str(Path(__file__).parents[1]), str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert holder.communicate(timeout=30)[0].strip() == "refused" and holder.returncode == 0
    first.close()  # as the kernel does when a killed session's process dies
    again = leftovers.take_lock(tmp_path)
    assert again is not None
    again.close()
