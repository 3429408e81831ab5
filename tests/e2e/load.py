"""Pushes that keep coming while a fault is injected, and the ledger of what each one was answered.

`PushLoad` runs a few threads, each pushing one profile after another to an ingester's `/ingest` with
labels `fault=<name>` and a `seq` of its own, so every stored profile traces back to exactly one push
and a duplicate shows as a `seq` stored twice. `stored_per_seq` reads what the index holds for a fault.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx
import psycopg

PUSH_TIMEOUT_S = 30.0
PAUSE_AFTER_FAILURE_S = 0.05  # a refused push returns in a millisecond; do not spin


@dataclass(frozen=True)
class Outcome:
    seq: int
    url: str
    status: int | None  # None: no answer (connection refused or cut)
    error: str
    started: float  # time.monotonic()
    ended: float

    @property
    def acked(self) -> bool:
        return self.status == 200


class PushLoad:
    """Threads pushing `body` to `urls` in turn until `stop()`; every attempt is recorded."""

    def __init__(self, urls: Sequence[str], tenant: str, fault: str, body: bytes, profile_name: str,
                 threads: int = 3) -> None:
        self.urls, self.tenant, self.fault, self.body = list(urls), tenant, fault, body
        self._name = profile_name
        self._seqs = itertools.count()
        self._lock = threading.Lock()
        self._outcomes: list[Outcome] = []
        self._stopping = threading.Event()
        self._threads = [threading.Thread(target=self._run, name=f"push-{fault}-{i}", daemon=True)
                         for i in range(threads)]

    def __enter__(self) -> PushLoad:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> list[Outcome]:
        self._stopping.set()
        for thread in self._threads:
            thread.join(PUSH_TIMEOUT_S + 5)
        return self.outcomes()

    def outcomes(self) -> list[Outcome]:
        with self._lock:
            return sorted(self._outcomes, key=lambda o: o.seq)

    def count(self, predicate: Callable[[Outcome], bool]) -> int:
        with self._lock:
            return sum(1 for o in self._outcomes if predicate(o))

    def wait(self, predicate: Callable[[Outcome], bool], count: int, timeout_s: float, what: str) -> None:
        """Wait until `count` more outcomes than now satisfy `predicate`."""
        target = self.count(predicate) + count
        deadline = time.monotonic() + timeout_s
        while self.count(predicate) < target:
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout_s} s waiting for {count} {what}; "
                                     f"answers so far: {self.summary()}")
            time.sleep(0.02)

    def summary(self) -> dict[str, int]:
        return dict(Counter(str(o.status) for o in self.outcomes()))

    def _run(self) -> None:
        with httpx.Client(timeout=PUSH_TIMEOUT_S) as client:
            while not self._stopping.is_set():
                outcome = self._push(client)
                with self._lock:
                    self._outcomes.append(outcome)
                if not outcome.acked:
                    time.sleep(PAUSE_AFTER_FAILURE_S)

    def _push(self, client: httpx.Client) -> Outcome:
        with self._lock:
            seq = next(self._seqs)
        url = self.urls[seq % len(self.urls)]
        params = {"__name__": self._name, "fault": self.fault, "seq": str(seq)}
        started = time.monotonic()
        try:
            r = client.post(f"{url}/ingest", params=params, content=self.body, headers={"X-Scope-OrgID": self.tenant})
        except httpx.HTTPError as exc:
            return Outcome(seq, url, None, f"{type(exc).__name__}: {exc}", started, time.monotonic())
        error = "" if r.status_code == 200 else r.json().get("error", r.text)
        return Outcome(seq, url, r.status_code, error, started, time.monotonic())


def stored_per_seq(dsn: str, tenant: str, fault: str) -> Counter[int]:
    """How many profiles the index holds for each `seq` of a fault."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.labels->>'seq', sum(bs.profiles) FROM index_series bs JOIN series s ON s.id = bs.series_id"
            " WHERE s.tenant = %s AND s.labels->>'fault' = %s GROUP BY 1", (tenant, fault)).fetchall()
    return Counter({int(seq): n for seq, n in rows})
