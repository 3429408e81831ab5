"""The collector's sender against a real ingester, and against one that stays down."""

import asyncio
import gzip
import logging
import socket

import httpx
import pytest
from e2e.cluster import Cluster
from prometheus_client import REGISTRY

from flamewatch.collector.sender import Sender

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]


def dropped(reason: str) -> float:
    return REGISTRY.get_sample_value("flamewatch_collector_dropped_profiles_total", {"reason": reason}) or 0.0


async def send(address: str, items, *, queue_size: int = 100, wait_s: float = 10.0, max_batch: int = 200) -> int:
    """Submit items, let the sender run for up to wait_s, and return what was still unacknowledged."""
    sender = Sender(address, tenant="e2e-sender", queue_size=queue_size, max_backoff_s=0.2, max_batch=max_batch)
    for labels, raw in items:
        sender.submit(labels, raw)
    task = asyncio.create_task(sender.run())
    await sender.flush(wait_s)
    pending = sender.pending()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return pending


def test_queued_profiles_reach_the_ingester(cluster: Cluster, go_profiles):
    before = cluster.counts("e2e-sender")
    items = [({"service_name": "sender", "__name__": "goroutine", "n": str(i)}, go_profiles["goroutine"])
             for i in range(5)]
    assert asyncio.run(send(cluster.ingester_grpc, items)) == 0
    after = cluster.counts("e2e-sender")
    assert after["profiles"] - before["profiles"] == 5
    assert after["series"] - before["series"] == 5


def ingested(url: str, tenant: str) -> float:
    """The ingester's own count of typed profiles it stored for the tenant, from its /metrics."""
    pattern = f'flamewatch_ingested_profiles_total{{tenant="{tenant}"}} '
    lines = [line for line in httpx.get(f"{url}/metrics").text.splitlines() if line.startswith(pattern)]
    return float(lines[0].split()[-1]) if lines else 0.0


def test_batches_are_spread_over_every_ingester_address(cluster: Cluster, go_profiles):
    second = cluster.add_ingester("ingester-b")
    first_url, second_url = cluster.ingester_url, second.url
    before = ingested(first_url, "e2e-sender"), ingested(second_url, "e2e-sender")
    items = [({"service_name": "spread", "__name__": "goroutine", "n": str(i)}, go_profiles["goroutine"])
             for i in range(12)]
    address = f"ipv4:{cluster.ingester_grpc},{second.grpc_address}"
    assert asyncio.run(send(address, items, max_batch=1)) == 0
    first, second_count = (ingested(first_url, "e2e-sender") - before[0],
                           ingested(second_url, "e2e-sender") - before[1])
    assert first + second_count == 12
    assert first >= 3 and second_count >= 3, (first, second_count)


def test_a_rate_limited_batch_waits_its_turn_and_is_not_dropped(cluster: Cluster, go_profiles):
    """The ingester's rate limit passes two profiles at once and about one a second after: the sender
    holds the rest, waits what the ingester's `retry-after` says, and gets every profile stored."""
    raw = go_profiles["goroutine"]
    size_mb = (len(gzip.decompress(raw)) if raw[:2] == b"\x1f\x8b" else len(raw)) / 1e6
    limited = cluster.add_ingester("sender-rate-limited", "--limits.ingestion-rate-mb", f"{size_mb:.6f}",
                                   "--limits.ingestion-burst-mb", f"{2 * size_mb:.6f}")
    before = cluster.counts("e2e-sender")
    deferred = REGISTRY.get_sample_value("flamewatch_collector_rate_limited_profiles_total") or 0.0
    refused = dropped("refused")
    items = [({"service_name": "rate", "__name__": "goroutine", "n": str(i)}, raw) for i in range(5)]
    assert asyncio.run(send(limited.grpc_address, items, max_batch=1, wait_s=20)) == 0
    assert cluster.counts("e2e-sender")["profiles"] - before["profiles"] == 5
    assert (REGISTRY.get_sample_value("flamewatch_collector_rate_limited_profiles_total") or 0.0) > deferred
    assert dropped("refused") == refused


def test_a_refused_profile_is_dropped_not_retried(cluster: Cluster, caplog):
    refused = dropped("refused")
    with caplog.at_level(logging.WARNING, "flamewatch.collector.sender"):
        pending = asyncio.run(send(cluster.ingester_grpc, [({"__name__": "goroutine"}, b"garbage")], wait_s=5))
    assert pending == 0
    assert dropped("refused") - refused == 1
    assert "the ingester refused 1 profiles: not a pprof profile: the data is neither gzip-compressed nor a " \
        "valid protobuf message" in caplog.text


def test_when_the_ingester_stays_down_the_oldest_profiles_are_dropped(caplog):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"  # nothing listens once closed
    full = dropped("queue_full")
    items = [({"__name__": "goroutine", "n": str(i)}, b"x") for i in range(7)]
    with caplog.at_level(logging.WARNING, "flamewatch.collector.sender"):
        pending = asyncio.run(send(address, items, queue_size=4, wait_s=1.0))
    assert dropped("queue_full") - full == 3
    assert pending == 4  # the 4 newest, in flight and retrying
    assert caplog.text.count("is not keeping up") == 1  # one line, not one per drop
    assert f"the ingester at {address} is not keeping up: dropped the oldest queued profile (the queue holds 4)" \
        in caplog.text
