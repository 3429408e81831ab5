"""A Postgres server the tests can stop, crash and start again, run with `pg_ctl` from the pgserver wheel.

The session's shared server (`infra.postgres`) must stay up for every other test, so outage tests get
their own: initialised in a temporary directory, listening on a free TCP port of 127.0.0.1 (the DSN
stays the same across restarts), with the same binaries pgserver uses. As root, Postgres refuses to
run, so the server runs as pgserver's `pgserver` user, which that package also creates.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import psycopg

from . import leftovers
from .ports import free_port

START_TIMEOUT_S = 30
_SYSTEM_USER = "pgserver"


def _pgserver_bin() -> Path:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        from pgserver._commands import POSTGRES_BIN_PATH
        from pgserver.utils import ensure_user_exists
    if os.geteuid() == 0:
        ensure_user_exists(_SYSTEM_USER)
    return POSTGRES_BIN_PATH


class PostgresProcess:
    """One Postgres server on 127.0.0.1:<port>; `stop(mode)` and `start()` may be called repeatedly."""

    def __init__(self) -> None:
        self._bin = _pgserver_bin()
        self.workdir = leftovers.work_dir("pgctl")  # opened to the server's user, who must reach its data
        self.data_dir = self.workdir / "data"
        self.log_path = self.workdir / "postgres.log"
        self.port = free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._initdb()

    @property
    def running(self) -> bool:
        return self._pid() is not None

    def start(self) -> None:
        """Start the server and return once it accepts connections."""
        if self.running:
            return
        self._pg_ctl("-w", "-t", str(START_TIMEOUT_S), "-l", str(self.log_path),
                     "-o", f"-h 127.0.0.1 -p {self.port} -k {self.workdir}", "start")
        self._wait_accepting()

    def stop(self, mode: str = "fast") -> None:
        """`fast`: a clean shutdown that ends every session; `immediate`: like a crash, recovery at the next start."""
        if self.running:
            self._pg_ctl("-w", "-m", mode, "stop")

    def kill(self) -> None:
        """SIGKILL the postmaster, as the kernel's OOM killer would; its backends exit once they notice.

        Returns once the process is gone: until its parent (init) reaps it, a new postmaster would take
        the old one's PID in postmaster.pid for a live server and refuse to start."""
        pid = self._pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + START_TIMEOUT_S
            while _exists(pid) and time.monotonic() < deadline:
                time.sleep(0.02)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.stop("immediate")
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> PostgresProcess:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _initdb(self) -> None:
        self.data_dir.mkdir()
        if os.geteuid() == 0:
            user = pwd.getpwnam(_SYSTEM_USER)
            for path in (self.workdir, self.data_dir):
                os.chown(path, user.pw_uid, user.pw_gid)
        self._run(self._bin / "initdb", "-D", str(self.data_dir), "--auth=trust", "--encoding=utf8",
                  "-U", "postgres", "--no-sync")

    def _pg_ctl(self, *args: str) -> None:
        self._run(self._bin / "pg_ctl", "-D", str(self.data_dir), *args)

    def _run(self, *argv: str | Path) -> None:
        user = _SYSTEM_USER if os.geteuid() == 0 else None
        # pg_ctl start leaves the server holding inherited pipes open: write to a file, never to a pipe
        with tempfile.TemporaryFile() as out:
            result = subprocess.run([str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, user=user, timeout=START_TIMEOUT_S + 10)
            if result.returncode != 0:
                out.seek(0)
                raise RuntimeError(f"{' '.join(result.args)} exited with {result.returncode}:\n"
                                   f"{out.read().decode(errors='replace')}\n{self.log_tail()}")

    def _pid(self) -> int | None:
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None
        return pid if _alive(pid) else None

    def _wait_accepting(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                psycopg.connect(self.dsn, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)


def _exists(pid: int) -> bool:
    """Running, or dead but not yet reaped (a zombie still answers signal 0)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _alive(pid: int) -> bool:
    if not _exists(pid):
        return False
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            return False
    return True
