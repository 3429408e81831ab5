"""Per-tenant limits that need state across pushes: the ingestion rate and the number of active series.

`TenantRateLimiter`: a token bucket of decompressed pprof bytes for each tenant.

A bucket holds at most `burst` bytes and refills at `rate` bytes per second, both the tenant's own
(`--limits.tenant acme:ingestion-rate-mb=20`) or everyone's; a push takes its size from its tenant's
bucket or is refused whole with `RateLimited` (RESOURCE_EXHAUSTED over gRPC, HTTP 429, which the
Pyroscope SDKs and Grafana Alloy treat as "slow down"). Nothing of a refused push is written, and a
refused push takes nothing from the bucket. A push larger than the burst can never pass: its message
says so, since retrying would not help. `check` refuses early, on the compressed size, a push that
cannot fit, so a tenant flooding past its limit does not make the ingester decompress what it will
refuse. The limiter is used from the event loop only, so it needs no lock.

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
    full_at: float = 0.0  # when it will hold its whole burst again: from then on it is as good as a new one


class TenantRateLimiter:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._prune_above = 1024  # buckets kept before the full ones are dropped: tenants come and go

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, tenant: str, nbytes: int, rate_bytes_s: float, burst_bytes: float) -> None:
        """Take `nbytes` from the tenant's bucket, or raise RateLimited and take nothing."""
        bucket = self.check(tenant, nbytes, rate_bytes_s, burst_bytes)
        bucket.tokens -= nbytes
        bucket.full_at = bucket.at + (burst_bytes - bucket.tokens) / rate_bytes_s
        if len(self._buckets) > self._prune_above:
            now = bucket.at
            self._buckets = {t: b for t, b in self._buckets.items() if b.full_at > now}
            self._prune_above = max(1024, 2 * len(self._buckets))

    def check(self, tenant: str, nbytes: int, rate_bytes_s: float, burst_bytes: float) -> _Bucket:
        """Raise RateLimited if `nbytes` cannot be taken from the tenant's bucket now; take nothing."""
        if rate_bytes_s <= 0 or burst_bytes <= 0:
            raise ValueError("the ingestion rate and burst must be positive (no rate limit: do not call the limiter)")
        now = self._clock()
        bucket = self._buckets.get(tenant)
        if bucket is None:
            bucket = self._buckets[tenant] = _Bucket(burst_bytes, now)
        bucket.tokens = min(burst_bytes, bucket.tokens + (now - bucket.at) * rate_bytes_s)
        bucket.at = now
        if nbytes > burst_bytes:
            raise RateLimited(f"tenant {tenant!r}: a push of {nbytes / MB:.3g} MB is larger than the ingestion "
                              f"burst of {burst_bytes / MB:.3g} MB and can never be accepted; send smaller pushes "
                              f"or raise --limits.ingestion-burst-mb (or --limits.tenant {tenant}:ingestion-burst-mb)")
        if nbytes > bucket.tokens:
            wait_s = (nbytes - bucket.tokens) / rate_bytes_s
            raise RateLimited(f"tenant {tenant!r} is over its ingestion rate limit of {rate_bytes_s / MB:.3g} MB/s "
                              f"(burst {burst_bytes / MB:.3g} MB): push refused, retry in {wait_s:.1f} s "
                              f"(--limits.ingestion-rate-mb, or --limits.tenant {tenant}:ingestion-rate-mb, raises "
                              "the limit)", retry_after_s=wait_s)
        return bucket


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
