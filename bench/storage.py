"""The storage benchmark of issue 8: ingest, compaction, storage and long-range queries, measured on
real parts and printed as a table of measure | goal | Flamewatch | met?. It reports; it asserts nothing.

    make bench          # the full corpus (about 20 minutes on 2 cores)
    make bench-quick    # the same steps on a small corpus (about 3 minutes)
    .venv/bin/python bench/storage.py --help

Steps (bench/README.md says what each figure means):
1. corpus: real Go CPU and allocs profiles captured from tests/targets/workload (kept in
   bench/corpus/), replayed at synthetic times as a fleet (services x instances, CPU and memory
   every 10 s, one hour) and as one service over days (CPU, the 7-day case);
2. load: pushed over gRPC into `flamewatch ingester` processes (compaction off) on Postgres and MinIO;
3. merge check before compaction; compaction by an ingester with --compaction.interval, timed until no
   flush block of the past is live; storage measured; merge check after compaction;
4. queries through `flamewatch querier`: warm (repeated) and cold (a fresh querier process each run);
5. ingest probes on a fresh ingester: server CPU per small Go CPU profile, acknowledgement latency,
   MB/s per core of 300 KB synthetic profiles.
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

import corpus  # noqa: E402
import mergecheck  # noqa: E402
import pushing  # noqa: E402
import report  # noqa: E402
import whereitgoes  # noqa: E402
from corpus import Fleet, Push  # noqa: E402
from profiles import make_profile, make_program  # noqa: E402
from querytiming import CPU, Query, flamegraph, fmt_ms, ms, once, stats, timed, warm  # noqa: E402
from report import Goal, Row, row  # noqa: E402
from stack import Service, Stack, cpu_seconds, peak_rss_bytes, running_stack  # noqa: E402

HOUR_NS = 3600 * 10**9
DAY_NS = 24 * HOUR_NS
MiB = 1 << 20

FULL = {"pool": 24, "services": 10, "instances": 10, "fleet_minutes": 60, "week_days": 7, "week_instances": 10,
        "week_every": 100, "probe_profiles": 1000, "large_profiles": 300, "runs": 5}
QUICK = {"pool": 12, "services": 4, "instances": 5, "fleet_minutes": 15, "week_days": 2, "week_instances": 4,
         "week_every": 600, "probe_profiles": 400, "large_profiles": 40, "runs": 5}


@dataclass
class Run(report.Progress):
    """What the steps share: the running stack, the corpus layout and what has been found so far."""

    stack: Stack
    args: argparse.Namespace
    pool: corpus.Pool
    fleet: Fleet
    week: Fleet
    index_before: int = 0  # Postgres bytes of the index tables before the load
    loaded: pushing.PushStats = field(default_factory=pushing.PushStats)
    stamp: str = ""
    rows: list[Row] = field(default_factory=list)
    profiles: dict[str, str] = field(default_factory=dict)


def main() -> None:
    args, began = parse_args(), time.monotonic()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stop)
    env_start, stamp = report.environment(), report.stamp()
    print(f"storage bench: {os.cpu_count()} cores, load average {env_start['load_average']}", flush=True)
    pool = corpus.load_or_capture(args.pool, Path("/tmp"))
    hour0 = (time.time_ns() // HOUR_NS - 2) * HOUR_NS  # the fleet's hour ended an hour ago: it gets compacted
    fleet = Fleet(args.services, args.instances, 10, hour0, args.fleet_minutes * 60)
    week = Fleet(1, args.week_instances, args.week_every, hour0 - args.week_days * DAY_NS, args.week_days * 86400,
                 prefix="week", kinds=("cpu",))
    with running_stack() as stack:
        run = Run(stack, args, pool, fleet, week, stamp=stamp, started=began)
        run.say(f"Postgres and MinIO up; fleet {fleet.services} services x {fleet.instances} instances x "
                f"{args.fleet_minutes} min ({fleet.count()} CPU + {fleet.count('allocs')} allocs pprofs), "
                f"{args.week_days}-day service ({week.count()} CPU pprofs)")
        steps(run)
    env_end = report.environment()
    run.rows.sort(key=_issue_order)
    print("\n" + report.table(run.rows) + "\n", flush=True)
    md, js = report.write(report.Results(stamp, run.rows, run.details, run.profiles, vars(args),
                                         {"start": env_start, "end": env_end}))
    print(f"load average at the end {env_end['load_average']}; written {md.relative_to(ROOT)} and "
          f"{js.relative_to(ROOT)}; {time.monotonic() - began:.0f} s in all", flush=True)


def _stop(signum: int, frame: object) -> None:
    """Ctrl-C or kill: unwind through the stack's context managers, which stop every process started.
    (Under asyncio.run a default SIGINT only cancels the pushers' task, which gRPC may not notice.)"""
    raise SystemExit(128 + signum)


ISSUE_ORDER = ("server CPU", "ingest", "acknowledgement", "flamegraph, 1 service x", "flamegraph, fleet",
               "flamegraph, 1 service x 7", "query_range", "storage", "Postgres", "querier peak", "correctness")


def _issue_order(r: Row) -> int:
    """The issue's table order (the week after the hour although both start alike), then the checks."""
    week = r.measure.startswith("flamegraph, 1 service x") and "days" in r.measure
    rank = ISSUE_ORDER.index("flamegraph, 1 service x 7") if week else next(
        i for i, prefix in enumerate(ISSUE_ORDER) if r.measure.startswith(prefix))
    return rank


def steps(run: Run) -> None:
    check_pushes, want = prepare_check(run)
    load(run, check_pushes)
    querier = run.stack.querier()
    merge_check(run, querier, want, "before compaction")
    compact(run)
    merge_check(run, querier, want, "after compaction")
    querier.stop()
    queries(run)
    probes(run)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the small corpus of `make bench-quick`")
    for name, default in FULL.items():
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=None,
                            help=f"(full {default}, quick {QUICK[name]})")
    parser.add_argument("--flush-interval", type=float, default=1.0, help="the ingester's --flush-interval (s)")
    parser.add_argument("--compaction-interval", type=float, default=5.0,
                        help="the compacting ingester's --compaction.interval (s)")
    parser.add_argument("--compaction-timeout", type=float, default=900.0, help="give up waiting after (s)")
    parser.add_argument("--ingesters", type=int, default=2, help="ingester processes the corpus is loaded through")
    parser.add_argument("--load-clients", type=int, default=32, help="concurrent pushers while loading the corpus")
    parser.add_argument("--load-batch", type=int, default=40, help="pprofs per push while loading the corpus")
    parser.add_argument("--profile-seconds", type=int, default=5, help="querier self-profile per case (s)")
    parser.add_argument("--ack-flush-interval", type=float, default=0.2,
                        help="the shorter --flush-interval acknowledgement latency is also measured at (s)")
    parser.add_argument("--clients", type=int, default=16, help="concurrent pushers")
    args = parser.parse_args()
    for name, default in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    return args


def prepare_check(run: Run) -> tuple[list[Push], mergecheck.Expected]:
    check = mergecheck.check_fleet(run.fleet.start_ns, instances=2, minutes=2)
    work = run.stack.work / "check"
    work.mkdir()
    pushes, want = mergecheck.expected(check, run.pool, work)
    run.say(f"merge check: {len(pushes)} pprofs summed with go tool pprof -raw")
    return pushes, want


def load(run: Run, extra: list[Push]) -> None:
    """The corpus through `--ingesters` ingesters with compaction off; storage before compaction."""
    stack = run.stack
    ingesters = [stack.ingester(run.args.flush_interval, 0) for _ in range(run.args.ingesters)]
    run.index_before = stack.index_bytes()  # migrations applied, nothing stored
    cpu0, own0 = sum(cpu_seconds(i.pid) for i in ingesters), time.process_time()
    pushes = itertools.chain(extra, run.fleet.pushes(run.pool), run.week.pushes(run.pool))
    total = len(extra) + run.fleet.count() + run.fleet.count("allocs") + run.week.count()
    clients, batch = run.args.load_clients, run.args.load_batch
    run.say(f"load: {total} pprofs through {len(ingesters)} ingesters, {clients} clients x {batch} per push")
    stats = pushing.push([i.grpc for i in ingesters], pushes, clients, batch, progress=f"load/{total}")
    cpu, own = sum(cpu_seconds(i.pid) for i in ingesters) - cpu0, time.process_time() - own0
    for ingester in ingesters:
        ingester.stop()
    run.loaded = stats
    objects, count = stack.object_bytes()
    growth = stack.index_bytes() - run.index_before
    run.detail(f"load: {stats.pprofs} pprofs ({stats.typed} typed profiles, {stats.gzipped / MiB:.1f} MiB gzipped, "
               f"{stats.decompressed / MiB:.1f} MiB decompressed) in {stats.seconds:.0f} s, ingesters' CPU "
               f"{cpu:.0f} s ({1e3 * cpu / stats.pprofs:.1f} ms per pprof), the pushing client's {own:.0f} s")
    run.detail(f"before compaction: {count} objects, {objects / MiB:.1f} MiB "
               f"({100 * objects / stats.gzipped:.1f} % of the gzipped input); Postgres grew "
               f"{growth / MiB:.1f} MiB ({growth / stats.typed:.0f} bytes per typed profile)")


def merge_check(run: Run, querier: Service, want: mergecheck.Expected, when: str) -> None:
    ok, notes = mergecheck.compare(querier.url, want)
    run.detail(f"merge check {when}: {'OK' if ok else 'MISMATCH'} ({'; '.join(notes)})")
    run.rows.append(Row(f"correctness: merge of a range = sum of its profiles (go tool pprof), {when}",
                        "equal", "OK" if ok else "MISMATCH", ok))


def compact(run: Run) -> None:
    """An ingester that compacts, until no flush block of the corpus (all in the past) is live and no
    hour block of a day that ended an hour ago (the compactor's rules: hours that ended 5 minutes ago,
    days that ended an hour ago)."""
    stack = run.stack
    days_before = (time.time_ns() - HOUR_NS) // DAY_NS * DAY_NS
    started = time.monotonic()
    deadline = started + run.args.compaction_timeout
    ingester = stack.ingester(run.args.flush_interval, run.args.compaction_interval)
    cpu0 = cpu_seconds(ingester.pid)
    hours = _wait_compacted(run, "hours", lambda: stack.live_blocks(run.fleet.end_ns), 0, deadline)
    hours_s = time.monotonic() - started
    days = _wait_compacted(run, "days", lambda: stack.live_blocks(days_before), 1, deadline)
    seconds, cpu = time.monotonic() - started, cpu_seconds(ingester.pid) - cpu0
    ingester.stop()
    done = hours and days
    run.detail(f"compaction {'done' if done else 'NOT done'} in {seconds:.0f} s (flush blocks into hour blocks "
               f"{hours_s:.0f} s, then hour blocks of ended days into day blocks), compacting ingester's CPU "
               f"{cpu:.0f} s; live blocks per level {stack.live_blocks(run.fleet.end_ns)}")
    objects, count, retired = stack.live_object_bytes()
    growth = stack.index_bytes() - run.index_before
    gz, typed = run.loaded.gzipped, run.loaded.typed
    tables = stack.index_table_bytes()
    run.detail("Postgres after compaction, per table (indexes and TOAST included): "
               + ", ".join(f"{name} {size / MiB:.2f} MiB ({size / typed:.1f} bytes per typed profile)"
                           for name, size in sorted(tables.items())))
    share = (objects + growth) / gz
    run.detail(f"after compaction: {count} live objects, {objects / MiB:.1f} MiB ({100 * objects / gz:.1f} %), "
               f"{retired / MiB:.1f} MiB of retired objects awaiting deletion (not counted); Postgres grew "
               f"{growth / MiB:.1f} MiB ({100 * growth / gz:.1f} %)")
    note = "" if done else "compaction did not finish"
    run.rows.append(row("storage after compaction, object store + Postgres growth", [Goal("≤ 5 %", 5.0)],
                        [100 * share], f"{100 * share:.1f} % ({objects / MiB:.1f} + {growth / MiB:.1f} MiB of "
                        f"{gz / MiB:.1f} MiB)", note, {"objects": objects, "postgres": growth, "gzipped": gz}))
    run.rows.append(row("Postgres growth per stored profile", [Goal("≤ 50 bytes", 50.0)], [growth / typed],
                        f"{growth / typed:.0f} bytes ({typed} typed profiles)", note,
                        {"bytes": growth, "profiles": typed}))


def _wait_compacted(run: Run, what: str, levels, level: int, deadline: float) -> bool:
    """Wait until `levels()` shows no live block of `level`; False at the deadline."""
    last = 0.0
    while (found := levels()).get(level):
        if time.monotonic() > deadline:
            run.detail(f"compaction of {what}: gave up after --compaction-timeout, live blocks per level {found}")
            return False
        if time.monotonic() - last > 15:
            last = time.monotonic()
            run.say(f"compaction of {what}: live blocks per level {found}")
        time.sleep(1)
    return True


def queries(run: Run) -> None:
    fleet, week, runs = run.fleet, run.week, run.args.runs
    minutes, n_days = run.args.fleet_minutes, run.args.week_days
    one = flamegraph(f"1 service x {minutes} min", '{service_name="svc-0"}', fleet.start_ns, fleet.end_ns)
    many = flamegraph("fleet", '{service_name=~"svc-.*"}', fleet.start_ns, fleet.end_ns)
    days = flamegraph(f"1 service x {n_days} days", '{service_name="week-0"}', week.start_ns, week.end_ns)
    day_start = max(week.start_ns, week.end_ns - DAY_NS)
    span = Query("query_range", "/api/v1/query_range", {
        "query": f'{CPU}{{service_name="week-0"}}', "from": str(day_start), "until": str(week.end_ns),
        "step": "60s", "group_by": "instance"})

    querier = run.stack.querier()
    cold_fleet, merged = timed(querier, many)
    fleet_times, _ = warm(querier, many, runs)
    hwm = peak_rss_bytes(querier.pid)
    run.detail(f"fleet: {merged} profiles, first query (cold) {fmt_ms(1e3 * cold_fleet)}, warm {ms(fleet_times)}; "
               f"querier VmHWM {hwm / MiB:.0f} MiB")
    one_warm, one_n = warm(querier, one, runs)
    days_warm, days_n = warm(querier, days, runs)
    range_warm, range_n = warm(querier, span, runs)
    _where_it_goes(run, querier, "fleet-warm", lambda: timed(querier, many))
    _where_it_goes(run, querier, "days-warm", lambda: timed(querier, days))
    querier.stop()
    one_cold = _cold(run, one, runs)
    days_cold = _cold(run, days, runs)
    for case, query, times in (("hour-cold", one, one_cold), ("days-cold", days, days_cold)):
        querier = run.stack.querier()
        _where_it_goes(run, querier, case, once(lambda q=querier, x=query: timed(q, x)), seconds=int(max(times)) + 2)
        querier.stop()
    run.detail(f"1 service x {minutes} min: {one_n} profiles; {n_days} days: {days_n} profiles; "
               f"query_range: {range_n} series")
    _query_rows(run, (one_warm, one_cold, one_n), (fleet_times, merged), (days_warm, days_cold, days_n),
                (range_warm, range_n), hwm)


def _where_it_goes(run: Run, querier: Service, case: str, work, seconds: int | None = None) -> None:
    name = f"{run.stamp}-querier-{case}.pb.gz"
    seconds = seconds or run.args.profile_seconds
    run.profiles[name] = whereitgoes.profile_while(querier.url, seconds, work, report.RESULTS_DIR / name)
    run.say(f"querier profiled over {seconds} s ({case}): bench/results/{name}")


def _cold(run: Run, query: Query, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        querier = run.stack.querier()
        try:
            times.append(timed(querier, query)[0])
        finally:
            querier.stop()
    run.say(f"{query.name} cold: {ms(times)}")
    return times


def _query_rows(run: Run, one, fleet, days, span, hwm: int) -> None:
    w, c = stats(one[0])[0], stats(one[1])[0]
    run.rows.append(row(f"flamegraph, 1 service x {run.args.fleet_minutes} min ({one[2]} profiles), warm / cold",
                        [Goal("≤ 50 ms", 50), Goal("≤ 200 ms", 200)], [w, c],
                        f"{ms(one[0])} / {ms(one[1])}", named={"warm_ms": w, "cold_ms": c}))
    w = stats(fleet[0])[0]
    run.rows.append(row(f"flamegraph, fleet of {run.fleet.services * run.fleet.instances} instances x "
                        f"{run.args.fleet_minutes} min ({fleet[1]} profiles), warm", [Goal("≤ 1 s", 1000)], [w],
                        ms(fleet[0]), named={"warm_ms": w}))
    w, c = stats(days[0])[0], stats(days[1])[0]
    run.rows.append(row(f"flamegraph, 1 service x {run.args.week_days} days ({days[2]} profiles), warm / cold",
                        [Goal("≤ 1 s", 1000), Goal("≤ 3 s", 3000)], [w, c], f"{ms(days[0])} / {ms(days[1])}",
                        named={"warm_ms": w, "cold_ms": c}))
    w = stats(span[0])[0]
    run.rows.append(row(f"query_range 24 h, 60 s step, grouped by instance ({span[1]} series)",
                        [Goal("≤ 100 ms", 100)], [w], ms(span[0]), named={"warm_ms": w}))
    run.rows.append(row("querier peak memory during the fleet query", [Goal("≤ 1 GiB", 1024)], [hwm / MiB],
                        f"{hwm / MiB:.0f} MiB", named={"vmhwm_bytes": hwm}))


def probes(run: Run) -> None:
    """Ingest figures on a fresh ingester (compaction off), one pprof per push from `--clients` clients."""
    stack, args = run.stack, run.args
    ingester = stack.ingester(args.flush_interval, 0)
    instances = 50
    small = Fleet(1, instances, 10, run.fleet.end_ns, 10 * max(1, args.probe_profiles // instances),
                  prefix="probe", kinds=("cpu",))
    backends0 = stack.backend_cpu_seconds()
    stats, cpu = _probe(ingester, small.pushes(run.pool), args.clients)
    backends1 = stack.backend_cpu_seconds()
    per = 1e3 * cpu / stats.pprofs
    if backends0 and backends1:
        pg, s3 = (1e3 * (b - a) / stats.pprofs for a, b in zip(backends0, backends1))
        run.detail(f"small Go CPU profiles, besides the ingester's {per:.1f} ms: Postgres {pg:.1f} ms and MinIO "
                   f"{s3:.1f} ms of CPU per profile")
    p50, p95 = stats.latencyms(0.5), stats.latencyms(0.95)
    run.detail(f"small Go CPU profiles: {stats.pprofs} pushes of {stats.gzipped / stats.pprofs / 1024:.1f} KiB "
               f"gzipped on average in {stats.seconds:.1f} s, ingester CPU {cpu:.1f} s; acknowledgement p50 "
               f"{p50:.0f} ms, p95 {p95:.0f} ms (--flush-interval {args.flush_interval})")
    short_p50, short_p95 = _short_flush_latency(run, small)
    large, large_cpu = _probe(ingester, _large_pushes(run, args.large_profiles), args.clients)
    mb_per_core = large.decompressed / 1e6 / large_cpu
    run.detail(f"300 KB synthetic profiles: {large.pprofs} pushes, {large.decompressed / 1e6:.0f} MB decompressed "
               f"in {large.seconds:.1f} s ({large.decompressed / 1e6 / large.seconds:.1f} MB/s wall), ingester CPU "
               f"{large_cpu:.1f} s ({1e3 * large_cpu / large.pprofs:.1f} ms per profile)")
    ingester.stop()
    run.rows[:0] = [
        row("server CPU per profile, small real Go CPU profiles", [Goal("≤ 3 ms", 3)], [per], f"{per:.1f} ms",
            named={"ms": per}),
        row("ingest, durable, decompressed pprof per core (300 KB profiles)", [Goal("≥ 25 MB/s", 25, False)],
            [mb_per_core], f"{mb_per_core:.1f} MB/s", named={"mb_per_s": mb_per_core}),
        row("acknowledgement latency p50 (per push, 16 clients)", [Goal("≤ 0.5 s", 500)], [short_p50],
            f"{fmt_ms(short_p50)} (p95 {fmt_ms(short_p95)}) at --flush-interval {args.ack_flush_interval}; "
            f"{fmt_ms(p50)} (p95 {fmt_ms(p95)}) at {args.flush_interval}", "",
            {"p50_ms": short_p50, "p95_ms": short_p95, "default_p50_ms": p50, "default_p95_ms": p95}),
    ]


def _short_flush_latency(run: Run, small: Fleet) -> tuple[float, float]:
    """Acknowledgement latency on an ingester flushing every `--ack-flush-interval`, later times than `small`."""
    ingester = run.stack.ingester(run.args.ack_flush_interval, 0)
    later = Fleet(1, small.instances, 10, small.end_ns, max(10, small.seconds // 4), prefix="probe", kinds=("cpu",))
    stats, cpu = _probe(ingester, later.pushes(run.pool), run.args.clients)
    ingester.stop()
    p50, p95 = stats.latencyms(0.5), stats.latencyms(0.95)
    run.detail(f"at --flush-interval {run.args.ack_flush_interval}: {stats.pprofs} pushes, acknowledgement p50 "
               f"{p50:.0f} ms, p95 {p95:.0f} ms, ingester CPU {1e3 * cpu / stats.pprofs:.1f} ms per profile")
    return p50, p95


def _probe(ingester: Service, pushes, clients: int) -> tuple[pushing.PushStats, float]:
    cpu0 = cpu_seconds(ingester.pid)
    stats = pushing.push([ingester.grpc], pushes, clients, batch=1)
    return stats, cpu_seconds(ingester.pid) - cpu0


def _large_pushes(run: Run, count: int):
    program = make_program(n_functions=10_000)
    distinct = [make_profile(program, seed, n_samples=8000) for seed in range(min(count, 20))]  # ~300 KB gzipped
    start = run.fleet.end_ns + HOUR_NS
    for i in range(count):
        served = distinct[i % len(distinct)]
        yield Push({"service_name": "probe-large", "instance": f"large-{i % 8}", "__name__": "process_cpu"},
                   corpus.at_time(served, start + i * 10**9), served)


if __name__ == "__main__":
    main()
