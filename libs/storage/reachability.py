"""Whether a server answers: refuse requests at once while it is down, notice at once when it is back.

A connection pool left to itself retries a dead server with a doubling delay, and every request waits
its whole acquire timeout meanwhile; after an outage the pool may sleep for as long again before it
tries. `Reachability` keeps one verdict per server instead. A connection error makes the caller probe
the server with a fresh connection. While probes fail, `check()` refuses every request at once with the
last reason, and lets one caller probe again every `interval_s`, so requests resume within that interval
of the server answering again. Readiness checks call `ping()`, which probes too, so a process that gets
no requests still notices an outage and its end.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from flamewatch.storage.errors import StorageUnavailable

log = logging.getLogger(__name__)

PROBE_INTERVAL_S = 0.25


class Reachability:
    """The verdict on one server. `probe` raises `StorageUnavailable` when the server does not answer;
    `on_back` runs once each time a probe succeeds after failures (for example to drop pooled connections
    from before the outage)."""

    def __init__(self, where: str, probe: Callable[[], None], on_back: Callable[[], None],
                 interval_s: float = PROBE_INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._where, self._probe, self._on_back = where, probe, on_back
        self._interval, self._clock = interval_s, clock
        self._lock = threading.Lock()  # one probe at a time
        self._down_since: float | None = None
        self._reason = ""
        self._probed_at = float("-inf")

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def check(self) -> None:
        """Return at once while the server is taken to be up; else probe if one is due, and raise
        `StorageUnavailable` unless it answered."""
        if self._down_since is None:
            return
        if self._clock() - self._probed_at >= self._interval and self._lock.acquire(blocking=False):
            try:
                if self._clock() - self._probed_at >= self._interval:
                    self._probe_and_record()
            finally:
                self._lock.release()
        if self._down_since is not None:
            raise self.unavailable()

    def recheck(self) -> bool:
        """Probe now (or take the verdict of a probe that ended while waiting for this one); True if the
        server answers. For callers that just met a connection error."""
        asked = self._clock()
        with self._lock:
            if self._probed_at < asked:
                self._probe_and_record()
        return self._down_since is None

    def ping(self) -> None:
        """Probe now; raise `StorageUnavailable` naming the reason unless the server answers."""
        if not self.recheck():
            raise self.unavailable()

    def unavailable(self) -> StorageUnavailable:
        return StorageUnavailable(f"{self._where} unavailable: {self._reason}")

    def _probe_and_record(self) -> None:
        try:
            self._probe()
        except StorageUnavailable as exc:
            self._reason = str(exc)
            if self._down_since is None:
                self._down_since = self._clock()
                log.warning("%s does not answer (%s); refusing requests at once and probing every %.2f s",
                            self._where, exc, self._interval)
        else:
            if self._down_since is not None:
                self._on_back()
                log.warning("%s answers again after %.1f s", self._where, self._clock() - self._down_since)
                self._down_since = None
        finally:
            self._probed_at = self._clock()
