"""What credentials and TLS cost the server per push (issue 18: at most 10 % more CPU per profile than
plain HTTP at the bench's push rate).

    .venv/bin/python bench/security_cost.py [--rounds 3] [--seconds 30] [--rate 6.4] [--profile 10]

For each mode a fresh `flamewatch all` (embedded Postgres, filesystem objects, no self-scrape, no
compaction) starts with the web configuration file of that mode (none for the plain ones), and all of
them run side by side for the whole benchmark:

    plain HTTP                    no file: POST /ingest as today
    basic auth                    basic_auth_users (bcrypt, cost 10) and access
    bearer token                  bearer_tokens (sha256) and access
    HTTPS                         tls_server_config (an EC P-256 certificate of a CA made here)
    HTTPS + basic auth            both
    plain gRPC                    no file: IngestService.Push, one pprof per call
    gRPC over TLS + bearer token  tls_server_config, bearer_tokens and access

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

`--profile SECONDS` adds, after the measured rounds, a slice per mode and client during which the
server profiles itself (`/debug/pprof/profile`, fetched with an admin token); the profiles are kept
in `bench/results/` and summed up in the Markdown with `go tool pprof -top`. Profiled slices are not
counted: the sampler costs CPU of its own.

Prints the table and writes `bench/results/<UTC time>-security.md` and `.json` with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import secrets
import shutil
import ssl
import statistics
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import allinone
import bcrypt
import grpc
import httpx
from corpus import KINDS, NAMES, at_time, load_or_capture
from demo_cost import children, cpu_seconds, postmaster_pid
from infra.certs import CertificateAuthority
from report import RESULTS_DIR, environment, stamp
from whereitgoes import top

from flamewatch.api.flamewatch.v1 import ingest_pb2, ingest_pb2_grpc

TENANT = "bench"
USER, TOKEN_NAME, ADMIN = "pusher", "pusher-token", "bench-admin"
CLIENTS = ("keep-alive", "new per push")
LATE_S = 0.05  # a push sent this much after its time counts as late: the client did not keep up
GOAL_PERCENT = 10.0


@dataclass(frozen=True)
class Mode:
    name: str
    protocol: str  # "http" or "grpc"
    tls: bool = False
    credential: str | None = None  # "basic", "bearer" or None

    @property
    def baseline(self) -> str:
        return "plain gRPC" if self.protocol == "grpc" else "plain HTTP"

    @property
    def slug(self) -> str:
        return self.name.lower().replace(" + ", "-").replace(" ", "-")


MODES = (Mode("plain HTTP", "http"), Mode("basic auth", "http", credential="basic"),
         Mode("bearer token", "http", credential="bearer"), Mode("HTTPS", "http", tls=True),
         Mode("HTTPS + basic auth", "http", tls=True, credential="basic"), Mode("plain gRPC", "grpc"),
         Mode("gRPC over TLS + bearer token", "grpc", tls=True, credential="bearer"))


# ------------------------------------------------------------------------------------- secrets and files


@dataclass(frozen=True)
class Secrets:
    """The credentials of every mode and the CA the servers' certificate comes from, made once a run."""

    directory: Path
    password: str
    password_hash: str
    token: str
    admin_token: str
    ca: CertificateAuthority

    @staticmethod
    def create(directory: Path) -> Secrets:
        password = secrets.token_urlsafe(16)
        ca = CertificateAuthority.create(directory)
        ca.issue("server")
        return Secrets(directory, password, bcrypt.hashpw(password.encode(), bcrypt.gensalt(10)).decode(),
                       secrets.token_urlsafe(32), secrets.token_urlsafe(32), ca)

    def web_config(self, mode: Mode) -> Path | None:
        """The mode's web configuration file; None for the plain modes (no file: Flamewatch as before)."""
        if not mode.tls and mode.credential is None:
            return None
        lines = []
        if mode.tls:
            lines += ["tls_server_config: {cert_file: server.crt, key_file: server.key}",
                      "client: {tls_config: {ca_file: ca.crt}}"]
        if mode.credential is not None:  # the admin token fetches /debug/pprof in the profiled rounds
            lines += [f"bearer_tokens: {{{ADMIN}: {_sha256(self.admin_token)}}}",
                      f"access: {{{USER}: {{write: [{TENANT}]}}, {TOKEN_NAME}: {{write: [{TENANT}]}}, "
                      f"{ADMIN}: {{admin: true}}}}"]
        if mode.credential == "basic":
            lines.append(f"basic_auth_users: {{{USER}: '{self.password_hash}'}}")
        if mode.credential == "bearer":
            lines[-2] = (f"bearer_tokens: {{{ADMIN}: {_sha256(self.admin_token)}, "
                         f"{TOKEN_NAME}: {_sha256(self.token)}}}")
        path = self.directory / f"{mode.slug}.web.yml"
        path.write_text("\n".join(lines) + "\n")
        return path

    def ca_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca.cert))

    def authorization(self, mode: Mode) -> str | None:
        if mode.credential == "basic":
            return "Basic " + _b64(f"{USER}:{self.password}")
        if mode.credential == "bearer":
            return f"Bearer {self.token}"
        return None

    def admin_headers(self, mode: Mode) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"} if mode.credential else {}


def _sha256(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# ------------------------------------------------------------------------------------- clients


class HttpPusher:
    """POST /ingest, one pprof per request, through one httpx client."""

    def __init__(self, node: allinone.AllInOne, authorization: str | None, reuse: bool) -> None:
        headers = {"X-Scope-OrgID": TENANT, **({"Authorization": authorization} if authorization else {})}
        if not reuse:  # the server closes after its answer, and the client keeps no connection either
            headers["Connection"] = "close"
        limits = httpx.Limits() if reuse else httpx.Limits(max_keepalive_connections=0)
        self._client = httpx.AsyncClient(timeout=60, headers=headers, limits=limits, verify=node.tls or True)
        self._url = f"{node.url}/ingest"

    async def push(self, labels: dict[str, str], payload: bytes) -> int:
        answer = await self._client.post(self._url, params=labels, content=payload)
        answer.raise_for_status()
        return answer.json()["profiles"]

    async def close(self) -> None:
        await self._client.aclose()


class GrpcPusher:
    """IngestService.Push, one pprof per call: one channel, or a channel of its own per push (its own
    subchannel pool, so no connection is shared with another channel of this process)."""

    def __init__(self, node: allinone.AllInOne, ca: Path | None, authorization: str | None, reuse: bool) -> None:
        self._address, self._reuse = node.grpc, reuse
        self._credentials = grpc.ssl_channel_credentials(ca.read_bytes()) if ca else None
        self._metadata = (("x-scope-orgid", TENANT),) + ((("authorization", authorization),) if authorization else ())
        self._shared = self._channel() if reuse else None

    def _channel(self) -> grpc.aio.Channel:
        options = [("grpc.max_send_message_length", 64 << 20), ("grpc.use_local_subchannel_pool", 1)]
        if self._credentials is None:
            return grpc.aio.insecure_channel(self._address, options=options)
        return grpc.aio.secure_channel(self._address, self._credentials, options=options)

    async def push(self, labels: dict[str, str], payload: bytes) -> int:
        channel = self._shared or self._channel()
        try:
            request = ingest_pb2.PushRequest(series=[ingest_pb2.RawProfileSeries(
                labels=[{"name": k, "value": v} for k, v in labels.items()],
                samples=[ingest_pb2.RawSample(raw_profile=payload)])])
            reply = await ingest_pb2_grpc.IngestServiceStub(channel).Push(request, metadata=self._metadata,
                                                                          timeout=60)
            return reply.profiles
        finally:
            if not self._reuse:
                await channel.close()

    async def close(self) -> None:
        if self._shared is not None:
            await self._shared.close()


def pusher(mode: Mode, node: allinone.AllInOne, keys: Secrets, client: str):
    reuse = client == "keep-alive"
    if mode.protocol == "grpc":
        return GrpcPusher(node, keys.ca.cert if mode.tls else None, keys.authorization(mode), reuse)
    return HttpPusher(node, keys.authorization(mode), reuse)


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


def markdown(name: str, args, env: dict, rows: list[Row], idle, loads: list[float], tops: dict[str, str]) -> str:
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
            + ("\nFirst errors:\n\n" + "\n".join(f"- `{e}`" for e in errors) + "\n" if errors else "")
            + ("\n## Where the server's time goes (profiled rounds, not counted above)\n"
               + "".join(f"\n### {k}\n\n```\n{v.strip()}\n```\n" for k, v in tops.items()) if tops else ""))


# ------------------------------------------------------------------------------------- main


@dataclass
class Servers:
    """Every mode's `flamewatch all`, warmed up, with its idle CPU (ms/s)."""

    nodes: dict[str, allinone.AllInOne] = field(default_factory=dict)
    idle: dict[str, list[float]] = field(default_factory=dict)

    def start(self, modes: list[Mode], keys: Secrets, work: Path, warm, args) -> None:
        for mode in modes:
            node = self.nodes[mode.name] = start(mode, keys, work, mode.slug)
            for client in CLIENTS:
                measure(node, mode, keys, client, warm, 2 * args.rate, Round(mode.name, client, -1))
            self.idle[mode.name] = [idle_cpu(node, args.idle)]
            print(f"  {mode.name}: started, warmed up, idle {self.idle[mode.name][0]:.1f} ms CPU/s", flush=True)

    def stop(self) -> None:
        for node in self.nodes.values():
            stop(node)


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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="rounds: every mode and client for --seconds a round")
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
    parser.add_argument("--profile", type=int, default=0, metavar="SECONDS", help="after the rounds, profile the "
                        "server this long per mode and client (not counted)")
    args = parser.parse_args()
    modes = [m for m in MODES if args.modes is None or m.slug in args.modes or
             any(m.name == o.baseline for o in MODES if o.slug in args.modes)]
    name, env_start = stamp(), environment()
    allinone.become_subreaper()
    rounds: list[Round] = []
    loads: list[float] = []
    servers = Servers()
    with tempfile.TemporaryDirectory(prefix="flamewatch-security-") as tmp:
        work = Path(tmp)
        pool = load_or_capture(args.corpus, work)
        keys = Secrets.create(work / "secrets")
        count = round(args.rate * args.slice) * max(1, round(args.seconds / args.slice)) * args.rounds
        plan, warm = push_plan(pool, count), push_plan(pool, args.warmup, start=count)
        try:
            servers.start(modes, keys, work, warm, args)
            for number in range(args.rounds):
                loads.append(os.getloadavg()[0])
                rounds += run_round(servers, modes, keys, plan, number, args)
            tops = profile_modes(servers, modes, keys, plan, args, name) if args.profile else {}
        finally:
            servers.stop()
    env = {"start": env_start, "end": environment()}
    rows = rows_of(modes, rounds)
    text = markdown(name, args, env, rows, servers.idle, loads, tops)
    print("\n" + text)
    md = RESULTS_DIR / f"{name}-security.md"
    md.write_text(text)
    record = {"settings": vars(args), "environment": env, "idle_ms_per_s": servers.idle,
              "rounds": [asdict(r) for r in rounds]}
    md.with_suffix(".json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    print(f"written to {md}")


if __name__ == "__main__":
    main()
