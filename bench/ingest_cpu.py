"""CPU per small profile on the ingest path (issue 21): `prepare` alone, `write_block` of a flush alone,
and a real `flamewatch ingester` under 16 pushing clients. Prints medians of `--runs` runs with the load
average; asserts nothing.

    nice .venv/bin/python bench/ingest_cpu.py                 # both
    nice .venv/bin/python bench/ingest_cpu.py --prepare-only  # seconds, no Postgres or MinIO
    nice .venv/bin/python bench/ingest_cpu.py --profile prepare.pstats

The profiles are the captured Go CPU profiles of `corpus.py` (1-11 KB gzipped), each pushed with its
time rewritten as `storage.py`'s probe does. CPU time, not wall time: the machine is shared, so wall
time says more about the neighbours than about us. The server figure is the ingester's user + system
time (/proc/<pid>/stat) over the pushes divided by them; Postgres's and MinIO's are printed beside it.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

import corpus  # noqa: E402
from corpus import Fleet  # noqa: E402

from flamewatch.ingester.config import IngestLimits  # noqa: E402
from flamewatch.ingester.prepare import prepare  # noqa: E402
from flamewatch.storage.blockwrite import write_block  # noqa: E402

HOUR_NS = 3600 * 10**9


def main() -> None:
    args = parse_args()
    print(f"ingest CPU bench: {os.cpu_count()} cores, load average {_load()}", flush=True)
    pool = corpus.load_or_capture(args.pool, Path("/tmp"))
    sizes = pool.sizes("cpu")
    print(f"{len(sizes)} Go CPU profiles, {sizes.min() / 1024:.1f}-{sizes.max() / 1024:.1f} KiB gzipped "
          f"(mean {sizes.mean() / 1024:.1f})", flush=True)
    prepare_runs(pool, args)
    write_runs(pool, args)
    if not args.prepare_only:
        server_runs(pool, args)
    print(f"load average at the end {_load()}", flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", type=int, default=12, help="captured profiles of each kind (corpus.py)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--prepare-profiles", type=int, default=2000, help="prepare calls per run")
    parser.add_argument("--server-profiles", type=int, default=500, help="pushes per server run")
    parser.add_argument("--flush-pprofs", type=int, default=16, help="pprofs per flush block written alone")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--flush-interval", type=float, default=1.0)
    parser.add_argument("--prepare-only", action="store_true", help="no servers: prepare and write_block alone")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of one prepare run to FILE")
    return parser.parse_args()


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _payloads(pool: corpus.Pool, count: int, start_ns: int) -> list[tuple[dict[str, str], bytes]]:
    fleet = Fleet(1, 50, 10, start_ns, 10 * max(1, count // 50), prefix="bench", kinds=("cpu",))
    return [(p.labels, p.payload) for p in fleet.pushes(pool)][:count]


def prepare_runs(pool: corpus.Pool, args: argparse.Namespace) -> None:
    """`prepare` in this process: decompress, decode, validate, split, labels; what a push pays before batching."""
    limits, now = IngestLimits(), time.time_ns()
    payloads = _payloads(pool, args.prepare_profiles, now - HOUR_NS)
    for labels, raw in payloads[:50]:  # warm-up: imports, caches
        prepare(labels, raw, limits, now)
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [prepare(labels, raw, limits, now) for labels, raw in payloads])
        profiler.dump_stats(args.profile)
        print(f"cProfile of one run written to {args.profile}", flush=True)
    per = []
    for run in range(args.runs):
        began = time.process_time()
        for labels, raw in payloads:
            prepare(labels, raw, limits, now)
        per.append(1e3 * (time.process_time() - began) / len(payloads))
        print(f"  prepare run {run + 1}: {per[-1]:.3f} ms CPU per profile (load {_load()})", flush=True)
    print(f"prepare alone: median {statistics.median(per):.3f} ms CPU per profile over {len(payloads)} profiles, "
          f"{args.runs} runs (min {min(per):.3f}, max {max(per):.3f}); load average {_load()}", flush=True)


def write_runs(pool: corpus.Pool, args: argparse.Namespace) -> None:
    """`write_block` in this process for flushes of `--flush-pprofs` prepared pprofs, ordered as
    `BlockWriter` orders them: the flush block's symbols, stack tree and Parquet, without Postgres or MinIO."""
    limits, now = IngestLimits(), time.time_ns()
    pprofs = [prepare(labels, raw, limits, now).entries
              for labels, raw in _payloads(pool, args.prepare_profiles, now - HOUR_NS)]
    n = args.flush_pprofs
    flushes = [sorted((e for entries in pprofs[i:i + n] for e in entries), key=lambda e: (e.fingerprint, e.time_ns))
               for i in range(0, len(pprofs) - n + 1, n)]
    per, sizes = [], []
    for _ in range(args.runs):
        began = time.process_time()
        sizes = [len(write_block(flush)) for flush in flushes]
        per.append(1e3 * (time.process_time() - began) / len(flushes))
    print(f"write_block alone: median {statistics.median(per):.2f} ms CPU per flush of {n} pprofs "
          f"({statistics.median(per) / n:.3f} per pprof) over {len(flushes)} flushes, {args.runs} runs (min "
          f"{min(per):.2f}, max {max(per):.2f}); blocks {sum(sizes) / len(sizes) / 1024:.1f} KiB; load average "
          f"{_load()}", flush=True)


def server_runs(pool: corpus.Pool, args: argparse.Namespace) -> None:
    """A fresh `flamewatch ingester` (compaction off) on Postgres and MinIO; one pprof per push from
    `--clients` clients; each run pushes later times than the last so nothing is a retry."""
    import pushing
    from stack import cpu_seconds, running_stack

    with running_stack() as stack:
        ingester = stack.ingester(args.flush_interval, 0)
        start = time.time_ns() - (args.runs + 2) * HOUR_NS  # a run's hour each, all in the past
        fleet = lambda run: Fleet(1, 50, 10, start + (run + 1) * HOUR_NS,  # noqa: E731
                                  10 * max(1, args.server_profiles // 50), prefix="bench", kinds=("cpu",))
        pushing.push([ingester.grpc], list(fleet(-1).pushes(pool))[:100], args.clients)  # warm-up
        ingester_ms, pg_ms, s3_ms = [], [], []
        for run in range(args.runs):
            pushes = list(fleet(run).pushes(pool))[:args.server_profiles]
            cpu0, backends0 = cpu_seconds(ingester.pid), stack.backend_cpu_seconds()
            stats = pushing.push([ingester.grpc], pushes, args.clients)
            time.sleep(1.5 * args.flush_interval)  # a late flush is still this run's
            cpu1, backends1 = cpu_seconds(ingester.pid), stack.backend_cpu_seconds()
            ingester_ms.append(1e3 * (cpu1 - cpu0) / stats.pprofs)
            if backends0 and backends1:
                pg, s3 = (1e3 * (b - a) / stats.pprofs for a, b in zip(backends0, backends1, strict=True))
                pg_ms.append(pg)
                s3_ms.append(s3)
            print(f"  server run {run + 1}: {stats.pprofs} pushes in {stats.seconds:.1f} s, ingester "
                  f"{ingester_ms[-1]:.2f} ms CPU per profile, Postgres {pg_ms[-1] if pg_ms else float('nan'):.2f}, "
                  f"MinIO {s3_ms[-1] if s3_ms else float('nan'):.2f}; ack p50 {stats.latency_ms(0.5):.0f} ms "
                  f"(load {_load()})", flush=True)
        ingester.stop()
    median = statistics.median
    print(f"server, {args.clients} clients: ingester median {median(ingester_ms):.2f} ms CPU per profile "
          f"(min {min(ingester_ms):.2f}, max {max(ingester_ms):.2f})"
          + (f", Postgres {median(pg_ms):.2f} ms, MinIO {median(s3_ms):.2f} ms" if pg_ms else "")
          + f"; load average {_load()}", flush=True)


if __name__ == "__main__":
    main()
