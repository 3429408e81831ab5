"""What compaction costs `flamewatch all`, and what it costs the queries it answers meanwhile (issue 21).

    nice .venv/bin/python bench/compaction_cost.py [--services 3] [--instances 4] [--runs 5]

Real parts: a Postgres from the `pgserver` wheel (`tests/infra/postgres.py`, or
`FLAMEWATCH_TEST_POSTGRES_DSN`) and the filesystem object store `flamewatch all` uses by default. Steps:

1. **Load**: a fresh `flamewatch all` (compaction off, scraping nothing) gets two ended hours of real Go
   profiles (the corpus of `corpus.py`; `--services` x `--instances`, a CPU and an allocs pprof per
   instance every `--every` s) over gRPC, one pprof per push from 16 clients: the *query hour* (three
   hours ago) and the *compaction hour* (two hours ago). The CPU time of the Flamewatch process tree
   (`/proc`, user + system) and of Postgres is read around the pushes of each hour.
2. **Compaction CPU**: the query hour alone is compacted (its hour is due, the compaction hour not yet)
   by `compact_tenant` in a process of its own, whose CPU time and peak memory are its own rusage; the
   share is that CPU against the ingest CPU of the same hour's profiles. Then, on a copy, everything
   else those profiles will cost: the compaction hour's job and, as of the day's end, the day job that
   merges both hour blocks; against the ingest CPU of both hours.
3. **Cold query with and without a compaction round**, `--runs` times each, in turn: a copy of the
   loaded state (a database made from it as a template, the objects hard-linked), a fresh
   `flamewatch all` on it (nothing cached), and a flamegraph of one service over the query hour. With
   compaction on (`--compaction.interval 1`), the query is sent once the round holds the tenant's
   compaction lock (`pg_locks`) and has run for the run's `--into-round` seconds (a list, taken in turn,
   so the queries fall in each phase of the round: fetching, merging, writing), and whether the round
   still held the lock when the answer came is recorded; with it off, at the same time after start. Peak resident memory
   (`VmHWM`) of each Flamewatch process is read once the round has ended.
4. **Late profiles**: on another copy, `--late-rounds` rounds each get one late CPU profile for the
   ended (compacted) query hour and compact it; what each round writes and retires is recorded.

CPU time, not wall time, is the figure to trust on a shared machine; the load average is written beside
the figures. Output: a table on stdout and `bench/results/<UTC time>-compaction.md` (and `.json`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]

import httpx  # noqa: E402
import psycopg  # noqa: E402
from corpus import NAMES, Fleet, at_time, load_or_capture  # noqa: E402
from infra.ports import free_port  # noqa: E402
from infra.postgres import server, with_database  # noqa: E402
from psycopg import sql  # noqa: E402
from pushing import push  # noqa: E402
from report import RESULTS_DIR, environment, stamp  # noqa: E402
from stack import Service, cpu_seconds, peak_rss_bytes, tree_cpu_seconds  # noqa: E402

FLAMEWATCH = ROOT / ".venv" / "bin" / "flamewatch"
HOUR_NS = 3600 * 10**9
MiB = 1 << 20
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"


# ------------------------------------------------------------------------------ processes and Postgres


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it (the compactor `flamewatch all` may start)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        found.append(parent)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{parent}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return found


def process_cpu(pid: int) -> float:
    """CPU seconds of a Flamewatch process and its live children (Postgres is not one of them: it runs
    as its own server)."""
    total = 0.0
    for p in descendants(pid):
        with contextlib.suppress(OSError, ValueError):
            total += cpu_seconds(p)
    return total


def peaks(pid: int) -> dict[str, int]:
    """VmHWM of each process of the tree, by its command (`all`, `compactor`)."""
    out = {}
    for p in descendants(pid):
        with contextlib.suppress(OSError, RuntimeError):
            words = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
            role = next((w.decode() for w in words if w in (b"all", b"compactor")), str(p))
            out[role] = peak_rss_bytes(p)
    return out


def postmaster_cpu(dsn: str) -> float:
    """CPU seconds of the Postgres server: its postmaster, the backends it has reaped and the live ones."""
    with psycopg.connect(dsn) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return tree_cpu_seconds(postmaster)


def admin(dsn: str, statement: sql.Composable) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statement)


def compaction_lock_held(dsn: str) -> bool:
    """Whether some session holds a tenant's compaction lock (`storage.compaction.tenant_lock`)."""
    from flamewatch.storage.postgres import advisory_key

    with psycopg.connect(dsn) as conn:
        tenants = [t for (t,) in conn.execute("SELECT DISTINCT tenant FROM blocks")]
        keys = [advisory_key(f"compactor:{t}") & 0xFFFFFFFFFFFFFFFF for t in tenants]
        rows = conn.execute("SELECT classid::bigint, objid::bigint FROM pg_locks WHERE locktype = 'advisory' "
                            "AND granted AND database = (SELECT oid FROM pg_database WHERE datname = "
                            "current_database())").fetchall()
    return any((c << 32 | o) in keys for c, o in rows)


def live_levels(dsn: str) -> dict[int, int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT level, count(*) FROM blocks WHERE state = 'live' GROUP BY 1").fetchall()
    return {int(level): int(n) for level, n in rows}


def start_all(work: Path, dsn: str, data: Path, compaction_interval: float, log: Path) -> Service:
    config = work / "scrape.yml"
    config.write_text("scrape_configs: []\n")
    http, grpc = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with log.open("ab") as out:
        process = subprocess.Popen([str(FLAMEWATCH), "all", "--data-dir", str(data), "--storage.postgres-dsn", dsn,
                                    "--config.file", str(config), "--http-address", http, "--grpc-address", grpc,
                                    "--compaction.interval", str(compaction_interval), "--log.level", "info"],
                                   stdout=out, stderr=subprocess.STDOUT, env=env)
    node = Service("all", process, http, grpc, log)
    deadline = time.monotonic() + 120
    with httpx.Client(timeout=1) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SystemExit(f"flamewatch all exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if client.get(f"http://{http}/readyz").status_code == 200:
                    return node
            time.sleep(0.02)
    node.stop()
    raise SystemExit("flamewatch all was not ready after 120 s")


# ------------------------------------------------------------------------------ steps


@dataclass
class Ingest:
    pprofs: int
    typed: int
    flamewatch_cpu_s: float
    postgres_cpu_s: float
    seconds: float


def load_hour(node: Service, dsn: str, fleet: Fleet, pool, clients: int) -> Ingest:
    cpu0, pg0 = process_cpu(node.process.pid), postmaster_cpu(dsn)
    stats = push([node.grpc], fleet.pushes(pool), concurrency=clients, batch=1, progress=fleet.prefix)
    time.sleep(1.5)  # the last flush
    return Ingest(stats.pprofs, stats.typed, process_cpu(node.process.pid) - cpu0, postmaster_cpu(dsn) - pg0,
                  stats.seconds)


@dataclass
class Compaction:
    cpu_s: float
    postgres_cpu_s: float
    peak_rss: int
    seconds: float
    jobs: list[dict]


def compact_in_own_process(dsn: str, objects: Path, now_ns: int) -> Compaction:
    """`compact_tenant` of every tenant as of `now_ns`, in a child process (this script's `--compact`): its
    CPU time from after its imports to the end of the jobs, and its peak memory."""
    pg0 = postmaster_cpu(dsn)
    out = subprocess.run([sys.executable, __file__, "--compact", dsn, str(objects), str(now_ns)], check=True,
                         capture_output=True, text=True)
    child = json.loads(out.stdout.splitlines()[-1])
    return Compaction(child["cpu_s"], postmaster_cpu(dsn) - pg0, child["peak_rss"], child["seconds"], child["jobs"])


def compact_main(dsn: str, objects: str, now_ns: int) -> None:
    from flamewatch.storage.compaction import compact_tenant, tenants_with_blocks
    from flamewatch.storage.objstore import FilesystemConfig, open_object_store
    from flamewatch.storage.postgres import PostgresConfig, open_database

    db, store = open_database(PostgresConfig(dsn=dsn)), open_object_store(FilesystemConfig(objects))
    jobs = []
    cpu0, began = time.process_time(), time.monotonic()  # after the imports: what compaction itself costs
    for tenant in tenants_with_blocks(db):
        jobs += [{"level": j.level, "inputs": j.inputs, "input_bytes": j.input_bytes, "profiles": j.profiles,
                  "output_bytes": sum(r.bytes for r in j.outputs), "seconds": j.seconds}
                 for j in compact_tenant(db, store, tenant, now_ns)]
    cpu, seconds = time.process_time() - cpu0, time.monotonic() - began
    db.close()
    print(json.dumps({"cpu_s": cpu, "seconds": seconds, "jobs": jobs,
                      "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


@contextlib.contextmanager
def copy_of(admin_dsn: str, template: str, data: Path, work: Path, name: str):
    """A database made from `template` and a data directory whose objects are hard links of `data`'s."""
    admin(admin_dsn, sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
    copy = work / name
    subprocess.run(["cp", "-al", str(data), str(copy)], check=True)
    try:
        yield with_database(admin_dsn, name), copy
    finally:
        admin(admin_dsn, sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        shutil.rmtree(copy, ignore_errors=True)


@dataclass
class QueryRun:
    mode: str  # "off" or "round"
    into_round: float
    seconds: float
    overlapped: bool  # the round held its lock from before the query until its answer
    peaks: dict[str, int]
    round_s: float = 0.0  # from start to the compaction hour's last flush block gone


def cold_query(node: Service, query_hour: Fleet) -> float:
    params = {"query": f'{CPU}{{service_name="{query_hour.prefix}-0"}}', "from": str(query_hour.start_ns // 10**6),
              "until": str(query_hour.end_ns // 10**6), "format": "flamegraph"}
    began = time.perf_counter()
    answer = httpx.get(f"http://{node.http}/api/v1/query", params=params, timeout=300)
    answer.raise_for_status()
    return time.perf_counter() - began


def query_run(args, admin_dsn: str, work: Path, mode: str, k: int, query_hour: Fleet) -> QueryRun:
    into = args.into_round[k % len(args.into_round)]
    with copy_of(admin_dsn, "loaded", work / "data", work, f"run_{mode}_{k}") as (dsn, data):
        began = time.monotonic()
        node = start_all(work, dsn, data, 1.0 if mode == "round" else 0, work / f"all-{mode}-{k}.log")
        try:
            if mode == "round":
                deadline = time.monotonic() + 60
                while not compaction_lock_held(dsn):
                    if time.monotonic() > deadline:
                        raise SystemExit("no compaction round started within 60 s")
                    time.sleep(0.02)
                time.sleep(into)
                seconds = cold_query(node, query_hour)
                overlapped = compaction_lock_held(dsn)
                while live_levels(dsn).get(0) or compaction_lock_held(dsn):
                    time.sleep(0.1)
                return QueryRun(mode, into, seconds, overlapped, peaks(node.process.pid), time.monotonic() - began)
            time.sleep(1.0 + into)
            return QueryRun(mode, into, cold_query(node, query_hour), False, peaks(node.process.pid))
        finally:
            node.stop()


@dataclass
class LateRound:
    written_bytes: int
    retired_blocks: int
    retired_bytes: int
    cpu_s: float


def late_rounds(args, admin_dsn: str, work: Path, pool, query_hour: Fleet) -> list[LateRound]:
    """One late CPU profile for the ended query hour, then a compaction, `--late-rounds` times."""
    from flamewatch.ingester.config import IngestLimits
    from flamewatch.ingester.prepare import prepare
    from flamewatch.ingester.writer import BlockWriter
    from flamewatch.storage.compaction import compact_tenant, tenants_with_blocks
    from flamewatch.storage.objstore import FilesystemConfig, open_object_store
    from flamewatch.storage.postgres import PostgresConfig, open_database

    out = []
    with copy_of(admin_dsn, "loaded", work / "data", work, "late") as (dsn, data):
        db, store = open_database(PostgresConfig(dsn=dsn)), open_object_store(FilesystemConfig(str(data / "objects")))
        tenant = tenants_with_blocks(db)[0]
        now = query_hour.end_ns + 10 * 60 * 10**9  # the compaction hour is not due yet: it stays out of these rounds
        for r in range(args.late_rounds):
            t = query_hour.start_ns + (r + 1) * 60 * 10**9 + 17
            labels = {"service_name": f"{query_hour.prefix}-0", "instance": f"late-{r}", "__name__": NAMES["cpu"]}
            BlockWriter(store, db).write(tenant, prepare(labels, at_time(pool.profiles["cpu"][r], t),
                                                         IngestLimits(), t).entries)
            live = {b.id: b.bytes for b in _live(db, tenant)}
            cpu0 = time.process_time()
            jobs = compact_tenant(db, store, tenant, now)
            cpu = time.process_time() - cpu0
            after = {b.id for b in _live(db, tenant)}
            gone = [size for id_, size in live.items() if id_ not in after]
            out.append(LateRound(sum(r.bytes for j in jobs for r in j.outputs), len(gone) - 1, sum(gone), cpu))
        db.close()
    return out  # retired counts leave out the late flush block itself


def _live(db, tenant):
    from flamewatch.storage.compaction import live_blocks

    return live_blocks(db, tenant)


# ------------------------------------------------------------------------------ report


@dataclass
class Results:
    settings: dict
    environment: dict = field(default_factory=dict)
    ingest: dict[str, Ingest] = field(default_factory=dict)
    compaction: Compaction | None = None
    compaction_rest: Compaction | None = None  # the compaction hour's job and the day job, on a copy
    queries: list[QueryRun] = field(default_factory=list)
    late: list[LateRound] = field(default_factory=list)


def med(values) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def spread(values) -> str:
    values = list(values)
    return f"{med(values):.3f} ({min(values):.3f}-{max(values):.3f})" if values else "n/a"


def table(r: Results) -> str:
    ingest, comp = r.ingest["query hour"], r.compaction
    off = [q for q in r.queries if q.mode == "off"]
    on = [q for q in r.queries if q.mode == "round"]
    ratio = med(q.seconds for q in on) / med(q.seconds for q in off)
    paired = [med(q.seconds for q in on if q.into_round == t) / med(q.seconds for q in off if q.into_round == t)
              for t in sorted({q.into_round for q in on})]
    share = comp.cpu_s / ingest.flamewatch_cpu_s
    share_pg = (comp.cpu_s + comp.postgres_cpu_s) / (ingest.flamewatch_cpu_s + ingest.postgres_cpu_s)
    rest, both = r.compaction_rest, sum(i.flamewatch_cpu_s for i in r.ingest.values())
    whole = (comp.cpu_s + rest.cpu_s) / both if rest else 0.0
    merged = rest and any(j["level"] == 2 for j in rest.jobs)
    day_job = "and the day job" if merged else "(the day stays in hour blocks: more profiles than one job takes)"

    def peak(runs, role):
        return med(q.peaks.get(role, 0) for q in runs) / MiB

    rows = [
        ("compaction CPU / ingest CPU, same profiles (Flamewatch processes)", "≤ 10 %",
         f"{100 * share:.1f} % ({comp.cpu_s:.1f} s / {ingest.flamewatch_cpu_s:.1f} s)", share <= 0.10),
        ("the same with Postgres's CPU on both sides", "", f"{100 * share_pg:.1f} % "
         f"({comp.cpu_s + comp.postgres_cpu_s:.1f} s / {ingest.flamewatch_cpu_s + ingest.postgres_cpu_s:.1f} s)", None),
        *([(f"both hours' jobs {day_job}, against both hours' ingest", "",
            f"{100 * whole:.1f} % ({comp.cpu_s + rest.cpu_s:.1f} s / {both:.1f} s)", None)] if rest else []),
        ("cold 1-hour query during a compaction round / without, median", "≤ 1.5×",
         f"{ratio:.2f}× ({spread(q.seconds for q in on)} s / {spread(q.seconds for q in off)} s; "
         f"{sum(q.overlapped for q in on)}/{len(on)} answered inside the round; the worst offset into the round "
         f"{max(paired):.2f}×)", ratio <= 1.5),
        ("peak RSS, query process (`all`), with a round / without, median", "",
         f"{peak(on, 'all'):.0f} / {peak(off, 'all'):.0f} MiB", None),
        ("peak RSS, compactor process", "", f"{peak(on, 'compactor'):.0f} MiB"
         if any("compactor" in q.peaks for q in on) else "(none: compaction runs in `all`)", None),
        ("peak RSS, compaction of the query hour alone (own process)", "", f"{comp.peak_rss / MiB:.0f} MiB", None),
        ("late profile for an ended hour: bytes written per round, median", "small side block",
         f"{med(x.written_bytes for x in r.late) / 1024:.0f} KiB; hour blocks retired per round "
         f"{med(x.retired_blocks for x in r.late):.0f} ({med(x.retired_bytes for x in r.late) / 1024:.0f} KiB); "
         f"CPU {med(x.cpu_s for x in r.late):.2f} s", None),
    ]
    lines = ["| measure | goal | Flamewatch | met? |", "|---|---|---|---|"]
    for measure, goal, figure, met in rows:
        lines.append(f"| {measure} | {goal} | {figure} | {'n/a' if met is None else 'yes' if met else 'NO'} |")
    return "\n".join(lines)


def details(r: Results) -> list[str]:
    out = []
    for name, i in r.ingest.items():
        out.append(f"ingest, {name}: {i.pprofs} pprofs ({i.typed} typed profiles) in {i.seconds:.1f} s; Flamewatch "
                   f"CPU {i.flamewatch_cpu_s:.1f} s ({1e3 * i.flamewatch_cpu_s / i.pprofs:.2f} ms per pprof), "
                   f"Postgres {i.postgres_cpu_s:.1f} s")
    c = r.compaction
    if c is None:
        return out
    typed = max(1, sum(j["profiles"] for j in c.jobs))
    out.append(f"compaction of the query hour: {c.cpu_s:.2f} s CPU ({1e3 * c.cpu_s / typed:.3f} ms per typed profile), "
               f"Postgres {c.postgres_cpu_s:.2f} s, {c.seconds:.1f} s wall; jobs {c.jobs}")
    if r.compaction_rest:
        c = r.compaction_rest
        out.append(f"the compaction hour's job and the day job: {c.cpu_s:.2f} s CPU, Postgres "
                   f"{c.postgres_cpu_s:.2f} s, peak {c.peak_rss / MiB:.0f} MiB; jobs {c.jobs}")
    for q in r.queries:
        out.append(f"query {q.mode} at {q.into_round:g} s: {q.seconds:.3f} s, inside the round: {q.overlapped}, peaks "
                   f"{ {k: round(v / MiB) for k, v in q.peaks.items()} } MiB" + (f", round done {q.round_s:.1f} s "
                                                                                 "after start" if q.round_s else ""))
    for k, x in enumerate(r.late):
        out.append(f"late round {k + 1}: wrote {x.written_bytes} B, retired {x.retired_blocks} block(s) besides the "
                   f"late flush block ({x.retired_bytes} B with it), CPU {x.cpu_s:.2f} s")
    return out


def write(r: Results, name: str) -> Path:
    env = r.environment
    md = RESULTS_DIR / f"{name}-compaction.md"
    md.write_text(f"# Compaction cost, {name}\n\nCommit {env['end']['commit']}, {env['end']['cores']} cores, shared "
                  f"with other work: load average (1, 5, 15 min) {env['start']['load_average']} at the start, "
                  f"{env['end']['load_average']} at the end.\n\nSettings: `{json.dumps(r.settings)}`\n\n{table(r)}\n\n"
                  "## Details\n\n" + "\n".join(f"- {d}" for d in details(r)) + "\n")
    md.with_suffix(".json").write_text(json.dumps(asdict(r), indent=2, default=str) + "\n")
    return md


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--compact":
        compact_main(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--services", type=int, default=3)
    parser.add_argument("--instances", type=int, default=4)
    parser.add_argument("--every", type=int, default=10, help="seconds between an instance's pprofs")
    parser.add_argument("--runs", type=int, default=5, help="cold queries of each mode")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--corpus", type=int, default=24)
    parser.add_argument("--into-round", type=lambda text: [float(x) for x in text.split(",")],
                        default=[0.5, 2.0, 4.0, 6.0, 8.0],
                        help="seconds into the round each run's query is sent, in turn (comma-separated)")
    parser.add_argument("--late-rounds", type=int, default=5)
    args = parser.parse_args()
    name = stamp()
    import flamewatch

    # the code measured: this checkout, or another tree put first on PYTHONPATH (a baseline)
    results = Results({**vars(args), "code": str(Path(flamewatch.__file__).resolve().parent)})
    results.environment["start"] = environment()
    print(f"load average {results.environment['start']['load_average']}", flush=True)
    now = time.time_ns()
    hour = now - now % HOUR_NS
    fleets = {"query hour": Fleet(args.services, args.instances, args.every, hour - 3 * HOUR_NS, 3600, "q"),
              "compaction hour": Fleet(args.services, args.instances, args.every, hour - 2 * HOUR_NS, 3600, "c")}
    with tempfile.TemporaryDirectory(prefix="flamewatch-compaction-") as tmp, \
            server(os.environ.get("FLAMEWATCH_TEST_POSTGRES_DSN")) as admin_dsn:
        work = Path(tmp)
        pool = load_or_capture(args.corpus, work)
        admin(admin_dsn, sql.SQL("DROP DATABASE IF EXISTS loaded WITH (FORCE)"))
        admin(admin_dsn, sql.SQL("CREATE DATABASE loaded"))
        dsn = with_database(admin_dsn, "loaded")
        try:
            node = start_all(work, dsn, work / "data", 0, work / "load.log")
            try:
                for label, fleet in fleets.items():
                    results.ingest[label] = load_hour(node, dsn, fleet, pool, args.clients)
                    print(f"  {details(results)[-1]}", flush=True)
            finally:
                node.stop()
            query_hour = fleets["query hour"]
            results.compaction = compact_in_own_process(dsn, work / "data" / "objects",
                                                        query_hour.end_ns + 6 * 60 * 10**9)
            print(f"  {details(results)[len(results.ingest)]}", flush=True)
            day_end = query_hour.start_ns - query_hour.start_ns % (24 * HOUR_NS) + 24 * HOUR_NS
            with copy_of(admin_dsn, "loaded", work / "data", work, "day") as (day_dsn, day_data):
                results.compaction_rest = compact_in_own_process(day_dsn, day_data / "objects", day_end + 2 * HOUR_NS)
            print(f"  {details(results)[len(results.ingest) + 1]}", flush=True)
            for k in range(args.runs):
                for mode in (("off", "round") if k % 2 == 0 else ("round", "off")):
                    results.queries.append(query_run(args, admin_dsn, work, mode, k, query_hour))
                    print(f"  {details(results)[-1]}", flush=True)
            results.late = late_rounds(args, admin_dsn, work, pool, query_hour)
        finally:
            admin(admin_dsn, sql.SQL("DROP DATABASE IF EXISTS loaded WITH (FORCE)"))
    results.environment["end"] = environment()
    print("\n" + table(results))
    print(f"\nwritten to {write(results, name)}")


if __name__ == "__main__":
    main()
