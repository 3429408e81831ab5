"""What a connection costs the server, apart from what it carries: `security_cost.py`'s measure of the
TLS handshake, without the ~12 ms of ingest work a push brings along.

Each mode's server is sent requests that do almost nothing, one after the other (closed loop): for HTTP
`GET /nothing-here` with the mode's credential (checked, then answered 404), for gRPC a call of a method
the server does not have (answered UNIMPLEMENTED: the connection and its handshake, not the credential).
Once over a connection kept open, once with a new connection (`Connection: close`; for gRPC a new
channel) per request. The server's CPU per request (utime + stime from /proc) for the two clients, and
their difference: what opening, securing and closing one connection costs. The modes take turns in
batches (`BATCH` requests each), so the machine's load falls on all of them alike; the figure is the
median over the batches.
"""

from __future__ import annotations

import ssl
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
from demo_cost import cpu_seconds

BATCH = 100  # requests per batch: ~0.1-0.2 s of server CPU, 10-20 clock ticks of /proc's 10 ms
WARM = 10
NOTHING = "/nothing-here"
GRPC_NOTHING = "/flamewatch.bench.Nothing/Here"
CLIENTS = ("kept open", "new per request")


@dataclass(frozen=True)
class Target:
    """One mode's server, as a client of it needs it."""

    name: str
    protocol: str  # "http" or "grpc"
    pid: int
    address: str  # an http(s) base URL, or a gRPC host:port
    tls: ssl.SSLContext | None = None  # HTTPS: what the client trusts
    ca: Path | None = None  # gRPC over TLS: the CA the client trusts
    authorization: str | None = None


@dataclass
class Cost:
    target: Target
    kept_open: list[float] = field(default_factory=list)  # server CPU ms per request, one per batch
    new: list[float] = field(default_factory=list)

    @property
    def per_connection(self) -> float:
        return statistics.median(self.new) - statistics.median(self.kept_open)


def _http_sender(target: Target, new: bool) -> tuple[Callable[[], None], Callable[[], None]]:
    headers = {"Authorization": target.authorization} if target.authorization else {}
    if new:
        headers["Connection"] = "close"
    client = httpx.Client(headers=headers, verify=target.tls or True, timeout=30,
                          limits=httpx.Limits(max_keepalive_connections=0 if new else 1))

    def send() -> None:
        answer = client.get(target.address + NOTHING)
        if answer.status_code != 404:
            raise RuntimeError(f"{target.name}: {NOTHING} answered {answer.status_code}, not 404: {answer.text[:200]}")

    return send, client.close


def _grpc_sender(target: Target, new: bool) -> tuple[Callable[[], None], Callable[[], None]]:
    credentials = grpc.ssl_channel_credentials(target.ca.read_bytes()) if target.ca else None
    metadata = (("authorization", target.authorization),) if target.authorization else ()

    def channel() -> grpc.Channel:
        options = [("grpc.use_local_subchannel_pool", 1)]
        if credentials is None:
            return grpc.insecure_channel(target.address, options=options)
        return grpc.secure_channel(target.address, credentials, options=options)

    shared = None if new else channel()

    def send() -> None:
        used = shared or channel()
        try:
            used.unary_unary(GRPC_NOTHING)(b"", metadata=metadata, timeout=30)
        except grpc.RpcError as exc:
            if exc.code() is not grpc.StatusCode.UNIMPLEMENTED:
                raise
        finally:
            if shared is None:
                used.close()

    return send, (shared.close if shared is not None else lambda: None)


def _batch(target: Target, new: bool, count: int) -> float:
    """Server CPU ms per request over `count` requests of one client."""
    send, close = (_grpc_sender if target.protocol == "grpc" else _http_sender)(target, new)
    try:
        for _ in range(WARM):
            send()
        before = cpu_seconds(target.pid)
        for _ in range(count):
            send()
        return 1e3 * (cpu_seconds(target.pid) - before) / count
    finally:
        close()


def measure(targets: list[Target], batches: int, count: int = BATCH) -> list[Cost]:
    """`batches` batches of `count` requests per target and client, the targets taking turns."""
    costs = [Cost(t) for t in targets]
    for turn in range(batches):
        first = turn % len(costs)
        for cost in costs[first:] + costs[:first]:
            cost.kept_open.append(_batch(cost.target, False, count))
            cost.new.append(_batch(cost.target, True, count))
    return costs


def table(costs: list[Cost], push_ms: dict[str, float]) -> str:
    """`push_ms`: the server CPU ms of one push with a new connection, by protocol, to say what the
    connection's extra cost is worth against a push."""
    plain = {c.target.protocol: c.per_connection for c in costs if c.target.authorization is None
             and c.target.tls is None and c.target.ca is None}
    lines = ["| mode | ms per request, connection kept open | ms per request, new connection | a new connection "
             "costs (ms) | more than the plain one (ms) | that, against a push (%) |", "|---|---|---|---|---|---|"]
    for cost in costs:
        base = plain.get(cost.target.protocol)
        extra = None if base is None else cost.per_connection - base
        push = push_ms.get(cost.target.protocol)
        lines.append(f"| {cost.target.name} | {statistics.median(cost.kept_open):.3f} | "
                     f"{statistics.median(cost.new):.3f} | {cost.per_connection:.3f} | "
                     f"{'' if extra is None else f'{extra:+.3f}'} | "
                     f"{'' if extra is None or not push else f'{100 * extra / push:+.1f}'} |")
    return "\n".join(lines)
