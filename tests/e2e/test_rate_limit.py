"""Per-tenant ingestion rate limits on a real ingester: over its burst a tenant's push is refused whole
with 429 (our /ingest, Pyroscope's push.v1 over Connect) or RESOURCE_EXHAUSTED (gRPC), names the limit and
when to retry, and writes nothing; another tenant is not slowed down."""

import gzip
import uuid

import grpc
import pytest
from e2e.cluster import Cluster

from flamewatch.api.flamewatch.v1 import ingest_pb2, ingest_pb2_grpc, types_pb2
from flamewatch.api.push.v1 import push_pb2
from flamewatch.api.types.v1 import types_pb2 as pyroscope_types_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

RATE_MB = 0.0001  # 100 bytes a second: nothing refills between the pushes of one test


def _decompressed(raw: bytes) -> int:
    return len(gzip.decompress(raw)) if raw[:2] == b"\x1f\x8b" else len(raw)


@pytest.fixture(scope="module")
def limited(cluster: Cluster, go_profiles):
    """An ingester whose burst holds two and a half goroutine profiles."""
    burst_mb = 2.5 * _decompressed(go_profiles["goroutine"]) / 1e6
    return cluster.add_ingester("rate-limited", "--limits.ingestion-rate-mb", str(RATE_MB),
                                "--limits.ingestion-burst-mb", f"{burst_mb:.6f}")


def _tenant() -> str:
    return f"rl-{uuid.uuid4().hex[:8]}"


def test_http_pushes_over_the_burst_get_429_and_write_nothing(cluster: Cluster, limited, go_profiles):
    tenant, other = _tenant(), _tenant()
    raw = go_profiles["goroutine"]

    def push(who: str, n: int):  # distinct series: the same content twice would be deduplicated
        return cluster.http.post(f"{limited.url}/ingest", params={"__name__": "goroutine", "service_name": "rl",
                                                                  "n": str(n)},
                                 content=raw, headers={"X-Scope-OrgID": who})

    assert [push(tenant, n).status_code for n in range(2)] == [200, 200]
    before = cluster.counts(tenant)
    refused = push(tenant, 2)
    assert refused.status_code == 429, refused.text
    assert 20 <= int(refused.headers["Retry-After"]) <= 30  # the missing half profile at 100 bytes a second
    assert refused.json()["error"].startswith(f"tenant '{tenant}' is over its ingestion rate limit of 0.0001 MB/s")
    assert "retry in" in refused.json()["error"]
    assert cluster.counts(tenant) == before  # nothing of the refused push was written
    assert before["profiles"] == 2
    assert push(other, 0).status_code == 200  # a bucket per tenant


def test_grpc_and_connect_pushes_over_the_burst_are_resource_exhausted(cluster: Cluster, limited, go_profiles):
    raw = go_profiles["goroutine"]
    tenant = _tenant()
    def request(n: int) -> ingest_pb2.PushRequest:
        return ingest_pb2.PushRequest(series=[ingest_pb2.RawProfileSeries(
            labels=[types_pb2.LabelPair(name="__name__", value="goroutine"),
                    types_pb2.LabelPair(name="service_name", value="rl-grpc"),
                    types_pb2.LabelPair(name="n", value=str(n))],
            samples=[ingest_pb2.RawSample(raw_profile=raw)])])

    with grpc.insecure_channel(limited.grpc_address) as channel:
        stub = ingest_pb2_grpc.IngestServiceStub(channel)
        for n in range(2):
            stub.Push(request(n), metadata=(("x-scope-orgid", tenant),), timeout=30)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Push(request(2), metadata=(("x-scope-orgid", tenant),), timeout=30)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "over its ingestion rate limit" in refused.value.details()
    assert cluster.counts(tenant)["profiles"] == 2

    tenant = _tenant()
    def body(n: int) -> bytes:
        return push_pb2.PushRequest(series=[push_pb2.RawProfileSeries(
            labels=[pyroscope_types_pb2.LabelPair(name="service_name", value="rl-connect"),
                    pyroscope_types_pb2.LabelPair(name="__name__", value="goroutine"),
                    pyroscope_types_pb2.LabelPair(name="n", value=str(n))],
            samples=[push_pb2.RawSample(raw_profile=raw)])]).SerializeToString()

    headers = {"Content-Type": "application/proto", "Connect-Protocol-Version": "1", "X-Scope-OrgID": tenant}
    answers = [cluster.http.post(f"{limited.url}/push.v1.PusherService/Push", content=body(n), headers=headers)
               for n in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429], answers[-1].text
    assert answers[-1].json()["code"] == "resource_exhausted"
    assert cluster.counts(tenant)["profiles"] == 2


SLOW = f"slow-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def one_tenant_limited(cluster: Cluster, go_profiles):
    """An ingester with no rate limit but for one tenant, given its own with --limits.tenant."""
    burst_mb = 2.5 * _decompressed(go_profiles["goroutine"]) / 1e6
    return cluster.add_ingester("one-tenant-rate-limited", "--limits.tenant", f"{SLOW}:ingestion-rate-mb={RATE_MB}",
                                "--limits.tenant", f"{SLOW}:ingestion-burst-mb={burst_mb:.6f}")


def test_a_tenant_given_its_own_rate_is_limited_and_no_other(cluster: Cluster, one_tenant_limited, go_profiles):
    raw = go_profiles["goroutine"]
    other = _tenant()

    def push(who: str, n: int):
        return cluster.http.post(f"{one_tenant_limited.url}/ingest", content=raw, headers={"X-Scope-OrgID": who},
                                 params={"__name__": "goroutine", "service_name": "rl-own", "n": str(n)})

    answers = [push(SLOW, n) for n in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429], answers[-1].text
    assert f"--limits.tenant {SLOW}:ingestion-rate-mb" in answers[-1].json()["error"]
    assert [push(other, n).status_code for n in range(8)] == [200] * 8  # everyone else: no limit
    assert (cluster.counts(SLOW)["profiles"], cluster.counts(other)["profiles"]) == (2, 8)
