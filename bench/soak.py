"""Memory of `flamewatch all` over a long run of pushes and queries: does it level off under its caches?

    .venv/bin/python bench/soak.py [--minutes 30] [--every 5] [--services 8] [--instances 4]

Starts `flamewatch all` on a new data directory (embedded Postgres, filesystem objects, its default
caches) and, for `--minutes`, keeps it busy the way a small fleet and its users would:

- pushes: real Go profiles (the corpus of `corpus.py`), a CPU and an allocs pprof per instance every
  `--push-every` seconds over `/ingest`, from `--services` x `--instances` instances in two tenants,
  dated now; every `--churn-minutes` a quarter of the instances get new names (pods replaced), so
  series keep being created as in a real cluster;
- queries: every `--query-every` seconds one of a flamegraph of one service over the last 5 minutes,
  a flamegraph of every service over the last 15 minutes (`format=top` every other time), a time series
  over the last 30 minutes grouped by instance, the label values of `instance`, and the series list;
- and what `flamewatch all` does by itself: scraping its own /debug/pprof, flushing, compacting.

Every `--every` seconds it reads the resident memory (RSS) of the Flamewatch process with where it is
(`flamewatch_memory_bytes`: malloc in use and free, pyarrow's pool) and, separately, of the embedded
Postgres (postmaster and backends, RSS summed and PSS, which counts shared buffers once). It prints a
row per minute and whether memory levelled off: the last third of the run against the middle third
(the first third is warm-up: caches filling), by the median reading (the level memory returns to) and
by the largest (compaction's passing peaks). Growth in the last third beyond `--tolerance` (5 %) is
reported as growth. Writes `bench/results/<UTC time>-soak.md` and `.json` with the load average.

`--env NAME=VALUE` (repeatable) is passed to the Flamewatch process, e.g. to compare allocator settings.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import allinone
import httpx
from corpus import at_time, load_or_capture
from demo_cost import pss_bytes, rss_bytes
from report import RESULTS_DIR, environment, stamp

MiB = 1 << 20
TENANTS = ("soak-a", "soak-b")
KIND_NAMES = {"cpu": "process_cpu", "allocs": "memory"}
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"


@dataclass
class Reading:
    at: float  # seconds since the load began
    flamewatch_rss: int
    postgres_rss: int
    postgres_pss: int
    threads: int
    cache_bytes: int  # the querier's block cache, as it counts itself (/metrics)
    paths: int  # function paths the querier has numbered
    malloc_in_use: int = 0  # glibc's malloc: bytes in use (flamewatch_memory_bytes)
    malloc_free: int = 0  # glibc's malloc: freed but kept
    arrow_pool: int = 0  # pyarrow's pool

    @property
    def beyond_cache(self) -> int:
        return self.flamewatch_rss - self.cache_bytes


@dataclass
class Counts:
    pushes: int = 0
    push_errors: int = 0
    queries: int = 0
    query_errors: int = 0
    query_seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the first few, for the report

    def failed(self, what: str) -> None:
        if len(self.errors) < 5:
            self.errors.append(what)


MEMORY_GAUGES = {field: f'flamewatch_memory_bytes{{holder="{field}"}}'
                 for field in ("malloc_in_use", "malloc_free", "arrow_pool")}


def gauges(node: allinone.AllInOne) -> dict[str, float]:
    """The querier's cache gauges from /metrics (0 when it does not answer)."""
    try:
        text = httpx.get(f"{node.url}/metrics", timeout=10).text
    except httpx.HTTPError:
        return {}
    wanted = ("flamewatch_querier_block_cache_bytes", "flamewatch_querier_paths", *MEMORY_GAUGES.values())
    return {name: float(value) for name, _, value in (line.partition(" ") for line in text.splitlines())
            if name in wanted}


def read(node: allinone.AllInOne, began: float) -> Reading:
    pg_rss = pg_pss = 0
    for pid in allinone.postgres_pids(node):
        try:
            pg_rss += rss_bytes(pid)
            pg_pss += pss_bytes(pid)
        except (OSError, ValueError):  # a backend that exited between listing and reading
            continue
    threads = len(list(Path(f"/proc/{node.process.pid}/task").iterdir()))
    found = gauges(node)
    return Reading(time.monotonic() - began, rss_bytes(node.process.pid), pg_rss, pg_pss, threads,
                   int(found.get("flamewatch_querier_block_cache_bytes", 0)),
                   int(found.get("flamewatch_querier_paths", 0)),
                   **{field: int(found.get(name, 0)) for field, name in MEMORY_GAUGES.items()})


# ------------------------------------------------------------------------------------- load


def instance_name(service: int, instance: int, generation: int) -> str:
    return f"svc-{service}-{instance}-g{generation}:6060"


async def pusher(client: httpx.AsyncClient, node: allinone.AllInOne, pool, args, service: int, instance: int,
                 counts: Counts, stop: asyncio.Event) -> None:
    """One instance: a CPU and an allocs pprof every `push_every` seconds, renamed every churn period."""
    tenant = TENANTS[service % len(TENANTS)]
    rng = random.Random(service * 1000 + instance)
    await asyncio.sleep(rng.uniform(0, args.push_every))  # spread the instances over the period
    began = time.monotonic()
    while not stop.is_set():
        # a quarter of the instances are replaced at each churn period, each in its own turn
        generation = int((time.monotonic() - began) / 60 / args.churn_minutes + (instance % 4) / 4)
        labels = {"service_name": f"svc-{service}", "instance": instance_name(service, instance, generation)}
        for kind, name in KIND_NAMES.items():
            served = rng.choice(pool.profiles[kind])
            try:
                answer = await client.post(f"{node.url}/ingest", params={**labels, "__name__": name},
                                           content=at_time(served, time.time_ns()),
                                           headers={"X-Scope-OrgID": tenant})
                answer.raise_for_status()
                counts.pushes += 1
            except httpx.HTTPError as exc:
                counts.push_errors += 1
                counts.failed(f"push: {exc!r}")
        with contextlib.suppress(TimeoutError):  # the period passed without a stop
            await asyncio.wait_for(stop.wait(), args.push_every)


def queries(args) -> list[tuple[str, dict[str, str]]]:
    service = f"svc-{random.randrange(args.services)}"
    return [
        ("/api/v1/query", {"query": f'{CPU}{{service_name="{service}"}}', "from": "now-5m", "until": "now"}),
        ("/api/v1/query", {"query": f'{CPU}{{service_name=~"svc-.*"}}', "from": "now-15m", "until": "now",
                           "format": random.choice(["flamegraph", "top"])}),
        ("/api/v1/query_range", {"query": f'{CPU}{{service_name="{service}"}}', "from": "now-30m",
                                 "until": "now", "step": "60s", "group_by": "instance"}),
        ("/api/v1/label/instance/values", {"from": "now-30m", "until": "now"}),
        ("/api/v1/series", {"match[]": f'{{service_name="{service}"}}', "from": "now-30m", "until": "now"}),
    ]


async def querier(client: httpx.AsyncClient, node: allinone.AllInOne, args, counts: Counts,
                  stop: asyncio.Event) -> None:
    turn = 0
    while not stop.is_set():
        path, params = queries(args)[turn % 5]
        tenant = TENANTS[turn // 5 % len(TENANTS)]
        turn += 1
        started = time.monotonic()
        try:
            answer = await client.get(f"{node.url}{path}", params=params, headers={"X-Scope-OrgID": tenant})
            answer.raise_for_status()
            counts.queries += 1
            counts.query_seconds.append(time.monotonic() - started)
        except httpx.HTTPError as exc:
            counts.query_errors += 1
            counts.failed(f"query {path}: {exc!r}")
        with contextlib.suppress(TimeoutError):  # the period passed without a stop
            await asyncio.wait_for(stop.wait(), args.query_every)


async def load(node: allinone.AllInOne, pool, args, counts: Counts, seconds: float) -> None:
    stop = asyncio.Event()
    async with httpx.AsyncClient(timeout=120) as client:
        tasks = [asyncio.create_task(pusher(client, node, pool, args, s, i, counts, stop))
                 for s in range(args.services) for i in range(args.instances)]
        tasks.append(asyncio.create_task(querier(client, node, args, counts, stop)))
        end = time.monotonic() + seconds
        while time.monotonic() < end and node.process.poll() is None:  # a process that died ends the run
            await asyncio.sleep(1.0)
        if node.process.poll() is not None:
            print(f"flamewatch all exited with {node.process.returncode} after "
                  f"{(seconds - (end - time.monotonic())) / 60:.1f} min: the run stops here", flush=True)
        stop.set()
        await asyncio.gather(*tasks)


def save_heap_profile(node: allinone.AllInOne, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        answer = httpx.get(f"{node.url}/debug/pprof/heap", timeout=60)
        answer.raise_for_status()
    except httpx.HTTPError as exc:
        print(f"  no heap profile: {exc}", flush=True)
        return
    path.write_bytes(answer.content)


def sample(node: allinone.AllInOne, every: float, began: float, readings: list[Reading],
           stop: threading.Event, heap_profiles: Path | None) -> None:
    while not stop.is_set():
        if node.process.poll() is not None:
            return
        readings.append(read(node, began))
        if len(readings) > 1 and int(readings[-1].at // 60) > int(readings[-2].at // 60):  # a minute ended
            r = readings[-1]
            print(f"  {r.at / 60:4.1f} min: flamewatch RSS {r.flamewatch_rss / MiB:.0f} MiB (block cache "
                  f"{r.cache_bytes / MiB:.0f} MiB, {r.paths} paths), Postgres PSS "
                  f"{r.postgres_pss / MiB:.0f} MiB, {r.threads} threads", flush=True)
            if heap_profiles:
                save_heap_profile(node, heap_profiles / f"heap-{int(r.at // 60):03d}min.pb.gz")
        stop.wait(every)


# ------------------------------------------------------------------------------------- report


def per_minute(readings: list[Reading]) -> str:
    """The largest reading of each minute, and the middle one (median) of the RSS, which compaction's
    passing peaks leave out."""
    lines = ["| minute | flamewatch RSS MiB, max | RSS, median | block cache MiB | RSS beyond the cache MiB | "
             "malloc in use | malloc free | arrow pool | paths | Postgres RSS MiB | Postgres PSS MiB | threads |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    minutes = int(readings[-1].at // 60) + 1
    for m in range(minutes):
        inside = [r for r in readings if m * 60 <= r.at < (m + 1) * 60]
        if inside:
            lines.append(f"| {m + 1} | {max(r.flamewatch_rss for r in inside) / MiB:.0f} | "
                         f"{statistics.median(r.flamewatch_rss for r in inside) / MiB:.0f} | "
                         f"{max(r.cache_bytes for r in inside) / MiB:.0f} | "
                         f"{max(r.beyond_cache for r in inside) / MiB:.0f} | "
                         f"{max(r.malloc_in_use for r in inside) / MiB:.0f} | "
                         f"{max(r.malloc_free for r in inside) / MiB:.0f} | "
                         f"{max(r.arrow_pool for r in inside) / MiB:.0f} | {max(r.paths for r in inside)} | "
                         f"{max(r.postgres_rss for r in inside) / MiB:.0f} | "
                         f"{max(r.postgres_pss for r in inside) / MiB:.0f} | {max(r.threads for r in inside)} |")
    return "\n".join(lines)


def levelling(readings: list[Reading], attr: str, tolerance: float, of=max) -> tuple[float, float, bool]:
    """(`of` the middle third, `of` the last third, levelled off?), in MiB: `of` is max (the peaks) or
    statistics.median (the level memory returns to between compaction's peaks)."""
    third = readings[-1].at / 3
    middle = of([getattr(r, attr) for r in readings if third <= r.at < 2 * third]) / MiB
    last = of([getattr(r, attr) for r in readings if r.at >= 2 * third]) / MiB
    return middle, last, last <= middle * (1 + tolerance)


def verdicts(readings: list[Reading], tolerance: float) -> str:
    lines = ["| process | measure | middle third | last third | levelled off? |", "|---|---|---|---|---|"]
    for name, attr in (("flamewatch (RSS)", "flamewatch_rss"), ("flamewatch beyond its block cache (RSS - cache)",
                                                                "beyond_cache"),
                       ("flamewatch malloc in use", "malloc_in_use"), ("Postgres (PSS)", "postgres_pss")):
        for measure, of in (("median", statistics.median), ("max", max)):
            middle, last, ok = levelling(readings, attr, tolerance, of)
            lines.append(f"| {name} | {measure} | {middle:.0f} MiB | {last:.0f} MiB | "
                         f"{'yes' if ok else f'NO: +{last - middle:.0f} MiB ({100 * (last / middle - 1):.0f} %)'} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="how long the load runs")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between memory readings")
    parser.add_argument("--services", type=int, default=8)
    parser.add_argument("--instances", type=int, default=4, help="instances per service")
    parser.add_argument("--push-every", type=float, default=10.0, help="seconds between an instance's pushes")
    parser.add_argument("--query-every", type=float, default=2.0, help="seconds between queries")
    parser.add_argument("--churn-minutes", type=float, default=5.0, help="an instance's lifetime before renaming")
    parser.add_argument("--tolerance", type=float, default=0.05, help="growth in the last third still called level")
    parser.add_argument("--corpus", type=int, default=12, help="captured profiles of each kind to replay")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the Flamewatch process")
    parser.add_argument("--flag", action="append", default=[], help="a flag for `flamewatch all` (repeatable)")
    parser.add_argument("--heap-profiles", type=Path, default=None, help="save /debug/pprof/heap here each "
                        "minute, to compare with `go tool pprof -top -diff_base` (give --flag=--self-profiling.heap)")
    args = parser.parse_args()
    name, env_start = stamp(), environment()
    allinone.become_subreaper()
    env = dict(item.split("=", 1) for item in args.env)
    readings: list[Reading] = []
    counts = Counts()
    with tempfile.TemporaryDirectory(prefix="flamewatch-soak-") as tmp:
        pool = load_or_capture(args.corpus, Path(tmp))
        data = Path(tmp) / "data"
        data.mkdir()
        node, ready = allinone.start(data, extra=args.flag, env=allinone.environment(env))
        print(f"flamewatch all ready after {ready:.1f} s; load for {args.minutes:g} min", flush=True)
        stop = threading.Event()
        began = time.monotonic()
        sampler = threading.Thread(target=sample, args=(node, args.every, began, readings, stop, args.heap_profiles))
        sampler.start()
        try:
            asyncio.run(load(node, pool, args, counts, 60 * args.minutes))
        finally:
            stop.set()
            sampler.join()
            exited = node.process.poll()
            allinone.stop(node)
        if exited is not None:  # before the end of the load: what it said last
            log = (Path(tmp) / "flamewatch.log").read_text(errors="replace").splitlines()
            counts.errors[:0] = [f"flamewatch exited with {exited} during the run; its log ends: {log[-3:]}"]
    env_end = environment()
    query_p50 = statistics.median(counts.query_seconds) if counts.query_seconds else float("nan")
    text = (f"# Soak benchmark, {name}\n\nCommit {env_end['commit']}, {env_end['cores']} cores, shared with other "
            f"work: load average (1, 5, 15 min) {env_start['load_average']} at the start, "
            f"{env_end['load_average']} at the end. Settings: `{json.dumps(vars(args), default=str)}`\n\n"
            f"{counts.pushes} pushes ({counts.push_errors} failed), {counts.queries} queries "
            f"({counts.query_errors} failed, median {query_p50:.2f} s).\n\n{verdicts(readings, args.tolerance)}\n\n"
            f"{per_minute(readings)}\n"
            + ("\nFirst errors:\n\n" + "\n".join(f"- `{e}`" for e in counts.errors) + "\n" if counts.errors else ""))
    print("\n" + text)
    md = RESULTS_DIR / f"{name}-soak.md"
    md.write_text(text)
    md.with_suffix(".json").write_text(json.dumps(
        {"settings": json.loads(json.dumps(vars(args), default=str)),
         "environment": {"start": env_start, "end": env_end},
         "counts": {k: v for k, v in asdict(counts).items() if k != "query_seconds"},
         "readings": [asdict(r) for r in readings]}, indent=2) + "\n")
    print(f"written to {md}")


if __name__ == "__main__":
    main()
