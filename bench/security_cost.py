"""What credentials and TLS cost the server per push (issue 18: at most 10 % more CPU per profile than
plain HTTP at the bench's push rate).

    .venv/bin/python bench/security_cost.py [--rounds 3] [--seconds 30] [--rate 6.4] [--profile 10]

For each mode (`security_modes.py`: plain HTTP, an A/A control that is plain HTTP again on a server of
its own, basic auth, a bearer token, HTTPS, HTTPS + basic auth, plain gRPC, gRPC over TLS + a bearer
token) a `flamewatch all` (embedded Postgres, filesystem objects, no self-scrape, no compaction) starts
with the web configuration file of that mode (none for the plain ones), and all of them run side by
side for a round. Every round starts fresh servers, in a rotated order: a server process can cost a few
percent more than another of the same mode for the whole of its life (the A/A control shows by how
much), so a mode that kept one process for the whole benchmark carried that process's offset in every
round; with a process per round the offset falls on another mode each round, and the median of the
rounds' own percentages leaves most of it out.

Every mode is pushed the same real Go profiles (the corpus of `corpus.py`, a CPU and an allocs pprof in
turn, as `soak.py` pushes them: 8 services x 4 instances, dated now) at `--rate` pushes a second (6.4: the
soak's 32 instances each pushing a CPU and an allocs pprof every 10 s), open loop (a push is sent on
time whatever the answers before it), with two kinds of client:

    keep-alive      one client whose connections stay open, as the SDKs' HTTP clients and gRPC
                    channels do
    new per push    a new TCP connection for every push (`Connection: close`, no pool; for gRPC a new
                    channel with its own subchannel), so with TLS a full handshake each time: the
                    worst case, an SDK that does not reuse connections

The figure is the server process's CPU (utime + stime of the `flamewatch all` process from
/proc/<pid>/stat, its children excluded; the embedded Postgres is its own process and not counted)
from the first push of a slice to its last answer, summed over a round's slices and divided by the
pushes acknowledged. The modes and clients take turns in slices of `--slice` seconds (10), in an order
that rotates, until each has had `--seconds` (30) in the round: on a shared machine the CPU a push costs
moves by 10-20 % from minute to minute, and taking turns puts every mode under the same moves (runs of
one mode after the other, each on its own start, differed more between rounds than the modes differed
from each other). Each server is warmed up first (every series created by both clients) and its idle
CPU read. The table gives the median of `--rounds` with min and max, the median against the plain
mode of the same protocol and client, and the median of the rounds' own percentages. The client is
checked not to be the bottleneck: pushes sent late against their schedule, the achieved rate, and the
client's CPU (this process) as a share of a core.

After the last round, on its servers: what a connection costs apart from a push (`connection_cost.py`:
server CPU per request that does nothing, kept open against new per request), which is the TLS
handshake's cost seen alone; and, with `--profile SECONDS`, a slice per mode and client during which
the server profiles itself (`/debug/pprof/profile`, fetched with an admin token); the profiles are kept
in `bench/results/` and summed up in the Markdown with `go tool pprof -top`. Neither is counted in the
table: the sampler costs CPU of its own.

Prints the table and writes `bench/results/<UTC time>-security.md` and `.json` with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import allinone
import connection_cost
import grpc
import httpx
from corpus import KINDS, NAMES, at_time, load_or_capture
from demo_cost import children, cpu_seconds, postmaster_pid
from report import RESULTS_DIR, environment, stamp
from security_modes import CLIENTS, CONTROL, MODES, RSA_MODES, Mode, Secrets, pusher
from whereitgoes import top

LATE_S = 0.05  # a push sent this much after its time counts as late: the client did not keep up
GOAL_PERCENT = 10.0


# ------------------------------------------------------------------------------------- a round


def push_plan(pool, count: int, start: int = 0) -> list[tuple[dict[str, str], bytes]]:
    """The pushes of a round, the same for every mode: 8 services x 4 instances taking turns, a CPU and
    an allocs pprof each, every instance cycling through the corpus from its own offset (as soak.py)."""
    plan = []
    for i in range(start, start + count):
        target, kind = (i // 2) % 32, KINDS[i % 2]
        service, instance = divmod(target, 4)
        served = pool.profiles[kind][(target * 7 + i // 64) % len(pool.profiles[kind])]
        plan.append(({"service_name": f"svc-{service}", "instance": f"svc-{service}-{instance}:6060",
                      "__name__": NAMES[kind]}, served))
    return plan


@dataclass
class Round:
    mode: str
    client: str
    round: int
    pushes: int = 0  # acknowledged
    failed: int = 0
    typed: int = 0  # typed profiles stored, as the server answered
    late: int = 0
    server_cpu_s: float = 0.0
    postgres_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    wall_s: float = 0.0
    send_span_s: float = 0.0  # first send to last send, summed over the slices
    intervals: int = 0  # between sends, over the slices: intervals / send_span_s is the rate achieved
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def cpu_ms(self) -> float:
        return 1e3 * self.server_cpu_s / self.pushes if self.pushes else float("nan")


def postgres_cpu(node: allinone.AllInOne) -> float:
    """CPU of the embedded Postgres: its postmaster (with the backends it reaped) and live backends."""
    postmaster = postmaster_pid(node.postgres)
    if postmaster is None:
        return 0.0
    total = cpu_seconds(postmaster, reaped=True)
    for child in children(postmaster):
        try:
            total += cpu_seconds(child)
        except (OSError, ValueError):  # exited meanwhile: counted by the postmaster once reaped
            continue
    return total


async def push_at_rate(send, plan, rate: float, result: Round) -> None:
    """Each push at its time (open loop), all answered before returning."""
    loop = asyncio.get_running_loop()

    async def one(labels: dict[str, str], served: bytes) -> None:
        started = loop.time()
        try:
            result.typed += await send(labels, at_time(served, time.time_ns()))
            result.pushes += 1
            result.latencies.append(loop.time() - started)
        except (httpx.HTTPError, grpc.RpcError) as exc:
            result.failed += 1
            if len(result.errors) < 3:
                result.errors.append(repr(exc)[:300])

    began = loop.time()
    tasks = []
    for i, (labels, served) in enumerate(plan):
        delay = began + i / rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        elif -delay > LATE_S:
            result.late += 1
        tasks.append(asyncio.create_task(one(labels, served)))
    result.send_span_s += loop.time() - began
    result.intervals += len(plan) - 1
    await asyncio.gather(*tasks)


def measure(node: allinone.AllInOne, mode: Mode, keys: Secrets, client: str, plan, rate: float,
            result: Round) -> Round:
    """Push `plan` at `rate` with a new client of this kind; what it cost is added to `result`."""

    async def run() -> None:
        sender = pusher(mode, node, keys, client)
        try:
            await push_at_rate(sender.push, plan, rate, result)
        finally:
            await sender.close()

    server, postgres = cpu_seconds(node.process.pid), postgres_cpu(node)
    mine, began = time.process_time(), time.monotonic()
    asyncio.run(run())
    result.wall_s += time.monotonic() - began
    result.client_cpu_s += time.process_time() - mine
    result.server_cpu_s += cpu_seconds(node.process.pid) - server
    result.postgres_cpu_s += postgres_cpu(node) - postgres
    return result


# ------------------------------------------------------------------------------------- a server per mode


def start(mode: Mode, keys: Secrets, work: Path, name: str) -> allinone.AllInOne:
    data = work / name
    data.mkdir()
    no_scrape = work / "no-scrape.yml"
    no_scrape.write_text("scrape_configs: []\n")  # only the pushes: no self-scrape to share the CPU with
    extra = ["--config.file", str(no_scrape), "--compaction.interval", "0"]
    config = keys.web_config(mode)
    if config is not None:
        extra += ["--web.config.file", str(config)]
    tls = keys.ca_context() if mode.tls else None
    node, _ = allinone.start(data, extra=extra, log_name=f"{name}.log", tls=tls)
    return node


def stop(node: allinone.AllInOne) -> None:
    allinone.stop(node)
    shutil.rmtree(node.data, ignore_errors=True)


def idle_cpu(node: allinone.AllInOne, seconds: float) -> float:
    """The server's CPU ms per second with nothing pushed (its flush loop, readiness, timers)."""
    before = cpu_seconds(node.process.pid)
    time.sleep(seconds)
    return 1e3 * (cpu_seconds(node.process.pid) - before) / seconds


def profiled(node: allinone.AllInOne, mode: Mode, keys: Secrets, client: str, plan, rate: float,
             seconds: int, out: Path) -> str:
    """One round during which the server profiles itself; the `-top` summary of that profile."""
    answer: dict[str, bytes] = {}

    def fetch() -> None:
        response = httpx.get(f"{node.url}/debug/pprof/profile", params={"seconds": str(seconds)},
                             headers=keys.admin_headers(mode), verify=node.tls or True, timeout=seconds + 60)
        response.raise_for_status()
        answer["profile"] = response.content

    thread = threading.Thread(target=fetch)
    thread.start()
    time.sleep(0.2)
    measure(node, mode, keys, client, plan[: int(rate * seconds)], rate, Round(mode.name, client, -1))
    thread.join()
    out.write_bytes(answer["profile"])
    return top(out)


# ------------------------------------------------------------------------------------- the table


@dataclass
class Row:
    mode: Mode
    client: str
    rounds: list[Round]

    @property
    def cpu_ms(self) -> list[float]:
        return [r.cpu_ms for r in self.rounds]

    @property
    def median(self) -> float:
        return statistics.median(self.cpu_ms)


def rows_of(modes: list[Mode], rounds: list[Round]) -> list[Row]:
    return [Row(mode, client, [r for r in rounds if r.mode == mode.name and r.client == client])
            for mode in modes for client in CLIENTS]


def versus(row: Row, rows: list[Row]) -> float | None:
    """Percent more CPU per profile than the plain mode of the same protocol and client (None: it is it)."""
    if row.mode.name == row.mode.baseline:
        return None
    base = next((r for r in rows if r.mode.name == row.mode.baseline and r.client == row.client), None)
    return None if base is None else 100 * (row.median / base.median - 1)


def paired(row: Row, rows: list[Row]) -> float | None:
    """The median over rounds of each round's percent against the plain mode in that round: the modes
    of a round run minutes apart, so this leaves out what the machine's load did between rounds."""
    base = next((r for r in rows if r.mode.name == row.mode.baseline and r.client == row.client), None)
    if base is None or base is row:
        return None
    return statistics.median(100 * (mine.cpu_ms / theirs.cpu_ms - 1) for mine, theirs in zip(row.rounds, base.rounds))


def table(rows: list[Row]) -> str:
    lines = ["| mode | client | CPU ms per profile, median (min, max) | vs plain (%) | paired by round | "
             "goal met (< 10 %)? |", "|---|---|---|---|---|---|"]
    for row in rows:
        pct, by_round = versus(row, rows), paired(row, rows)
        against = "" if pct is None else f"{pct:+.1f} % vs {row.mode.baseline} | {by_round:+.1f} %"
        met = "(baseline)" if pct is None else ("yes" if pct < GOAL_PERCENT else "NO")
        met = "(A/A control)" if row.mode.name == CONTROL else met
        lines.append(f"| {row.mode.name} | {row.client} | {row.median:.2f} ({min(row.cpu_ms):.2f}, "
                     f"{max(row.cpu_ms):.2f}) | {against or ' | '} | {met} |")
    return "\n".join(lines)


def client_table(rows: list[Row], rate: float, idle: dict[str, list[float]]) -> str:
    """Whether the client kept up (no late sends, the rate achieved, its CPU) and what else was spent."""
    lines = ["| mode | client | pushes acknowledged (failed) | sent late (> 50 ms) | rate achieved /s | client CPU, "
             "% of a core | answer latency p50 / p95 ms | Postgres CPU ms per push | server idle CPU ms/s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        rs = row.rounds
        latencies = sorted(x for r in rs for x in r.latencies)
        p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan")
        achieved = statistics.median(r.intervals / r.send_span_s for r in rs if r.send_span_s)
        lines.append(f"| {row.mode.name} | {row.client} | {sum(r.pushes for r in rs)} ({sum(r.failed for r in rs)}) "
                     f"| {sum(r.late for r in rs)} | {achieved:.2f} (asked {rate:g}) | "
                     f"{100 * max(r.client_cpu_s / r.wall_s for r in rs):.0f} (max) | "
                     f"{1e3 * statistics.median(latencies):.0f} / {1e3 * p95:.0f} | "
                     f"{statistics.median(1e3 * r.postgres_cpu_s / r.pushes for r in rs):.2f} | "
                     f"{statistics.median(idle.get(row.mode.name, [float('nan')])):.1f} |")
    return "\n".join(lines)


def markdown(name: str, args, env: dict, rows: list[Row], idle, loads: list[float], tops: dict[str, str],
             costs: list[connection_cost.Cost]) -> str:
    settings = json.dumps({k: v for k, v in vars(args).items()}, default=str)
    errors = [e for row in rows for r in row.rounds for e in r.errors][:5]
    typed = {row.mode.name: sum(r.typed for r in row.rounds) / max(1, sum(r.pushes for r in row.rounds))
             for row in rows}
    return (f"# Security cost benchmark, {name}\n\nCommit {env['end']['commit']}, {env['end']['cores']} cores, "
            f"shared with other work: load average (1, 5, 15 min) {env['start']['load_average']} at the start, "
            f"{env['end']['load_average']} at the end; 1-minute load at the start of each round: "
            f"{', '.join(f'{x:.1f}' for x in loads)}.\n\nSettings: `{settings}`\n\n"
            f"Server CPU (utime + stime of `flamewatch all`, Postgres excluded) per acknowledged push of one "
            f"pprof (a Go CPU or allocs pprof in turn; the server stored {statistics.mean(typed.values()):.1f} "
            f"typed profiles per push), at {args.rate:g} pushes/s for {args.seconds:g} s a round "
            f"(in slices of {args.slice:g} s, the modes taking turns), {args.rounds} rounds:\n\n"
            f"{table(rows)}\n\n## The client and the rest\n\n{client_table(rows, args.rate, idle)}\n"
            + (f"\n## What a connection costs, apart from a push\n\n{connection_text(rows, costs)}\n" if costs else "")
            + ("\nFirst errors:\n\n" + "\n".join(f"- `{e}`" for e in errors) + "\n" if errors else "")
            + ("\n## Where the server's time goes (profiled rounds, not counted above)\n"
               + "".join(f"\n### {k}\n\n```\n{v.strip()}\n```\n" for k, v in tops.items()) if tops else ""))


def connection_text(rows: list[Row], costs: list[connection_cost.Cost]) -> str:
    push = {row.mode.protocol: row.median for row in rows if row.mode.name == row.mode.baseline
            and row.client == "new per push"}
    return (f"Server CPU per request that does nothing (HTTP: `GET {connection_cost.NOTHING}` with the mode's "
            f"credential, answered 404; gRPC: a method the server lacks, answered UNIMPLEMENTED), sequential, "
            f"{connection_cost.BATCH} requests a batch, the modes taking turns, median of "
            f"{len(costs[0].new)} batches, on the last round's servers. The last column sets what a new connection "
            "costs beyond the plain mode's against the CPU of one push of the plain mode, new connection per push "
            f"(above):\n\n{connection_cost.table(costs, push)}")


# ------------------------------------------------------------------------------------- main


@dataclass
class Servers:
    """Every mode's `flamewatch all` for one round, warmed up; its idle CPU (ms/s) is added to `idle`."""

    nodes: dict[str, allinone.AllInOne] = field(default_factory=dict)

    def start(self, modes: list[Mode], keys: Secrets, work: Path, warm, args, idle: dict[str, list[float]]) -> None:
        work.mkdir()
        for mode in modes:
            node = self.nodes[mode.name] = start(mode, keys, work, mode.slug)
            for client in CLIENTS:
                measure(node, mode, keys, client, warm, 2 * args.rate, Round(mode.name, client, -1))
            idle.setdefault(mode.name, []).append(idle_cpu(node, args.idle))
            print(f"  {mode.name}: started (pid {node.process.pid}), warmed up, idle {idle[mode.name][-1]:.1f} "
                  "ms CPU/s", flush=True)

    def stop(self) -> None:
        for node in self.nodes.values():
            stop(node)


def rotated(modes: list[Mode], number: int) -> list[Mode]:
    """The modes in the order their servers start in round `number`: each round starts fresh servers, in
    another order, so a server process that happens to cost more (where its memory landed, what shares
    its core) weighs on another mode each round instead of on one mode throughout."""
    first = number % len(modes)
    return modes[first:] + modes[:first]


def run_round(servers: Servers, modes: list[Mode], keys: Secrets, plan, number: int, args) -> list[Round]:
    """Every mode and client for `--seconds`, in slices of `--slice` seconds taking turns."""
    combos = [(mode, client) for mode in modes for client in CLIENTS]
    results = {(mode.name, client): Round(mode.name, client, number) for mode, client in combos}
    per_slice, passes = round(args.rate * args.slice), max(1, round(args.seconds / args.slice))
    for turn in range(number * passes, (number + 1) * passes):
        pushes = plan[turn * per_slice:(turn + 1) * per_slice]
        first = turn % len(combos)
        for mode, client in combos[first:] + combos[:first]:
            measure(servers.nodes[mode.name], mode, keys, client, pushes, args.rate, results[(mode.name, client)])
    for r in results.values():
        print(f"  round {number + 1}, {r.mode}, {r.client}: {r.cpu_ms:.2f} ms CPU per push ({r.pushes} acknowledged, "
              f"{r.failed} failed, {r.late} late; client CPU {100 * r.client_cpu_s / r.wall_s:.0f} % of a core)",
              flush=True)
    return list(results.values())


def connection_costs(servers: Servers, modes: list[Mode], keys: Secrets, work: Path,
                     batches: int) -> list[connection_cost.Cost]:
    """What a connection costs each mode's server apart from a push (`connection_cost.py`), and a server
    with an RSA 2048 certificate of each protocol, started for this."""
    extra = [m for m in RSA_MODES if any(o.protocol == m.protocol for o in modes)]
    for mode in extra:
        servers.nodes[mode.name] = start(mode, keys, work, mode.slug)
    targets = [connection_cost.Target(
        mode.name, mode.protocol, node.process.pid, node.grpc if mode.protocol == "grpc" else node.url,
        tls=node.tls if mode.protocol == "http" else None, ca=keys.ca.cert if mode.tls and mode.protocol == "grpc"
        else None, authorization=keys.authorization(mode))
        for mode in [*modes, *extra] if mode.name != CONTROL for node in [servers.nodes[mode.name]]]
    costs = connection_cost.measure(targets, batches)
    for cost in costs:
        print(f"  {cost.target.name}: a new connection costs {cost.per_connection:.3f} ms of server CPU", flush=True)
    return costs


def profile_modes(servers: Servers, modes: list[Mode], keys: Secrets, plan, args, name: str) -> dict[str, str]:
    tops = {}
    for mode in modes:
        for client in CLIENTS:
            out = RESULTS_DIR / f"{name}-security-{mode.slug}-{client.replace(' ', '-')}.pb.gz"
            tops[f"{mode.name}, {client} (`{out.name}`)"] = profiled(servers.nodes[mode.name], mode, keys, client,
                                                                     plan, args.rate, args.profile, out)
            print(f"  profiled {mode.name}, {client}: {out.name}", flush=True)
    return tops


def main() -> None:
    args = parse_args()
    modes = [m for m in MODES if args.modes is None or m.slug in args.modes or
             any(m.name == o.baseline for o in MODES if o.slug in args.modes)]
    name, env_start = stamp(), environment()
    allinone.become_subreaper()
    rounds: list[Round] = []
    loads: list[float] = []
    idle: dict[str, list[float]] = {}
    tops: dict[str, str] = {}
    costs: list[connection_cost.Cost] = []
    with tempfile.TemporaryDirectory(prefix="flamewatch-security-") as tmp:
        work = Path(tmp)
        pool = load_or_capture(args.corpus, work)
        keys = Secrets.create(work / "secrets")
        count = round(args.rate * args.slice) * max(1, round(args.seconds / args.slice)) * args.rounds
        plan, warm = push_plan(pool, count), push_plan(pool, args.warmup, start=count)
        for number in range(args.rounds):
            servers = Servers()
            try:
                servers.start(rotated(modes, number), keys, work / f"round-{number + 1}", warm, args, idle)
                loads.append(os.getloadavg()[0])
                rounds += run_round(servers, modes, keys, plan, number, args)
                if number == args.rounds - 1:
                    costs = connection_costs(servers, modes, keys, work / f"round-{number + 1}",
                                             args.connection_batches)
                    tops = profile_modes(servers, modes, keys, plan, args, name) if args.profile else {}
            finally:
                servers.stop()
    env = {"start": env_start, "end": environment()}
    rows = rows_of(modes, rounds)
    text = markdown(name, args, env, rows, idle, loads, tops, costs)
    print("\n" + text)
    md = RESULTS_DIR / f"{name}-security.md"
    md.write_text(text)
    record = {"settings": vars(args), "environment": env, "idle_ms_per_s": idle,
              "rounds": [asdict(r) for r in rounds],
              "connection_cost_ms": {c.target.name: {"kept_open": c.kept_open, "new": c.new} for c in costs}}
    md.with_suffix(".json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    print(f"written to {md}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="rounds: every mode and client for --seconds a round, "
                        "each round on servers started fresh")
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds of pushes per mode, client and round")
    parser.add_argument("--slice", type=float, default=10.0, help="seconds of pushes before the next mode's turn")
    parser.add_argument("--rate", type=float, default=6.4, help="pushes a second (6.4: soak.py's 32 instances, "
                        "a CPU and an allocs pprof each every 10 s)")
    parser.add_argument("--warmup", type=int, default=64, help="pushes per client before the rounds (64: every "
                        "series once, so no round pays for creating them)")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of each server's idle CPU, after warm-up")
    parser.add_argument("--corpus", type=int, default=12, help="captured profiles of each kind to replay")
    parser.add_argument("--modes", nargs="*", default=None, choices=[m.slug for m in MODES],
                        help="only these modes (their baselines are added)")
    parser.add_argument("--connection-batches", type=int, default=5, help=f"batches of {connection_cost.BATCH} "
                        "requests per mode and client that measure what a connection costs (connection_cost.py)")
    parser.add_argument("--profile", type=int, default=0, metavar="SECONDS", help="after the rounds, profile the "
                        "server this long per mode and client (not counted)")
    return parser.parse_args()


if __name__ == "__main__":
    main()
