"""The ingester's per-tenant token buckets, on a clock the test moves."""

import pytest

from flamewatch.ingester.ratelimit import TenantRateLimiter
from flamewatch.rpc.errors import RateLimited, status_of

LIMIT = (1000, 3000)  # bytes per second, burst


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_tenant_may_push_its_burst_at_once_then_its_rate():
    clock = Clock()
    limiter = TenantRateLimiter(clock=clock)
    for _ in range(3):
        limiter.take("a", 1000, *LIMIT)
    clock.now += 0.5
    with pytest.raises(RateLimited, match=r"tenant 'a' is over its ingestion rate limit of 0.001 MB/s .*retry in 0.5 s"
                       ) as refused:
        limiter.take("a", 1000, *LIMIT)
    assert refused.value.retry_after_s == pytest.approx(0.5)
    clock.now += 0.5  # one second since the bucket emptied: 1000 bytes back; the refusal took nothing
    limiter.check("a", 1000, *LIMIT)  # checking takes nothing either
    limiter.take("a", 1000, *LIMIT)
    with pytest.raises(RateLimited):
        limiter.take("a", 1, *LIMIT)
    clock.now += 1000  # a long pause refills up to the burst, not beyond
    limiter.take("a", 3000, *LIMIT)
    with pytest.raises(RateLimited):
        limiter.take("a", 1, *LIMIT)


def test_tenants_have_buckets_and_limits_of_their_own():
    limiter = TenantRateLimiter(clock=Clock())
    limiter.take("a", 1000, 1000, 1000)
    limiter.take("b", 1000, 1000, 1000)
    limiter.take("big", 50_000, 10_000, 100_000)
    with pytest.raises(RateLimited):
        limiter.take("a", 1, 1000, 1000)
    limiter.take("big", 50_000, 10_000, 100_000)


def test_a_push_larger_than_the_burst_says_it_can_never_pass():
    limiter = TenantRateLimiter(clock=Clock())
    with pytest.raises(RateLimited, match=r"a push of 2 MB is larger than the ingestion burst of 1.5 MB and can "
                                          r"never be accepted"):
        limiter.take("a", 2_000_000, 1000, 1_500_000)
    limiter.take("a", 1_500_000, 1000, 1_500_000)  # the refusal took nothing


def test_buckets_that_refilled_are_dropped_as_tenants_come_and_go():
    clock = Clock()
    limiter = TenantRateLimiter(clock=clock)
    for i in range(5000):
        limiter.take(f"t{i}", 1000, 1000, 2000)  # each bucket is full again a second later
        clock.now += 0.001
    assert len(limiter) <= 2048
    limiter.take("t4999", 1000, 1000, 2000)  # the bucket still refilling was kept: this empties it
    with pytest.raises(RateLimited):
        limiter.take("t4999", 2, 1000, 2000)


def test_a_refusal_is_resource_exhausted_and_http_429():
    status = status_of(RateLimited("slow down"))
    assert (status.grpc_code.name, status.http_status) == ("RESOURCE_EXHAUSTED", 429)


@pytest.mark.parametrize(("rate", "burst"), [(0, 10), (10, 0), (-1, 10)])
def test_rate_and_burst_must_be_positive(rate, burst):
    with pytest.raises(ValueError, match="must be positive"):
        TenantRateLimiter().take("a", 1, rate, burst)
