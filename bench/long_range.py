"""Issue 22's long ranges: a month of one service, a week of a fleet, and queries split across replicas,
each figure with pre-merged trees beside the same query over the raw profiles.

    nice .venv/bin/python bench/long_range.py [--runs 5]

Data (`long_range_data.py`, generated once into `.cache/long-range/`, 15-20 minutes on 2 shared
cores): a month of one service's 10 s CPU profiles (259,200 pprofs) and a week of a 100-series fleet's
60 s CPU profiles (1,008,000 pprofs), real Go profiles compacted twice into two data directories: with
pre-merged trees (as the compactor writes blocks) and without. Flamewatch has no switch that turns trees
off at query time (`Querier.trees` is set in code), so the raw-profile path is the querier on the blocks
compacted without trees, which is what it reads for any block without them.

Measures, each the median of `--runs` (5):

1. the 30-day flamegraph of the service: warm (after one query that fills the cache) and cold (a fresh
   `flamewatch all`, its embedded Postgres started anew, and the data directory's files dropped from the
   OS page cache with posix_fadvise, so the blocks and the index are read from disk);
2. the 7-day flamegraph of the fleet (`{service_name=~"svc-.*"}`), warm, and cold as the month is (no goal
   asks for it: what the first look at a week of a fleet costs after a restart);
3. the 30-day time series of the service's totals (`/api/v1/query_range`, its default step, ~120 points), warm;
   (1-3 against `flamewatch all` at its defaults, on the data directory)
4. the extra storage of pre-merged trees: the block objects' bytes with trees over those without;
5. the fleet's 7-day merge, warm, on 2 `flamewatch querier` replicas (the one queried started with
   `--query.peers` naming the other's gRPC address, and `--query.split-min-profiles 1` so that it splits
   this merge whatever the default threshold says: the split itself is measured) against 1, both on the
   data directory's storage (its objects and its Postgres by DSN), each process with `--cache-bytes`
   (1 GiB); the 1-replica figure always, the 2-replica one when `flamewatch querier` has `--query.peers`;
   beside them the least ratio any 2-way split could give this merge, from the fleet's first hour on the one
   querier (nearly the same tree to answer: the part of the query that is not the merge);
   and the replicas' capacity: 4 clients asking the same merge twice each at once, of one querier, then of
   two at their defaults (no peers), each client's queries to each in turn, timed until every answer is in;
6. when `flamewatch all` has `--query.workers`: the fleet's merge with `--query.workers 0` against its default;
7. the month's and the fleet's flamegraphs on one `flamewatch querier` at its defaults reading the blocks from
   S3 (a MinIO on this machine, the blocks uploaded into it; the index in the data directory's Postgres),
   cold (a fresh querier, MinIO's files dropped from the page cache; the index warm) and warm, with the
   requests and bytes each cold query took of S3 (the querier's `flamewatch_objstore_*` metrics). On this
   machine a request costs a loopback round trip; a cloud bucket's first byte takes some 10-50 ms more.

Each warm figure comes with the server's CPU per query and what its block cache held afterwards.
Where the time goes: one cold month query and the warm month and fleet queries over pre-merged trees,
profiled by the process itself (`/debug/pprof/profile`, `whereitgoes.py`) in a `flamewatch querier` with
the cache `flamewatch all` has (`flamewatch all` profiles itself all the time, so its endpoint is busy),
summed up in the result.
The load average is printed before and after each phase: the machine is shared. Output: the table on
stdout and `bench/results/<UTC time>-long-range.md` (and `.json`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]

import allinone  # noqa: E402
import long_range_data as data  # noqa: E402
import report  # noqa: E402
import whereitgoes  # noqa: E402
from corpus import load_or_capture  # noqa: E402
from demo_cost import children  # noqa: E402
from infra.minio import MinioServer  # noqa: E402
from querytiming import CPU, Query, flamegraph, fmt_ms, once, stats, timed, warm  # noqa: E402
from report import Goal, Row, row  # noqa: E402
from stack import BUCKET, Stack, cpu_seconds  # noqa: E402

from flamewatch.querier.config import QuerierConfig  # noqa: E402
from flamewatch.storage.postgres import PostgresConfig, open_database  # noqa: E402

GiB = 1 << 30
HOUR_NS = 3600 * 10**9
REPLICA_CACHE_BYTES = GiB
VARIANTS = tuple(data.VARIANTS)  # "trees", "raw"


@dataclass
class Bench(report.Progress):
    """What the phases share: the data, the queries and what has been measured so far."""

    args: argparse.Namespace
    dataset: data.Dataset
    stamp: str
    times: dict[str, dict[str, list[float]]] = field(default_factory=lambda: {v: {} for v in VARIANTS})
    counts: dict[str, int] = field(default_factory=dict)  # query -> profiles (or series) in its answer
    profiles: dict[str, str] = field(default_factory=dict)

    def record(self, variant: str, name: str, times: list[float], count: int | None = None) -> None:
        self.times[variant][name] = times
        if count is not None:
            self.counts[name] = count
        self.detail(f"{variant}: {name}: {spread(times)}")

    def query(self, name: str) -> Query:
        month, fleet = self.dataset.shape.month, self.dataset.shape.fleet
        return {"month": flamegraph("month", '{service_name="month-0"}', month.start_ns, month.end_ns),
                "fleet": flamegraph("fleet", '{service_name=~"svc-.*"}', fleet.start_ns, fleet.end_ns),
                # the fleet's first hour: nearly the same tree to answer, an hour of the merge
                "fleet hour": flamegraph("fleet-hour", '{service_name=~"svc-.*"}', fleet.start_ns,
                                         fleet.start_ns + HOUR_NS - 1),
                "totals": Query("totals", "/api/v1/query_range", {
                    "query": f'{CPU}{{service_name="month-0"}}', "from": str(month.start_ns),
                    "until": str(month.end_ns)})}[name]


def spread(times: list[float]) -> str:
    """Median (min-max) of the runs."""
    return f"{fmt_ms(stats(times)[0])} ({fmt_ms(1e3 * min(times))}-{fmt_ms(1e3 * max(times))})"


@contextlib.contextmanager
def phase(bench: Bench, name: str) -> Iterator[None]:
    before = [round(x, 2) for x in os.getloadavg()]
    bench.say(f"{name}: load average {before}")
    yield
    bench.detail(f"{name}: load average (1, 5, 15 min) {before} before, {[round(x, 2) for x in os.getloadavg()]} "
                 "after")


# ------------------------------------------------------------------------------------ flamewatch all


@contextlib.contextmanager
def running_all(bench: Bench, variant: str, extra: list[str] | None = None) -> Iterator[allinone.AllInOne]:
    node, ready = allinone.start(bench.dataset.data_dir(variant), extra)
    bench.say(f"{variant}: {' '.join(['flamewatch all', *(extra or [])])} ready after {ready:.1f} s")
    try:
        yield node
    finally:
        allinone.stop(node)


def all_phase(bench: Bench, variant: str) -> None:
    """Measures 1-3 on `flamewatch all` at its defaults."""
    runs = bench.args.runs
    with phase(bench, f"{variant}: flamewatch all, warm"), running_all(bench, variant) as node:
        for name in ("month", "fleet", "totals"):
            warm_query(bench, variant, name, node, f"{name} warm", functools.partial(serving_pids, node))
    with phase(bench, f"{variant}: flamewatch all, cold"):
        for name in ("month", "fleet"):
            bench.record(variant, f"{name} cold", [cold_query(bench, variant, name) for _ in range(runs)])


def warm_query(bench: Bench, variant: str, name: str, service, label: str, pids=None) -> None:
    """`label`: the runs of query `name` once `service` has answered it, and what they cost in CPU to the
    processes that answer it (`pids()`, by default the service's): on a shared machine, wall time also
    counts the neighbours' work."""
    query = bench.query(name)
    timed(service, query)  # fills the cache, as `warm` does again (started workers are counted from here)
    pids = pids() if pids else [service.pid]
    before = sum(cpu_seconds(pid) for pid in pids)
    times, count = warm(service, query, bench.args.runs)
    cpu = (sum(cpu_seconds(pid) for pid in pids) - before) / (bench.args.runs + 1)
    bench.record(variant, label, times, count)
    bench.detail(f"{variant}: {label}: {count:,} in the answer (profiles merged, or series), {fmt_ms(1e3 * cpu)} "
                 f"of server CPU per query ({len(pids)} process(es), self-profiling included); {cache_state(service)}")


def cache_state(service) -> str:
    """What the block cache of the queried process holds after the runs (its /metrics)."""
    found = {}
    for line in httpx.get(f"{service.url}/metrics", timeout=30).text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("flamewatch_querier_block_cache_blocks", "flamewatch_querier_block_cache_bytes"):
            found[name] = float(value)
    return (f"its block cache holds {found.get('flamewatch_querier_block_cache_blocks', 0):.0f} blocks, "
            f"{found.get('flamewatch_querier_block_cache_bytes', 0) / 2**20:.0f} MiB as it counts them")


def cold_query(bench: Bench, variant: str, name: str) -> float:
    """Query `name`'s flamegraph as the first query of a fresh `flamewatch all` whose files (blocks, and its
    Postgres, stopped with it) are out of the OS page cache."""
    dropped = drop_page_cache(bench.dataset.data_dir(variant))
    with running_all(bench, variant) as node:
        seconds, _ = timed(node, bench.query(name))
    bench.say(f"{variant}: cold {name} {fmt_ms(1e3 * seconds)} ({dropped / 2**20:.0f} MiB of files dropped from the "
              "page cache first)")
    return seconds


def drop_page_cache(directory: Path) -> int:
    """Write back and drop the pages of every file under `directory` from the OS page cache (only these
    files: the machine is shared); the bytes of the files."""
    total = 0
    for path in directory.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        with contextlib.suppress(OSError):  # a file Postgres removed meanwhile
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                total += os.fstat(fd).st_size
            finally:
                os.close(fd)
    return total


def profile_phase(bench: Bench) -> None:
    """Where the trees path's time goes: a cold month query, then the warm month and fleet queries, in a
    `flamewatch querier` on the data with the cache `flamewatch all` has (which profiles itself all the
    time, so its own /debug/pprof/profile is busy)."""
    drop_page_cache(bench.dataset.data_dir("trees"))
    with phase(bench, "trees: where the time goes"), data_dir_stack(bench, "trees") as stack:
        querier = stack.querier("--cache-bytes", str(QuerierConfig.embedded_cache_bytes))
        seconds = int(max(bench.times["trees"]["month cold"])) + 2
        where_it_goes(bench, querier, "month-cold", once(functools.partial(timed, querier, bench.query("month"))),
                      seconds)
        for name in ("month", "fleet"):
            where_it_goes(bench, querier, f"{name}-warm", functools.partial(timed, querier, bench.query(name)))


def where_it_goes(bench: Bench, service, case: str, work, seconds: int | None = None) -> None:
    name = f"{bench.stamp}-long-range-{case}.pb.gz"
    seconds = seconds or bench.args.profile_seconds
    bench.profiles[name] = whereitgoes.profile_while(service.url, seconds, work, report.RESULTS_DIR / name)
    bench.say(f"profiled over {seconds} s ({case}): bench/results/{name}")


def workers_phase(bench: Bench) -> None:
    """The fleet's merge in `flamewatch all` with its pool of querier workers off and at its default."""
    for variant in VARIANTS:
        for label, extra in (("default", []), ("--query.workers 0", ["--query.workers", "0"])):
            with phase(bench, f"{variant}: flamewatch all {label}"), running_all(bench, variant, extra) as node:
                warm_query(bench, variant, "fleet", node, f"fleet warm, all {label}",
                           functools.partial(serving_pids, node))


def serving_pids(node: allinone.AllInOne) -> list[int]:
    """`flamewatch all` and the processes it started to answer queries: its children but the compactor
    (its Postgres is not one: pg_ctl runs it apart)."""
    kids = [pid for pid in children(node.process.pid)
            if b"compactor" not in Path(f"/proc/{pid}/cmdline").read_bytes()]
    return [node.process.pid, *kids]


# ------------------------------------------------------------------------------------ querier replicas


class DataDirStack(Stack):
    """Queriers on a data directory of `flamewatch all`'s layout: its objects, its Postgres by DSN."""

    def __init__(self, work: Path, dsn: str, data_dir: Path) -> None:
        super().__init__(work, dsn, None)
        self.data_dir = data_dir

    def storage_flags(self) -> list[str]:
        return ["--data-dir", str(self.data_dir), "--storage.postgres-dsn", self.dsn, "--log.level", "warning"]


@contextlib.contextmanager
def data_dir_stack(bench: Bench, variant: str, s3: bool = False) -> Iterator[Stack]:
    """The variant's embedded Postgres, started here, and a stack of processes on it that read the blocks
    from the data directory, or (`s3`) from a MinIO they are first uploaded to."""
    data_dir = bench.dataset.data_dir(variant)
    db = open_database(PostgresConfig(data_dir=str(data_dir / "postgres")))
    try:
        with tempfile.TemporaryDirectory(prefix="flamewatch-long-range-") as work, contextlib.ExitStack() as more:
            if s3:
                minio = more.enter_context(MinioServer(Path(work) / "minio"))
                minio.create_bucket(BUCKET)
                start = time.monotonic()
                count, nbytes = upload(minio, data_dir / "objects")
                bench.say(f"{variant}: {count:,} objects ({nbytes / 2**20:.0f} MiB) uploaded to MinIO in "
                          f"{time.monotonic() - start:.0f} s")
                stack: Stack = Stack(Path(work), db.dsn, minio)
            else:
                stack = DataDirStack(Path(work), db.dsn, data_dir)
            try:
                yield stack
            finally:
                stack.stop_all()
    finally:
        db.close()


def replicas_phase(bench: Bench, variant: str, peers: bool) -> None:
    """The fleet's merge on one querier, then (with `peers`) on one that splits it with a second; and
    `LOAD_CLIENTS` clients asking it at once of one querier, then of two at their defaults in turn."""
    cache = ["--cache-bytes", str(REPLICA_CACHE_BYTES)]
    with phase(bench, f"{variant}: querier replicas"), data_dir_stack(bench, variant) as stack:
        one = stack.querier(*cache)
        warm_query(bench, variant, "fleet", one, "fleet warm, 1 replica")
        warm_query(bench, variant, "fleet hour", one, "fleet first hour, 1 replica")
        load_rounds(bench, variant, [one], "fleet load, 1 replica")
        one.stop()
        if peers:
            peer = stack.querier(*cache)
            # split whatever the default threshold says: this measures the split itself
            queried = stack.querier(*cache, "--query.peers", peer.grpc, "--query.split-min-profiles", "1")
            warm_query(bench, variant, "fleet", queried, "fleet warm, 2 replicas", lambda: [queried.pid, peer.pid])
            queried.stop()
            peer.stop()
        load_rounds(bench, variant, [stack.querier(*cache), stack.querier(*cache)], "fleet load, 2 replicas")


# ------------------------------------------------------------------------------------ S3


def upload(minio: MinioServer, objects: Path) -> tuple[int, int]:
    """Every object of a filesystem store's directory into the bucket under the same key; their count and
    bytes."""
    client = minio.client()
    files = [f for f in objects.rglob("*") if f.is_file() and not f.name.startswith(".tmp-")]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda f: client.fput_object(BUCKET, f.relative_to(objects).as_posix(), str(f)), files))
    return len(files), sum(f.stat().st_size for f in files)


def s3_reads(service) -> tuple[float, float]:
    """The S3 requests (objects and ranges read) and bytes the service has read so far (its /metrics)."""
    found = {}
    for family in text_string_to_metric_families(httpx.get(f"{service.url}/metrics", timeout=30).text):
        for sample in family.samples:
            if sample.labels.get("backend") == "s3":
                found[sample.name] = sample.value
    return (found.get("flamewatch_objstore_read_ranges_total", 0.0),
            found.get("flamewatch_objstore_read_bytes_total", 0.0))


def s3_phase(bench: Bench, variant: str) -> None:
    """Measure 7: the month and the fleet from S3, cold on fresh queriers, then warm on one."""
    with phase(bench, f"{variant}: S3"), data_dir_stack(bench, variant, s3=True) as stack:
        for name in ("month", "fleet"):
            times, requests, nbytes = [], [], []
            for _ in range(bench.args.runs):
                drop_page_cache(stack.minio.data_dir)
                querier = stack.querier()
                before = s3_reads(querier)
                seconds, _ = timed(querier, bench.query(name))
                after = s3_reads(querier)
                querier.stop()
                times.append(seconds)
                requests.append(after[0] - before[0])
                nbytes.append(after[1] - before[1])
            bench.record(variant, f"{name} cold, S3", times)
            bench.detail(f"{variant}: {name} cold, S3: {statistics.median(requests):,.0f} requests and "
                         f"{statistics.median(nbytes) / 2**20:.0f} MiB read from S3 per query (medians)")
        querier = stack.querier()
        for name in ("month", "fleet"):
            timed(querier, bench.query(name))  # fills the cache
            before = s3_reads(querier)
            warm_query(bench, variant, name, querier, f"{name} warm, S3")  # `runs` + 2 queries
            after = s3_reads(querier)
            queries = bench.args.runs + 2
            bench.detail(f"{variant}: {name} warm, S3: {(after[0] - before[0]) / queries:,.0f} requests and "
                         f"{(after[1] - before[1]) / queries / 2**20:.1f} MiB read from S3 per query once one "
                         "filled the cache")


def s3_rows(bench: Bench) -> list[Row]:
    shape, rows = bench.dataset.shape, []
    for name, days, what in (("month", shape.month_days, "of one service"),
                             ("fleet", shape.fleet_days, "of the fleet")):
        trees, raw = both(bench, f"{name} cold, S3", f"{name} warm, S3")
        rows.append(Row(f"{days}-day flamegraph {what} on one flamewatch querier at its defaults reading S3 (MinIO "
                        "on this machine), cold (a fresh querier, MinIO's files out of the page cache) / warm", "-",
                        trees, None, note=raw))
    return rows


LOAD_CLIENTS, LOAD_QUERIES = 4, 2  # clients asking at once in the load figure, and how many times each


def load_rounds(bench: Bench, variant: str, services: list, label: str) -> None:
    """`label`: the runs of a round of `LOAD_CLIENTS` clients asking the fleet's merge `LOAD_QUERIES` times
    each, all at once, client i's k-th query to `services[(i + k) % len(services)]`, as a Service spreads
    connections over replicas: the time until every answer is in."""
    query = bench.query("fleet")
    for service in services:
        timed(service, query)  # fills its cache

    def client(i: int) -> None:
        for k in range(LOAD_QUERIES):
            timed(services[(i + k) % len(services)], query)

    def round_s() -> float:
        with ThreadPoolExecutor(LOAD_CLIENTS) as pool:
            started = time.perf_counter()
            list(pool.map(client, range(LOAD_CLIENTS)))
            return time.perf_counter() - started
    bench.record(variant, label, [round_s() for _ in range(bench.args.runs)])


def has_flag(command: str, flag: str) -> bool:
    """Whether `flamewatch <command>` takes `flag` (this checkout may predate it)."""
    done = subprocess.run([str(allinone.FLAMEWATCH), command, "--help"], capture_output=True, text=True)
    return flag in done.stdout


# ------------------------------------------------------------------------------------ the table


def median_ms(bench: Bench, variant: str, name: str) -> float:
    return stats(bench.times[variant][name])[0]


def both(bench: Bench, *names: str) -> list[str]:
    """Per path, the figures of the runs named (joined by " / "), or that it was not measured."""
    return [" / ".join(spread(bench.times[v][n]) if n in bench.times[v] else "not measured" for n in names)
            for v in VARIANTS]


def query_rows(bench: Bench) -> list[Row]:
    shape, counts = bench.dataset.shape, bench.counts
    w, c = median_ms(bench, "trees", "month warm"), median_ms(bench, "trees", "month cold")
    rows = [row(f"{shape.month_days}-day flamegraph of one service ({counts['month warm']:,} profiles), warm / cold",
                [Goal("≤ 1 s", 1000), Goal("≤ 3 s", 3000)], [w, c], *both(bench, "month warm", "month cold"),
                {"warm_ms": w, "cold_ms": c})]
    w = median_ms(bench, "trees", "fleet warm")
    rows.append(row(f"{shape.fleet_days}-day flamegraph of a {shape.services * shape.instances}-series fleet "
                    f"({counts['fleet warm']:,} profiles), warm, flamewatch all at its defaults",
                    [Goal("≤ 3 s", 3000)], [w], *both(bench, "fleet warm"), {"warm_ms": w}))
    trees, raw = both(bench, "fleet cold")
    rows.append(Row("the same fleet flamegraph, cold: the first query of a fresh flamewatch all, its files out of "
                    "the page cache", "-", trees, None, note=raw))
    w = median_ms(bench, "trees", "totals warm")
    rows.append(row(f"{shape.month_days}-day time series of totals (query_range, default step), warm",
                    [Goal("≤ 300 ms", 300)], [w], *both(bench, "totals warm"), {"warm_ms": w}))
    return rows


def storage_rows(bench: Bench) -> list[Row]:
    rows = []
    for prefix, what in (("month", "the month's day blocks"), ("svc", "the fleet's hour blocks")):
        trees, raw = (bench.dataset.object_bytes(v, prefix) for v in VARIANTS)
        extra = 100 * (trees / raw - 1)
        rows.append(row(f"extra storage for pre-merged trees, {what}", [Goal("≤ 20 %", 20)], [extra],
                        f"{extra:+.1f} % ({trees / 2**20:.1f} MiB)", f"{raw / 2**20:.1f} MiB",
                        {"trees_bytes": trees, "raw_bytes": raw}))
    return rows


def replica_rows(bench: Bench, peers: bool) -> list[Row]:
    days, one = bench.dataset.shape.fleet_days, "fleet warm, 1 replica"
    w = median_ms(bench, "trees", one)
    rows = [row(f"{days}-day flamegraph of the fleet, warm, one flamewatch querier with --cache-bytes 1 GiB",
                [Goal("≤ 3 s", 3000)], [w], *both(bench, one), {"warm_ms": w})]
    measure = f"same {days}-day fleet merge, 2 querier replicas vs 1 (time with 2 / with 1)"
    if not peers:
        return [*rows, Row(measure, "≤ 0.6x", "not measured: --query.peers missing", None, note="not measured")]
    ratios = {v: median_ms(bench, v, "fleet warm, 2 replicas") / median_ms(bench, v, one) for v in VARIANTS}
    figures = [f"{ratios[v]:.2f}x (2: {spread(bench.times[v]['fleet warm, 2 replicas'])})" for v in VARIANTS]
    return [*rows, row(measure, [Goal("≤ 0.6x", 0.6)], [ratios["trees"]], *figures, {"ratio": ratios["trees"]}),
            split_bound_row(bench)]


def split_bound_row(bench: Bench) -> Row:
    """What no split can take off: the fleet's first hour asks for nearly the same tree as its week (the same
    stacks, over an hour of the merge), so its time is the query's part that is not the merge (HTTP, the series
    lookup, rendering and sending the tree, the client reading it). Split in two with nothing added, the week
    takes that part plus half of the rest: the least ratio two replicas can give this query."""
    figures = []
    for v in VARIANTS:
        whole, fixed = median_ms(bench, v, "fleet warm, 1 replica"), median_ms(bench, v, "fleet first hour, 1 replica")
        bound = (fixed + (whole - fixed) / 2) / whole
        figures.append(f"{bound:.2f}x (the first hour: {spread(bench.times[v]['fleet first hour, 1 replica'])} "
                       f"of the week's {fmt_ms(whole)})")
    return Row(f"the least a 2-way split can give the {bench.dataset.shape.fleet_days}-day fleet merge: its part "
               "that is not the merge (timed as the fleet's first hour, nearly the same tree) plus half of the "
               "rest, over the whole", "-", figures[0], None, note=figures[1])


def load_row(bench: Bench) -> Row:
    one, two = "fleet load, 1 replica", "fleet load, 2 replicas"
    ratios = {v: median_ms(bench, v, two) / median_ms(bench, v, one) for v in VARIANTS}
    figures = [f"{ratios[v]:.2f}x ({spread(bench.times[v][two])} against {spread(bench.times[v][one])})"
               for v in VARIANTS]
    return Row(f"{LOAD_CLIENTS} clients asking the {bench.dataset.shape.fleet_days}-day fleet merge {LOAD_QUERIES} "
               "times each at once: time to every answer with 2 querier replicas at their defaults (each client's "
               "queries to each in turn) vs 1", "-", figures[0], None, note=figures[1])


def workers_row(bench: Bench, workers: bool) -> Row | None:
    if not workers:
        return None
    figures = [f"{spread(bench.times[v]['fleet warm, all --query.workers 0'])} with 0 workers, "
               f"{spread(bench.times[v]['fleet warm, all default'])} at the default" for v in VARIANTS]
    return Row("7-day fleet merge in flamewatch all, --query.workers 0 vs its default", "-", figures[0], None,
               note=figures[1])


def table(rows: list[Row]) -> str:
    lines = ["| measure | goal | pre-merged trees | raw profiles (blocks without trees) | met? |",
             "|---|---|---|---|---|"]
    for r in rows:
        met = "n/a" if r.met is None else ("yes" if r.met else "NO")
        lines.append(f"| {r.measure} | {r.goal} | {r.figure} | {r.note} | {met} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ running


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs of each figure (the median is given)")
    parser.add_argument("--profile-seconds", type=int, default=5, help="length of each self-profile of a warm query")
    shape = data.Shape()
    parser.add_argument("--month-days", type=int, default=shape.month_days, help="days of the one service")
    parser.add_argument("--fleet-days", type=int, default=shape.fleet_days, help="days of the fleet")
    parser.add_argument("--fleet-every", type=int, default=shape.fleet_every,
                        help="seconds between two CPU profiles of a fleet series")
    parser.add_argument("--phases", default=",".join(PHASES), type=phases,
                        help=f"which phases to run, comma-separated, of {','.join(PHASES)}: all (measures 1-3 on "
                             "flamewatch all, and where their time goes), replicas (5), workers (6), s3 (7); the "
                             "storage figures (4) are always given")
    return parser.parse_args()


PHASES = ("all", "replicas", "workers", "s3")


def phases(text: str) -> list[str]:
    chosen = {p.strip() for p in text.split(",") if p.strip()}
    if not chosen or chosen - set(PHASES):
        raise argparse.ArgumentTypeError(f"{text!r}: name phases of {', '.join(PHASES)}, comma-separated")
    return [p for p in PHASES if p in chosen]


def main() -> None:
    args = parse_args()
    report.stop_on_signals()
    env_start, stamp = report.environment(), report.stamp()
    print(f"long-range bench: {os.cpu_count()} cores, load average {env_start['load_average']}", flush=True)
    shape = dataclasses.replace(data.Shape(), month_days=args.month_days, fleet_days=args.fleet_days,
                                fleet_every=args.fleet_every)
    with tempfile.TemporaryDirectory() as logs:
        pool = load_or_capture(data.POOL, Path(logs))
    bench = Bench(args, data.ensure(shape, pool), stamp)
    allinone.become_subreaper()
    rows = []
    if "all" in args.phases:
        for variant in VARIANTS:
            all_phase(bench, variant)
        profile_phase(bench)
        rows += query_rows(bench)
    rows += storage_rows(bench)
    if "replicas" in args.phases:
        peers = has_flag("querier", "--query.peers")
        for variant in VARIANTS:
            replicas_phase(bench, variant, peers)
        rows += [*replica_rows(bench, peers), load_row(bench)]
    if "workers" in args.phases and has_flag("all", "--query.workers"):
        workers_phase(bench)
        rows += [r for r in [workers_row(bench, True)] if r is not None]
    if "s3" in args.phases:
        for variant in VARIANTS:
            s3_phase(bench, variant)
        rows += s3_rows(bench)
    write(bench, rows, {"start": env_start, "end": report.environment()})


def write(bench: Bench, rows: list[Row], env: dict) -> None:
    md = report.RESULTS_DIR / f"{bench.stamp}-long-range.md"
    tops = "".join(f"\n### {name}\n\n```\n{text.strip()}\n```\n" for name, text in bench.profiles.items())
    md.write_text(f"# Long ranges (issue 22), {bench.stamp}\n\n{preamble(bench, env)}\n\n{table(rows)}\n\n"
                  "## Details\n\n" + "\n".join(f"- {d}" for d in bench.details) + "\n"
                  + (f"\n## Where the time goes (pre-merged trees)\n{tops}" if tops else ""))
    md.with_suffix(".json").write_text(json.dumps({"settings": vars(bench.args), "environment": env,
                                                   "times_s": bench.times, "counts": bench.counts,
                                                   "rows": [dataclasses.asdict(r) for r in rows]}, indent=2) + "\n")
    print("\n" + table(rows) + f"\n\nwritten to {md.relative_to(ROOT)}", flush=True)


def preamble(bench: Bench, env: dict) -> str:
    ds, shape, summary = bench.dataset, bench.dataset.shape, bench.dataset.summary
    return (f"Commit {env['end']['commit']}, {env['end']['cores']} cores shared with other work, run under nice: "
            f"load average (1, 5, 15 min) {env['start']['load_average']} at the start, "
            f"{env['end']['load_average']} at the end (each phase's in the details). Each figure is the median "
            f"(min-max) of {bench.args.runs} runs.\n\n"
            f"Data (`.cache/long-range/{ds.path.name}`, generated in {summary['seconds']:.0f} s): one service, a CPU "
            f"profile every {shape.month_every} s for {shape.month_days} days ({summary['month_pprofs']:,} pprofs, "
            f"day blocks), and {shape.services * shape.instances} series, one every {shape.fleet_every} s for "
            f"{shape.fleet_days} days ({summary['fleet_pprofs']:,} pprofs, hour blocks); real Go CPU profiles. "
            "Raw profiles: the same blocks compacted without pre-merged trees (nothing turns trees off at query "
            "time). Queries 1-3 on `flamewatch all` at its defaults; querier replicas each with "
            f"`--cache-bytes {REPLICA_CACHE_BYTES}` (1 GiB).")


if __name__ == "__main__":
    main()
