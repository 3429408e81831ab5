"""Per-tenant ingestion rate limits: a token bucket of decompressed pprof bytes for each tenant.

A bucket holds at most `burst` bytes and refills at `rate` bytes per second; a push takes its size from
its tenant's bucket or is refused whole with `RateLimited` (RESOURCE_EXHAUSTED over gRPC, HTTP 429, which
the Pyroscope SDKs and Grafana Alloy treat as "slow down"). Nothing of a refused push is written, and a
refused push takes nothing from the bucket. A push larger than the burst can never pass: its message
says so, since retrying would not help. The limiter is used from the event loop only, so it needs no lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from flamewatch.rpc.errors import RateLimited

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
