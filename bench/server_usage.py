"""What a running `flamewatch all` and its embedded Postgres use, read from /proc and from the servers
themselves, for `ingest_cost.py`.

Three parts, each a process tree: the `flamewatch all` process, its children (the compactor it starts
5 s after its own start, at nice 10; a compactor that exited is counted through the parent's
cutime/cstime once reaped), and the embedded Postgres (the postmaster, its backends and background
workers, and the backends it has reaped). CPU is utime + stime from /proc/<pid>/stat.

Memory is the sum of PSS (/proc/<pid>/smaps_rollup) over every process of the three parts: Postgres's
shared buffers are mapped by each backend, and RSS would count them once per backend, PSS divides them
among the processes mapping them. `MemorySampler` samples the sum on a thread and keeps its peak; the
main process's VmHWM (its own peak RSS since it started) is read beside it.

What may explain a run that cost more than another: Postgres's background work (checkpoints and the
buffers they wrote, autovacuum and autoanalyze runs, WAL written), compaction (blocks above level 0,
the compactor's CPU), the flushes (flush blocks written), the server's Python garbage collections (its
`/metrics`, prometheus_client's python_gc_collections_total) and its scrapes of itself (the collector's
counter), and the main process's system time, page faults and involuntary context switches (a
neighbour taking its core). Each is read before and after a run; `Counters` holds one reading.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

import allinone
import httpx
from demo_cost import children, cpu_seconds, postmaster_pid

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PID_REFRESH_S = 1.0  # Postgres starts a backend per new connection: look for new processes this often


@dataclass(frozen=True)
class Cpu:
    """CPU seconds used so far by each part."""

    main: float
    compactor: float
    postgres: float

    @property
    def total(self) -> float:
        return self.main + self.compactor + self.postgres

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(self.main - other.main, self.compactor - other.compactor, self.postgres - other.postgres)


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        found += kids
        todo += kids
    return found


def _cpu_or_zero(pid: int, reaped: bool = False) -> float:
    try:
        return cpu_seconds(pid, reaped)
    except (OSError, ValueError, IndexError):  # exited meanwhile: its parent counts it once reaped
        return 0.0


def cpu(node: allinone.AllInOne) -> Cpu:
    main = node.process.pid
    own = _cpu_or_zero(main)
    family = _cpu_or_zero(main, reaped=True) - own  # children that exited (pg_ctl at start, a compactor)
    compactor = family + sum(_cpu_or_zero(pid, reaped=True) for pid in descendants(main))
    postmaster = postmaster_pid(node.postgres)
    postgres = 0.0
    if postmaster is not None:
        postgres = _cpu_or_zero(postmaster, reaped=True) + sum(_cpu_or_zero(p) for p in children(postmaster))
    return Cpu(own, compactor, postgres)


def compactor_pids(node: allinone.AllInOne) -> list[int]:
    return descendants(node.process.pid)


def pids(node: allinone.AllInOne) -> dict[str, list[int]]:
    """Every process of the three parts, by part."""
    postmaster = postmaster_pid(node.postgres)
    pg = [postmaster, *children(postmaster)] if postmaster is not None else []
    return {"main": [node.process.pid], "compactor": descendants(node.process.pid), "postgres": pg}


def rss_pss_bytes(pid: int) -> tuple[int, int]:
    found = {"Rss:": 0, "Pss:": 0}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            name = line.split(maxsplit=1)[0] if line else ""
            if name in found:
                found[name] = int(line.split()[1]) * 1024
    except (OSError, ValueError):  # exited meanwhile
        pass
    return found["Rss:"], found["Pss:"]


def vm_hwm_bytes(pid: int) -> int:
    """The process's peak resident memory since it started (VmHWM of /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


class MemorySampler:
    """The sum of PSS over the server's processes every `every_s` seconds on a thread; `peak` and
    `samples` once stopped, `peak_parts` (each part's PSS in the sample of the peak) and `peak_rss`, the
    peak of the sum of RSS (shared pages once per process).
    Reading smaps_rollup walks the page tables of the process read: the CPU is this process's, not the
    server's."""

    def __init__(self, node: allinone.AllInOne, every_s: float) -> None:
        self._node, self._every = node, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pss-sampler", daemon=True)
        self.peak = self.peak_rss = 0
        self.peak_parts: dict[str, int] = {}
        self.samples = 0

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        found, refreshed = pids(self._node), time.monotonic()
        while not self._stop.is_set():
            if time.monotonic() - refreshed > PID_REFRESH_S:
                found, refreshed = pids(self._node), time.monotonic()
            read = {part: [rss_pss_bytes(pid) for pid in part_pids] for part, part_pids in found.items()}
            parts = {part: sum(pss for _, pss in values) for part, values in read.items()}
            if sum(parts.values()) > self.peak:
                self.peak, self.peak_parts = sum(parts.values()), parts
            self.peak_rss = max(self.peak_rss, sum(rss for values in read.values() for rss, _ in values))
            self.samples += 1
            self._stop.wait(self._every)


# ------------------------------------------------------------------------------------- counters

_GC = re.compile(r'^python_gc_collections_total\{generation="(\d)"\} ([0-9.e+]+)$', re.M)
_SCRAPES = re.compile(r'^flamewatch_collector_scrapes_total\{[^}]*\} ([0-9.e+]+)$', re.M)


@dataclass
class Counters:
    """Cumulative counters of the server's background work at one moment; subtract two for a run's."""

    checkpoints: float = 0  # timed and requested
    checkpoint_buffers: float = 0  # buffers written by checkpoints
    bgwriter_buffers: float = 0  # buffers written by the background writer
    autovacuums: float = 0  # autovacuum and autoanalyze runs, every table
    wal_bytes: float = 0
    gc_gen0: float = 0  # the `flamewatch all` process's garbage collections, per generation
    gc_gen1: float = 0
    gc_gen2: float = 0
    self_scrapes: float = 0  # the server's scrapes of its own /debug/pprof (its default configuration)
    blocks_level0: float = 0  # flush blocks live: one per flush, until compacted
    blocks_compacted: float = 0  # blocks above level 0 live
    main_user_s: float = 0  # the `flamewatch all` process's CPU, user and system apart
    main_system_s: float = 0
    main_minor_faults: float = 0  # pages the kernel mapped in for it (fresh memory from malloc, and again
    # after malloc gave it back)
    main_preempted: float = 0  # involuntary context switches over its threads: neighbours taking its core
    errors: list[str] = field(default_factory=list)

    def __sub__(self, other: Counters) -> Counters:
        diff = {f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self) if f.name != "errors"}
        return Counters(**diff, errors=self.errors + other.errors)


def counters(node: allinone.AllInOne) -> Counters:
    """Postgres's checkpoint, autovacuum and WAL counters, the live blocks by level, and the server's
    GC counts. A source that cannot be read leaves its fields at 0 and says why in `errors`."""
    found = Counters()
    try:
        _postgres_counters(node, found)
    except Exception as exc:  # noqa: BLE001 - a figure missing is written down, not fatal to the bench
        found.errors.append(f"postgres: {exc!r}")
    try:
        _process_counters(node.process.pid, found)
    except (OSError, ValueError) as exc:
        found.errors.append(f"/proc: {exc!r}")
    try:
        text = httpx.get(f"{node.url}/metrics", timeout=10).text
        gc = {int(g): float(v) for g, v in _GC.findall(text)}
        found.gc_gen0, found.gc_gen1, found.gc_gen2 = gc.get(0, 0), gc.get(1, 0), gc.get(2, 0)
        found.self_scrapes = sum(float(v) for v in _SCRAPES.findall(text))
    except httpx.HTTPError as exc:
        found.errors.append(f"/metrics: {exc!r}")
    return found


def _process_counters(pid: int, into: Counters) -> None:
    fields_ = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    into.main_minor_faults = float(fields_[7])  # minflt, field 10 of stat
    into.main_user_s, into.main_system_s = int(fields_[11]) / CLOCK_TICKS, int(fields_[12]) / CLOCK_TICKS
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            for line in (task / "status").read_text().splitlines():
                if line.startswith("nonvoluntary_ctxt_switches:"):
                    into.main_preempted += int(line.split()[1])


def _postgres_counters(node: allinone.AllInOne, into: Counters) -> None:
    import psycopg

    with psycopg.connect(f"postgresql://postgres:@/postgres?host={node.postgres}", autocommit=True) as conn:
        def one(sql: str) -> list[float]:  # numeric (wal_bytes) and bigint alike
            return [float(x) for x in conn.execute(sql).fetchone()]

        if conn.execute("SELECT to_regclass('pg_catalog.pg_stat_checkpointer')").fetchone()[0]:  # Postgres 17
            into.checkpoints, into.checkpoint_buffers = one("SELECT num_timed + num_requested, buffers_written "
                                                            "FROM pg_stat_checkpointer")
            into.bgwriter_buffers, = one("SELECT buffers_clean FROM pg_stat_bgwriter")
        else:
            into.checkpoints, into.checkpoint_buffers, into.bgwriter_buffers = one(
                "SELECT checkpoints_timed + checkpoints_req, buffers_checkpoint, buffers_clean FROM pg_stat_bgwriter")
        into.autovacuums, = one("SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_all_tables")
        with contextlib.suppress(psycopg.Error):
            into.wal_bytes, = one("SELECT wal_bytes FROM pg_stat_wal")
        into.blocks_level0, into.blocks_compacted = one(
            "SELECT count(*) FILTER (WHERE level = 0), count(*) FILTER (WHERE level > 0) FROM blocks")
