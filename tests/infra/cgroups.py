"""Memory cgroups as the tests see them, independently of the supervisor under test
(`examples/oom-supervisor/supervise.py`): where one lives, its OOM-kill counter, and removing it.

cgroup v1 (this project's CI machines): `/sys/fs/cgroup/memory/<name>`, the counter in `memory.oom_control`;
v2 (the unified hierarchy mounted at /sys/fs/cgroup): `/sys/fs/cgroup/<name>`, the counter in `memory.events`.
Creating one needs root.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
SUPERVISOR = Path(__file__).resolve().parents[2] / "examples" / "oom-supervisor" / "supervise.py"


def unified() -> bool:
    return (ROOT / "cgroup.controllers").exists()


def memory_cgroup(name: str) -> Path:
    return ROOT / name if unified() else ROOT / "memory" / name


def counter_file(path: Path) -> Path:
    """The file of the cgroup at `path` that has its OOM-kill counter, a line `oom_kill N`."""
    return path / ("memory.events" if unified() else "memory.oom_control")


def oom_kills(path: Path) -> int:
    """The kernel's count of OOM kills in the cgroup at `path`."""
    text = counter_file(path).read_text()
    return int(dict(line.split() for line in text.splitlines())["oom_kill"])


def can_create() -> str:
    """Why memory cgroups cannot be created here, or "" when they can."""
    parent = memory_cgroup("")
    if not (parent / "cgroup.procs").exists():
        return f"no memory cgroup hierarchy at {parent}"
    if not os.access(parent, os.W_OK):
        return f"{parent} is not writable (memory cgroups need root)"
    return ""


def remove(path: Path, timeout_s: float = 5.0) -> None:
    """Kill whatever is left in the cgroup and remove it; nothing when it does not exist."""
    deadline = time.monotonic() + timeout_s
    while path.exists():
        for pid in (path / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        with contextlib.suppress(OSError):  # EBUSY until the killed processes are gone
            path.rmdir()
        if time.monotonic() > deadline:
            raise RuntimeError(f"cannot remove {path}: {(path / 'cgroup.procs').read_text().split()} still in it")
        time.sleep(0.05)
