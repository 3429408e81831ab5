"""The parts the storage benchmark runs against: Postgres, MinIO, and Flamewatch's ingester and querier
as processes of their own, with what the benchmark reads off them (CPU time, peak memory, bytes stored).

Postgres and MinIO are the servers the tests use (`tests/infra`); `FLAMEWATCH_TEST_POSTGRES_DSN` names
an existing Postgres instead of an embedded one.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
from infra.minio import MinioServer
from infra.ports import free_port
from infra.postgres import fresh_database, server
from infra.waiting import answers, wait_for

ROOT = Path(__file__).resolve().parents[1]
FLAMEWATCH = ROOT / ".venv" / "bin" / "flamewatch"
BUCKET = "bench"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
INDEX_TABLES = ("series", "blocks", "block_series", "flush_series")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc/<pid>/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process, of its children that it has waited for, and of its live children: what a
    Postgres server (the postmaster and a backend per connection) has spent."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = sum(int(f) for f in fields[11:15]) / CLOCK_TICKS  # utime, stime, cutime, cstime
    for child in _children(pid):
        with contextlib.suppress(OSError, ValueError):  # exited since the listing: its time is the parent's
            total += cpu_seconds(child)
    return total


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError):
            continue
    return found


def peak_rss_bytes(pid: int) -> int:
    """VmHWM: the most resident memory the process has had."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")


@dataclass
class Service:
    """One Flamewatch process with its HTTP and gRPC addresses."""

    name: str
    process: subprocess.Popen
    http: str
    grpc: str
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://{self.http}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Stack:
    """Postgres (a fresh database), MinIO (a fresh bucket) and the Flamewatch processes started on them."""

    def __init__(self, work: Path, dsn: str, minio: MinioServer) -> None:
        self.work = work
        self.dsn = dsn
        self.minio = minio
        self.services: list[Service] = []

    def storage_flags(self) -> list[str]:
        m = self.minio
        return ["--storage.postgres-dsn", self.dsn, "--storage.s3.bucket", BUCKET, "--storage.s3.endpoint",
                m.endpoint, "--storage.s3.access-key", m.access_key, "--storage.s3.secret-key", m.secret_key,
                "--storage.s3.insecure", "--log.level", "warning"]

    def ingester(self, flush_interval_s: float, compaction_interval_s: float) -> Service:
        return self._start("ingester", ["--flush-interval", str(flush_interval_s),
                                        "--compaction.interval", str(compaction_interval_s)])

    def querier(self, *flags: str) -> Service:
        return self._start("querier", ["--no-self-profiling.heap", *flags])

    def _start(self, name: str, flags: list[str]) -> Service:
        http, grpc = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
        log = self.work / f"{name}-{len(self.services)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen([str(FLAMEWATCH), name, "--http-address", http, "--grpc-address", grpc,
                                        *flags, *self.storage_flags()], stdout=out, stderr=subprocess.STDOUT)
        service = Service(name, process, http, grpc, log)
        self.services.append(service)
        try:
            wait_for(lambda: answers(f"{service.url}/readyz"), 90, f"the {name} to be ready", log, process,
                     interval_s=0.1)
        except BaseException:
            service.stop()
            raise
        return service

    def stop_all(self) -> None:
        for service in self.services:
            service.stop()
        self.services.clear()

    def backend_cpu_seconds(self) -> tuple[float, float] | None:
        """CPU time so far of the Postgres server (its postmaster's process tree) and of MinIO, or None
        when Postgres is not a process of this machine that /proc shows."""
        with psycopg.connect(self.dsn) as conn:
            backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            try:
                postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                return None
        minio = self.minio.pid
        return tree_cpu_seconds(postmaster), cpu_seconds(minio) if minio else 0.0

    def object_bytes(self) -> tuple[int, int]:
        """Total size and count of the objects in the bucket, from a listing."""
        objects = list(self.minio.client().list_objects(BUCKET, recursive=True))
        return sum(o.size for o in objects), len(objects)

    def live_object_bytes(self) -> tuple[int, int, int]:
        """Bytes and count of the listed objects that belong to live blocks, and bytes of the others
        (retired blocks waiting for their grace period, orphans waiting for the sweeper)."""
        with psycopg.connect(self.dsn) as conn:
            live = {key for (key,) in conn.execute("SELECT key FROM blocks WHERE state = 'live'")}
        objects = list(self.minio.client().list_objects(BUCKET, recursive=True))
        kept = [o.size for o in objects if o.object_name in live]
        return sum(kept), len(kept), sum(o.size for o in objects) - sum(kept)

    def index_bytes(self) -> int:
        """Postgres's size of the index tables, partitions, indexes and TOAST included."""
        return sum(self.index_table_bytes().values())

    def index_table_bytes(self) -> dict[str, int]:
        """The same per table, a partitioned table's partitions added up."""
        with psycopg.connect(self.dsn) as conn:
            rows = conn.execute(
                "SELECT coalesce(p.relname, c.relname), sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                "LEFT JOIN pg_inherits i ON i.inhrelid = c.oid LEFT JOIN pg_class p ON p.oid = i.inhparent "
                "WHERE c.relkind = 'r' AND (c.relname = ANY(%s) OR p.relname = ANY(%s)) GROUP BY 1",
                (list(INDEX_TABLES), list(INDEX_TABLES))).fetchall()
        return {name: int(size) for name, size in rows}

    def live_blocks(self, before_ns: int) -> dict[int, int]:
        """Live blocks per level among those that end before `before_ns`."""
        with psycopg.connect(self.dsn) as conn:
            rows = conn.execute("SELECT level, count(*) FROM blocks WHERE state = 'live' AND max_time < %s "
                                "GROUP BY 1 ORDER BY 1", (before_ns,)).fetchall()
        return {int(level): int(count) for level, count in rows}


@contextlib.contextmanager
def running_stack() -> Iterator[Stack]:
    with tempfile.TemporaryDirectory(prefix="flamewatch-bench-") as tmp, \
            server(os.environ.get("FLAMEWATCH_TEST_POSTGRES_DSN")) as admin, fresh_database(admin) as dsn, \
            MinioServer(Path(tmp) / "minio") as minio:
        minio.create_bucket(BUCKET)
        stack = Stack(Path(tmp), dsn, minio)
        try:
            yield stack
        finally:
            stack.stop_all()
