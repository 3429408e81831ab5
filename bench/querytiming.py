"""Queries timed at the client, request to full JSON body, as the benchmarks that answer queries time
them (`storage.py`, `long_range.py`); a service is anything with the `url` it answers at.

Each thread asks over its own kept-alive connection to each service, as a browser or Grafana does: a new
`httpx.Client` per query spent about 15 ms of the client's CPU (building its TLS context, even for a
plain-HTTP URL) inside every timed query."""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass

import httpx
import numpy as np

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"


@dataclass(frozen=True)
class Query:
    name: str
    path: str
    params: dict[str, str]


def flamegraph(name: str, selector: str, start_ns: int, end_ns: int) -> Query:
    return Query(name, "/api/v1/query", {"query": f"{CPU}{selector}", "from": str(start_ns), "until": str(end_ns),
                                         "format": "flamegraph"})


_threads = threading.local()


def client(url: str) -> httpx.Client:
    """This thread's client of the service at `url` (a restarted service on the same address is reached
    anew: the pool drops a connection its server closed)."""
    clients = _threads.__dict__.setdefault("clients", {})
    if url not in clients:
        clients[url] = httpx.Client(timeout=900)
    return clients[url]


def timed(service, query: Query) -> tuple[float, int]:
    """Seconds to the full answer, and the profiles it merged (the series of a query_range)."""
    http = client(service.url)
    started = time.perf_counter()
    response = http.get(service.url + query.path, params=query.params)
    seconds = time.perf_counter() - started
    response.raise_for_status()
    body = response.json()
    return seconds, body.get("profiles", len(body.get("series", [])))


def warm(service, query: Query, runs: int) -> tuple[list[float], int]:
    timed(service, query)  # fills the cache
    results = [timed(service, query) for _ in range(runs)]
    return [s for s, _ in results], results[-1][1]


def once(work):
    """`work` the first time, a short sleep every time after: a cold query profiled on its own."""
    calls = []

    def call() -> None:
        if calls:
            time.sleep(0.1)
        else:
            calls.append(work())
    return call


def stats(times: list[float]) -> tuple[float, float]:
    """Median and p95, in ms."""
    return 1e3 * statistics.median(times), 1e3 * float(np.quantile(times, 0.95))


def ms(times: list[float]) -> str:
    median, p95 = stats(times)
    return f"{fmt_ms(median)} (p95 {fmt_ms(p95)})"


def fmt_ms(ms: float) -> str:
    return f"{ms / 1e3:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"
