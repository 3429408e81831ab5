"""Queries timed at the client, request to full JSON body, as the benchmarks that answer queries time
them (`storage.py`, `long_range.py`); a service is anything with the `url` it answers at."""

from __future__ import annotations

import statistics
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


def timed(service, query: Query) -> tuple[float, int]:
    """Seconds to the full answer, and the profiles it merged (the series of a query_range)."""
    started = time.perf_counter()
    response = httpx.get(service.url + query.path, params=query.params, timeout=900)
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
