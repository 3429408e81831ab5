"""Per-tenant limits that need state across pushes: the ingestion rate and the number of active series.

`TenantRateLimiter`: a token bucket of decompressed pprof bytes for each tenant.

A bucket holds at most `burst` bytes and refills at `rate` bytes per second; a push takes its size from
its tenant's bucket or is refused whole with `RateLimited` (RESOURCE_EXHAUSTED over gRPC, HTTP 429, which
the Pyroscope SDKs and Grafana Alloy treat as "slow down"). Nothing of a refused push is written, and a
refused push takes nothing from the bucket. A push larger than the burst can never pass: its message
says so, since retrying would not help. The limiter is used from the event loop only, so it needs no lock.

`SeriesLimiter`: a push that would create series beyond the tenant's `max_series` is refused whole (429 /
RESOURCE_EXHAUSTED, as Pyroscope answers its series limit); pushes to existing series always pass. The
count is of the series in Postgres with a profile in the last hour, shared by every ingester, and cached
for a few seconds: it is read again at most every `COUNT_TTL_S` per tenant, and the series each accepted
push creates are added to it at once, so a burst cannot slip many series past the limit between reads.
Ingesters running side by side may each let a few through before they see each other's: the limit is
approximate by that much, like Pyroscope's global series limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Set
from dataclasses import dataclass

from flamewatch.rpc.errors import RateLimited
from flamewatch.storage.index import active_series, known_series
from flamewatch.storage.postgres import Database

MB = 1_000_000


@dataclass
class _Bucket:
    tokens: float
    at: float


class TenantRateLimiter:
    def __init__(self, rate_bytes_s: float, burst_bytes: float, clock: Callable[[], float] = time.monotonic):
        if rate_bytes_s <= 0 or burst_bytes <= 0:
            raise ValueError("the ingestion rate and burst must be positive (leave the limiter out for no limit)")
        self.rate, self.burst, self._clock = rate_bytes_s, burst_bytes, clock
        self._buckets: dict[str, _Bucket] = {}

    def take(self, tenant: str, nbytes: int) -> None:
        """Take `nbytes` from the tenant's bucket, or raise RateLimited and take nothing."""
        now = self._clock()
        bucket = self._buckets.get(tenant)
        if bucket is None:
            bucket = self._buckets[tenant] = _Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate)
        bucket.at = now
        if nbytes > self.burst:
            raise RateLimited(f"tenant {tenant!r}: a push of {nbytes / MB:.3g} MB is larger than the ingestion "
                              f"burst of {self.burst / MB:.3g} MB and can never be accepted; send smaller pushes "
                              "or raise --limits.ingestion-burst-mb")
        if nbytes > bucket.tokens:
            wait_s = (nbytes - bucket.tokens) / self.rate
            raise RateLimited(f"tenant {tenant!r} is over its ingestion rate limit of {self.rate / MB:.3g} MB/s "
                              f"(burst {self.burst / MB:.3g} MB): push refused, retry in {wait_s:.1f} s "
                              "(--limits.ingestion-rate-mb raises the limit)", retry_after_s=wait_s)
        bucket.tokens -= nbytes


ACTIVE_WINDOW_NS = 3600 * 10**9  # a series is active while it has a profile in the last hour
COUNT_TTL_S = 10.0


class SeriesLimiter:
    """Used from worker threads (it reads Postgres), so its caches are guarded by a lock."""

    def __init__(self, db: Database, clock: Callable[[], float] = time.monotonic):
        self._db, self._clock = db, clock
        self._lock = threading.Lock()
        self._known: dict[str, set[int]] = {}  # fingerprints seen in Postgres: no lookup for them again
        self._counts: dict[str, tuple[float, int]] = {}  # tenant -> (read at, active series)

    def check(self, tenant: str, fingerprints: Set[int], limit: int, now_ns: int) -> None:
        """Raise RateLimited if the series new among `fingerprints` would take the tenant over `limit`."""
        if limit <= 0:
            return
        with self._lock:
            unknown = set(fingerprints) - self._known.get(tenant, set())
        if not unknown:
            return
        existing = known_series(self._db, tenant, list(unknown))
        self._remember(tenant, existing, limit)
        new = len(unknown - existing)
        if not new:
            return
        self._refresh_count(tenant, now_ns)
        with self._lock:
            at, count = self._counts[tenant]  # under the lock: other pushes' new series are in it
            if count + new > limit:
                raise RateLimited(f"tenant {tenant!r} has {count} active series (with a profile in the last hour) "
                                  f"and this push would add {new}: the limit is {limit} (--limits.max-series, or "
                                  f"--limits.tenant {tenant}:max-series=N for this tenant); pushes to existing "
                                  "series still pass")
            self._counts[tenant] = (at, count + new)

    def _remember(self, tenant: str, existing: set[int], limit: int) -> None:
        with self._lock:
            known = self._known.setdefault(tenant, set())
            if len(known) > 2 * limit:  # series that went inactive: start again rather than grow for ever
                known.clear()
            known |= existing

    def _refresh_count(self, tenant: str, now_ns: int) -> None:
        with self._lock:
            cached = self._counts.get(tenant)
        if cached is None or self._clock() - cached[0] >= COUNT_TTL_S:
            count = active_series(self._db, tenant, now_ns - ACTIVE_WINDOW_NS)
            with self._lock:
                self._counts[tenant] = (self._clock(), count)
