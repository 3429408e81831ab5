"""The ingester's per-tenant token buckets, on a clock the test moves."""

import pytest

from flamewatch.ingester.ratelimit import TenantRateLimiter
from flamewatch.rpc.errors import RateLimited, status_of


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_tenant_may_push_its_burst_at_once_then_its_rate():
    clock = Clock()
    limiter = TenantRateLimiter(rate_bytes_s=1000, burst_bytes=3000, clock=clock)
    for _ in range(3):
        limiter.take("a", 1000)
    clock.now += 0.5
    with pytest.raises(RateLimited, match=r"tenant 'a' is over its ingestion rate limit of 0.001 MB/s .*retry in 0.5 s"
                       ) as refused:
        limiter.take("a", 1000)
    assert refused.value.retry_after_s == pytest.approx(0.5)
    clock.now += 0.5  # one second since the bucket emptied: 1000 bytes back; the refusal took nothing
    limiter.take("a", 1000)
    with pytest.raises(RateLimited):
        limiter.take("a", 1)
    clock.now += 1000  # a long pause refills up to the burst, not beyond
    limiter.take("a", 3000)
    with pytest.raises(RateLimited):
        limiter.take("a", 1)


def test_tenants_have_buckets_of_their_own():
    limiter = TenantRateLimiter(rate_bytes_s=1000, burst_bytes=1000, clock=Clock())
    limiter.take("a", 1000)
    limiter.take("b", 1000)
    with pytest.raises(RateLimited):
        limiter.take("a", 1)


def test_a_push_larger_than_the_burst_says_it_can_never_pass():
    limiter = TenantRateLimiter(rate_bytes_s=1000, burst_bytes=1_500_000, clock=Clock())
    with pytest.raises(RateLimited, match=r"a push of 2 MB is larger than the ingestion burst of 1.5 MB and can "
                                          r"never be accepted"):
        limiter.take("a", 2_000_000)
    limiter.take("a", 1_500_000)  # the refusal took nothing


def test_a_refusal_is_resource_exhausted_and_http_429():
    status = status_of(RateLimited("slow down"))
    assert (status.grpc_code.name, status.http_status) == ("RESOURCE_EXHAUSTED", 429)


@pytest.mark.parametrize(("rate", "burst"), [(0, 10), (10, 0), (-1, 10)])
def test_rate_and_burst_must_be_positive(rate, burst):
    with pytest.raises(ValueError, match="must be positive"):
        TenantRateLimiter(rate, burst)
