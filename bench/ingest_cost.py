"""Ingest cost against Grafana Pyroscope (issue 21's goals table), measured the way the issue's
Pyroscope figures were taken: one server process at its defaults, 16 clients, one pprof per push over
HTTP `POST /ingest`, as the Pyroscope SDKs push.

    nice .venv/bin/python bench/ingest_cost.py                     # both workloads, 5 runs each
    nice .venv/bin/python bench/ingest_cost.py --small 300 --large 100 --runs 2    # a quick look
    nice .venv/bin/python bench/ingest_cost.py --workloads small --flush-interval 0.5 0.4 0.3
    nice .venv/bin/python bench/ingest_cost.py --workloads small --rate 100        # open loop

Every run starts a fresh `flamewatch all` on a new data directory at its defaults (embedded Postgres,
filesystem objects, its self-scrape, its compactor child when there is something to compact;
`allinone.py`), waits until it has asked whether there is (7 s), pushes one workload, and stops it:

    small   `--small` (2,000) real Go CPU profiles of the corpus (`corpus.py`, `--pool` captured
            profiles), their times rewritten as the storage bench does, 100 series
    large   `--large` (1,000) synthetic profiles of ~300 KB gzipped (`profiles.py`, as the storage
            bench's probe), 8 series

Each push is `POST /ingest?name=<service>.cpu{instance=...}&from=..&until=..&format=pprof&spyName=gospy`
with the pprof as the `profile` part of a multipart form, as pyroscope-go sends it (`--form raw` sends
it as the body). Closed loop by default: `--clients` clients, each sending its next push once the last
is answered (the server answers once the flush holding it is durable). With `--rate R`, open loop: a
push is sent every 1/R s whatever the answers, as a fleet's pushes arrive.

Per run: server CPU per profile, the utime + stime of every server process (`server_usage.py`: the
`flamewatch all` process, its compactor child, the embedded Postgres's whole tree) from the first send
to the last answer, divided by the pushes answered; each part apart. The server's idle CPU per second
(its self-profiling and loops, over `--idle` s before the pushes) is read too, and the CPU per profile
above it: in open loop at a low rate the idle share is large. Peak memory: the sum of PSS over
those processes, sampled every `--sample-every` s, and the main process's VmHWM. Acknowledgement
latency p50 and p95, from a push's send to its answer. The load average at the start and end of the run.

The figure is CPU time, not wall time, so `nice` hardly changes it; the machine's load still moves it
(in the first runs a busier machine gave a lower figure, see the README), and is written beside every run. With several
`--flush-interval` values the variants take turns run by run, so each sees the same moves of the load.

The table gives the median of `--runs` with min and max, and the spread as ± % around the median; the
"spread" section says which part of the CPU figure moved between runs and what moved with it
(Postgres checkpoints, autovacuum, WAL, compaction, the server's garbage collections, the load).
Printed, and written to `bench/results/<UTC time>-ingest-cost.md` and `.json`. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import allinone
import corpus
import httpx
import numpy as np
import server_usage
from ingest_tables import MB, PYROSCOPE, markdown
from profiles import make_profile, make_program
from report import RESULTS_DIR, environment, stamp

BOUNDARY = "flamewatch-bench-boundary"
HOUR_NS = 3600 * 10**9
HOUR_END_MARGIN_S = 240.0  # longer than a run at the default sizes, from the pushes' making to its end
COMPACTOR_SETTLE_S = 30.0  # at most this long for the compactor to start and finish its imports
COMPACTOR_FIRST_LOOK_S = 7.0  # `flamewatch all` first asks whether to start one 5 s after its start




# ------------------------------------------------------------------------------------- the pushes


@dataclass(frozen=True)
class Push:
    query: dict[str, str]
    body: bytes
    content_type: str


def _push(service: str, instance: str, served: bytes, time_ns: int, form: str) -> Push:
    payload = corpus.at_time(served, time_ns)
    seconds = time_ns // 10**9
    query = {"name": f"{service}.cpu{{instance={instance}}}", "from": str(seconds), "until": str(seconds + 10),
             "format": "pprof", "spyName": "gospy", "sampleRate": "100"}
    if form == "raw":
        return Push(query, payload, "application/octet-stream")
    body = (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="profile"; filename="profile.pprof"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + payload + f"\r\n--{BOUNDARY}--\r\n".encode()
    return Push(query, body, f"multipart/form-data; boundary={BOUNDARY}")


def in_this_hour(steps: int) -> tuple[int, int]:
    """The first time and the spacing of `steps` pushes per series, every 10 s where the hour leaves room,
    closer where it does not, all in the past and in the hour now running, which does not end before the
    run does. Profiles of an ended hour are compacted at the compactor's next round: in a run whose
    profiles reached back into the last hour, 1,000 of 300 KB cost the compactor 10.7 ms of CPU per profile
    and 4.6 GB, a cost of the clock and not of ingest. Waits for a new hour when this one is about to end."""
    now = time.time_ns()
    left_s = (HOUR_NS - now % HOUR_NS) / 1e9
    if left_s < HOUR_END_MARGIN_S:
        print(f"  waiting {left_s + 10:.0f} s for the next hour: a run must not see its profiles' hour end", flush=True)
        time.sleep(left_s + 10)
        now = time.time_ns()
    end = now - 10**9
    every_ns = min(10 * 10**9, (end - (now - now % HOUR_NS)) // steps)
    return end - steps * every_ns, every_ns


def small_pushes(pool: corpus.Pool, count: int, form: str) -> list[Push]:
    """The corpus's CPU profiles as 4 services x 25 instances pushing every 10 s (`in_this_hour`), each
    instance cycling through the pool from its own offset (as `corpus.Fleet` replays it)."""
    services, instances = 4, 25
    n, cpu = services * instances, pool.profiles["cpu"]
    start, every_ns = in_this_hour(-(-count // n))
    pushes = []
    for i in range(count):
        step, target = divmod(i, n)
        service, instance = divmod(target, instances)
        pushes.append(_push(f"bench-{service}", f"bench-{service}-{instance}:6060", cpu[(target * 7 + step) % len(cpu)],
                            start + step * every_ns + target * (every_ns // n), form))
    return pushes


def large_pushes(distinct: list[bytes], count: int, form: str) -> list[Push]:
    """`count` pushes of the ~300 KB profiles, 8 instances of one service every 10 s (`in_this_hour`)."""
    start, every_ns = in_this_hour(-(-count // 8))
    return [_push("bench-large", f"large-{i % 8}", distinct[i % len(distinct)], start + (i // 8) * every_ns,
                  form) for i in range(count)]


def large_profiles(distinct: int) -> list[bytes]:
    program = make_program(n_functions=10_000)
    return [make_profile(program, seed, n_samples=8000) for seed in range(distinct)]


@dataclass
class Answers:
    latencies: list[float] = field(default_factory=list)
    typed: int = 0  # typed profiles stored, as the server answered
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    first_send: float = 0.0
    last_answer: float = 0.0
    late: int = 0  # open loop: sends more than 50 ms behind their schedule


async def _send(client: httpx.AsyncClient, url: str, push: Push, answers: Answers) -> None:
    started = time.perf_counter()
    try:
        response = await client.post(url, params=push.query, content=push.body,
                                     headers={"Content-Type": push.content_type})
        ok = response.status_code == 200
        if ok:
            answers.typed += int(response.json().get("profiles", 0))
        elif len(answers.errors) < 5:
            answers.errors.append(f"{response.status_code} {response.text[:200]}")
    except httpx.HTTPError as exc:
        ok = False
        if len(answers.errors) < 5:
            answers.errors.append(repr(exc))
    answers.last_answer = time.perf_counter()
    if ok:
        answers.latencies.append(answers.last_answer - started)
    else:
        answers.failed += 1


async def closed_loop(url: str, pushes: list[Push], clients: int) -> Answers:
    answers, queue = Answers(), iter(pushes)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:
        async def one() -> None:
            for push in queue:  # one shared iterator: each client takes the next push once answered
                await _send(client, url, push, answers)

        answers.first_send = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(clients)))
    return answers


async def open_loop(url: str, pushes: list[Push], rate: float) -> Answers:
    answers = Answers()
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=1000)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:
        answers.first_send = began = time.perf_counter()
        tasks = []
        for i, push in enumerate(pushes):
            delay = began + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay < -0.05:
                answers.late += 1
            tasks.append(asyncio.create_task(_send(client, url, push, answers)))
        await asyncio.gather(*tasks)
    return answers


# ------------------------------------------------------------------------------------- a run


@dataclass
class Run:
    workload: str
    variant: str  # "defaults" or the flags that differ from them
    number: int
    pushed: int = 0
    failed: int = 0
    typed: int = 0
    wall_s: float = 0.0
    cpu_s: dict[str, float] = field(default_factory=dict)  # main, compactor, postgres, total
    peak_pss_mb: float = 0.0
    peak_rss_mb: float = 0.0  # the sum of RSS: Postgres's shared buffers once per backend
    peak_pss_parts_mb: dict[str, float] = field(default_factory=dict)  # each part's PSS at the peak
    main_hwm_mb: float = 0.0
    memory_samples: int = 0
    ack_p50_ms: float = float("nan")
    ack_p95_ms: float = float("nan")
    late: int = 0
    client_cpu_s: float = 0.0
    idle_ms_per_s: float = 0.0  # the server's CPU before the pushes (its self-profiling, its loops), per second
    load_start: list[float] = field(default_factory=list)
    load_end: list[float] = field(default_factory=list)
    background: dict[str, float] = field(default_factory=dict)  # Counters over the run
    errors: list[str] = field(default_factory=list)

    def ms(self, part: str = "total") -> float:
        return 1e3 * self.cpu_s[part] / self.pushed if self.pushed else float("nan")

    def above_idle_ms(self) -> float:
        """CPU per profile less what the server would have spent idle over the same time."""
        return (1e3 * self.cpu_s["total"] - self.idle_ms_per_s * self.wall_s) / self.pushed if self.pushed else 0.0


def start_server(data: Path, extra: list[str], cpus: list[int] | None) -> allinone.AllInOne:
    """`flamewatch all` on `data`; with `cpus`, it and every process it starts (the compactor, Postgres)
    run on those cores only, and this process (the clients) on the others, for the length of the run."""
    if not cpus:
        return allinone.start(data, extra)[0]
    everything = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cpus))  # inherited by what the server starts
    try:
        node = allinone.start(data, extra)[0]
    finally:
        os.sched_setaffinity(0, everything - set(cpus) or everything)
    return node


def settle_compactor(node: allinone.AllInOne) -> None:
    """Let `flamewatch all` ask once whether anything is to be compacted (5 s after its start, and every
    minute): on a fresh data directory nothing is, and no compactor process starts. Should one start (an
    ended hour in the data), wait until its CPU stands still (its imports take about a second): its start
    is not ingest. Gives up after COMPACTOR_SETTLE_S."""
    deadline, last = time.monotonic() + COMPACTOR_SETTLE_S, None
    first_look = time.monotonic() + COMPACTOR_FIRST_LOOK_S
    while time.monotonic() < deadline:
        time.sleep(0.5)
        kids = server_usage.compactor_pids(node)
        if not kids:
            if time.monotonic() > first_look and last is None:
                return
            continue
        now = server_usage.cpu(node).compactor
        if last is not None and now - last < 0.02:
            return
        last = now


def run_once(work: Path, workload: str, variant: str, extra: list[str], pushes: list[Push], number: int,
             args: argparse.Namespace) -> Run:
    """One run on a fresh server, stopped and its data directory removed whatever happens."""
    data = work / f"{workload}-{variant.strip('-').replace(' ', '-')}-{number}"
    data.mkdir(parents=True)
    node = start_server(data / "data", extra, args.server_cpus)
    try:
        run = measure(node, pushes, Run(workload, variant, number), args)
    finally:
        allinone.stop(node)
        allinone.reap()  # the postmaster, adopted by this process once `flamewatch all` stopped it
        log = (data / "flamewatch.log").read_text(errors="replace").strip().splitlines()
        shutil.rmtree(data, ignore_errors=True)
    if run.failed:
        run.errors += [f"server log: {line}" for line in log[-3:]]
    return run


def measure(node: allinone.AllInOne, pushes: list[Push], run: Run, args: argparse.Namespace) -> Run:
    settle_compactor(node)
    idle0 = server_usage.cpu(node)
    time.sleep(args.idle)
    run.idle_ms_per_s = 1e3 * (server_usage.cpu(node) - idle0).total / args.idle if args.idle else 0.0
    before = server_usage.counters(node)  # read outside the CPU window: the reads cost the server a little
    run.load_start = [round(x, 2) for x in os.getloadavg()]
    cpu0, own0 = server_usage.cpu(node), time.process_time()
    with server_usage.MemorySampler(node, args.sample_every) as memory:
        url = f"{node.url}/ingest"
        pushing = open_loop(url, pushes, args.rate) if args.rate else closed_loop(url, pushes, args.clients)
        answers = asyncio.run(pushing)
        time.sleep(args.settle)
    cpu1, own1 = server_usage.cpu(node), time.process_time()
    run.load_end = [round(x, 2) for x in os.getloadavg()]
    run.main_hwm_mb = server_usage.vm_hwm_bytes(node.process.pid) / MB
    run.client_cpu_s = own1 - own0
    record(run, answers, cpu1 - cpu0, memory, server_usage.counters(node) - before)
    return run


def record(run: Run, answers: Answers, used: server_usage.Cpu, memory: server_usage.MemorySampler,
           background: server_usage.Counters) -> None:
    run.cpu_s = {"main": used.main, "compactor": used.compactor, "postgres": used.postgres, "total": used.total}
    run.pushed, run.failed, run.typed, run.late = len(answers.latencies), answers.failed, answers.typed, answers.late
    run.wall_s = answers.last_answer - answers.first_send
    run.peak_pss_mb, run.peak_rss_mb, run.memory_samples = memory.peak / MB, memory.peak_rss / MB, memory.samples
    run.peak_pss_parts_mb = {part: value / MB for part, value in memory.peak_parts.items()}
    if answers.latencies:
        run.ack_p50_ms, run.ack_p95_ms = (1e3 * float(np.quantile(answers.latencies, q)) for q in (0.5, 0.95))
    run.background = {k: v for k, v in asdict(background).items() if k != "errors"}
    run.errors = answers.errors + background.errors


def describe(run: Run) -> str:
    b = run.background
    return (f"  {run.workload} {run.variant} run {run.number + 1}: {run.pushed} pushes ({run.failed} failed) in "
            f"{run.wall_s:.1f} s, server CPU {run.ms():.2f} ms per profile (all {run.ms('main'):.2f}, compactor "
            f"{run.ms('compactor'):.2f}, Postgres {run.ms('postgres'):.2f}); peak PSS {run.peak_pss_mb:.0f} MB, "
            f"main VmHWM {run.main_hwm_mb:.0f} MB; ack p50 {run.ack_p50_ms:.0f} ms, p95 {run.ack_p95_ms:.0f} ms; "
            f"checkpoints {b.get('checkpoints', 0):.0f}, autovacuum {b.get('autovacuums', 0):.0f}, GC gen2 "
            f"{b.get('gc_gen2', 0):.0f}; load {run.load_start[0]:.2f} -> {run.load_end[0]:.2f}"
            + (f"; {run.late} sent more than 50 ms late (open loop: the client fell behind)" if run.late else ""))


# ------------------------------------------------------------------------------------- figures


def variants(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    if not args.flush_interval:
        return [("defaults", [])]
    return [(f"--flush-interval {v:g}", ["--flush-interval", f"{v:g}"]) for v in args.flush_interval]


def plan(args: argparse.Namespace) -> Iterator[tuple[int, str, str, list[str]]]:
    """(run, workload, variant, flags): run by run, each workload and variant in turn, so a change in the
    machine's load falls on every variant alike."""
    for number in range(args.runs):
        for workload in args.workloads:
            for variant, extra in variants(args):
                yield number, workload, variant, extra


def _stop(signum: int, frame: object) -> None:
    """Ctrl-C or kill: unwind through the `finally` that stops the server (SIGINT is ignored in a job
    started in the background by a shell, and asyncio.run's own SIGINT handling only cancels the pushes)."""
    raise SystemExit(128 + signum)


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    name, env_start = stamp(), environment()
    allinone.become_subreaper()
    print(f"ingest cost bench: {os.cpu_count()} cores, load average {env_start['load_average']}", flush=True)
    pool = corpus.load_or_capture(args.pool, Path("/tmp"))
    sizes = pool.sizes("cpu")
    pool_sizes = f"{len(sizes)} captured, {sizes.min() / 1024:.1f}–{sizes.max() / 1024:.1f} KiB gzipped"
    distinct = large_profiles(args.large_distinct) if "large" in args.workloads else []
    large_size = (f"{len(distinct)} distinct, {np.mean([len(p) for p in distinct]) / 1024:.0f} KiB gzipped on "
                  f"average" if distinct else "not run")
    print(f"small: {pool_sizes}; large: {large_size}", flush=True)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="flamewatch-ingest-cost-") as tmp:
        for number, workload, variant, extra in plan(args):
            pushes = (small_pushes(pool, args.small, args.form) if workload == "small"
                      else large_pushes(distinct, args.large, args.form))
            runs.append(run_once(Path(tmp), workload, variant, extra, pushes, number, args))
            print(describe(runs[-1]), flush=True)
    env = {"start": env_start, "end": environment()}
    md = RESULTS_DIR / f"{name}-ingest-cost.md"
    # The measurements first: a fault in the tables below must not lose a run of many minutes.
    md.with_suffix(".json").write_text(json.dumps({"settings": vars(args), "environment": env,
                                                   "pyroscope": asdict(PYROSCOPE),
                                                   "runs": [asdict(r) for r in runs]}, indent=2) + "\n")
    text = markdown(name, args, env, runs, pool_sizes, large_size)
    print("\n" + text)
    md.write_text(text)
    print(f"written to {md}")


class _Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The module docstring as written, and each option's default."""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=_Help)
    parser.add_argument("--workloads", nargs="+", choices=("small", "large"), default=["small", "large"],
                        help="which workloads to run, in this order within a run")
    parser.add_argument("--small", type=int, default=2000, help="pushes of small real Go CPU profiles per run")
    parser.add_argument("--large", type=int, default=1000, help="pushes of ~300 KB profiles per run")
    parser.add_argument("--large-distinct", type=int, default=20, help="distinct ~300 KB profiles the pushes cycle "
                        "through")
    parser.add_argument("--pool", type=int, default=24, help="captured Go CPU profiles the small pushes cycle through "
                        "(corpus.py; 24 are the storage bench's)")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients, closed loop")
    parser.add_argument("--rate", type=float, default=0.0, help="open loop instead: this many pushes a second, each "
                        "sent on time whatever the answers (0: closed loop)")
    parser.add_argument("--runs", type=int, default=5, help="runs per workload (and flush interval), each on a fresh "
                        "server")
    parser.add_argument("--flush-interval", type=float, nargs="*", default=[], metavar="SECONDS",
                        help="run `flamewatch all --flush-interval S` for each S, taking turns, instead of its "
                        "default")
    parser.add_argument("--form", choices=("multipart", "raw"), default="multipart", help="the pprof as the `profile` "
                        "part of a multipart form (pyroscope-go) or as the body")
    parser.add_argument("--sample-every", type=float, default=0.15, help="seconds between memory samples")
    parser.add_argument("--settle", type=float, default=0.2, help="seconds after the last answer still counted")
    parser.add_argument("--server-cpus", type=int, nargs="*", default=None, metavar="CPU",
                        help="run the server's processes on these cores only and the clients on the others "
                        "(to see what running its threads side by side on idle cores costs)")
    parser.add_argument("--idle", type=float, default=4.0, help="seconds of the server's idle CPU read before the "
                        "pushes (its self-profiling goes on during them)")
    return parser.parse_args()


if __name__ == "__main__":
    main()
