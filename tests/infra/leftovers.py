"""What a killed test run left running, found and stopped by the next run.

A test session that ends normally stops what it started (fixtures' teardowns). One killed outright
(SIGKILL, an out-of-memory kill, a CI job's timeout) leaves its servers running: embedded Postgres
servers, `flamewatch` processes, MinIO, etcd and the API server, Go targets; and its work directories
outside pytest's root (which pytest cleans itself). The next session sweeps them before it starts:

- `begin_session` takes a machine-wide lock (one test session at a time runs the sweep, and a second
  session started beside a running one sweeps nothing), marks this session's environment with
  `SESSION_ENV` (every process it starts inherits it, Postgres's postmaster through pgserver's
  `pg_ctl` too), and calls `sweep`.
- `sweep` kills every process marked by another session, or whose command line names one of the
  leftover work directories, then deletes those directories (`work_dir` names them all alike).

The Docker engine and its containers are left alone: a later session uses an engine that answers
(`infra.docker.Engine`), and the one-node cluster cleans up after itself (`infra.kubenode`).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

SESSION_ENV = "FLAMEWATCH_TEST_SESSION"
DIR_PREFIX = "flamewatch-test-"
LOCK_NAME = "flamewatch-tests.lock"
# The engine and its runtime, which a later session reuses rather than restarts (see the docstring).
KEPT_COMMANDS = frozenset({"dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "docker-proxy"})


def work_dir(kind: str, root: Path | None = None) -> Path:
    """A new work directory outside pytest's temporary root, opened to other users (pgserver's Postgres
    runs as its own user and must reach its data), that `sweep` recognises if the session dies."""
    path = Path(tempfile.mkdtemp(prefix=f"{DIR_PREFIX}{kind}-", dir=root))
    path.chmod(0o755)
    return path


def begin_session(root: Path | None = None) -> IO[str] | None:
    """Take the lock of the machine's test sessions (`take_lock`), mark this session's environment and
    sweep what a killed session left. None, and nothing swept, when another session holds the lock: its
    processes are alive, not left over."""
    root = Path(root or tempfile.gettempdir())
    lock = take_lock(root)
    if lock is None:
        log.warning("another test session holds %s: not sweeping what killed sessions left", root / LOCK_NAME)
        return None
    session = uuid.uuid4().hex
    os.environ[SESSION_ENV] = session
    killed, removed = sweep(root, session)
    if killed or removed:
        log.warning("a killed test session left %d process(es) and %d work directory(ies): stopped and removed",
                    len(killed), len(removed))
    return lock


def take_lock(root: Path) -> IO[str] | None:
    """The lock of the test sessions under `root`, held while the returned file stays open (the process's
    lifetime: the kernel releases it when a killed session dies); None when another process holds it, or
    the lock file is another user's."""
    try:
        lock = (root / LOCK_NAME).open("a")
    except OSError as exc:
        log.warning("cannot open %s: %s", root / LOCK_NAME, exc)
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        return None
    return lock


def sweep(root: Path, session: str, pids: Iterable[int] | None = None) -> tuple[list[int], list[Path]]:
    """Kill the processes (of `pids`, else all but this one and its parent) another session than
    `session` started, or whose command line names a leftover work directory under `root`, and delete
    those directories: (the pids killed, the directories removed)."""
    dirs = sorted(p for p in root.glob(f"{DIR_PREFIX}*") if p.is_dir())
    killed = [pid for pid in (_pids() if pids is None else pids) if _left_over(pid, session, dirs)]
    for pid in killed:
        with contextlib.suppress(ProcessLookupError):  # gone meanwhile
            os.kill(pid, signal.SIGKILL)
    _wait_gone(killed)
    for path in dirs:
        shutil.rmtree(path, ignore_errors=True)
    return killed, dirs


def _pids() -> list[int]:
    own = {os.getpid(), os.getppid()}
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and int(p.name) not in own]


def _left_over(pid: int, session: str, dirs: list[Path]) -> bool:
    proc = Path("/proc") / str(pid)
    try:
        if proc.joinpath("comm").read_text().strip() in KEPT_COMMANDS:
            return False
        environ = proc.joinpath("environ").read_bytes().split(b"\0")
        argv = proc.joinpath("cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:  # gone meanwhile, or a kernel thread
        return False
    prefix = f"{SESSION_ENV}=".encode()
    marks = [e[len(prefix):].decode() for e in environ if e.startswith(prefix)]
    if marks and marks[0] != session:
        return True
    return any(str(d).encode() in argv for d in dirs)


def _wait_gone(pids: list[int], timeout_s: float = 10.0) -> None:
    """Until each killed process is gone (reaped by its parent, or by init once orphaned)."""
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while Path(f"/proc/{pid}").exists() and not _zombie(pid) and time.monotonic() < deadline:
            time.sleep(0.05)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True
