"""Calling the services from the e2e tests: REST and ingest requests, gRPC calls and their errors.

Every helper takes the `Cluster` so requests go through its one HTTP client and its gRPC channels.
"""

from __future__ import annotations

import gzip
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import grpc
import httpx
import pytest
from e2e.cluster import FLUSH_INTERVAL_S, Cluster

from flamewatch.api.flamewatch.v1 import ingest_pb2, types_pb2

TIMEOUT_S = 30
HOUR_NS = 3600 * 10**9
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"


@dataclass(frozen=True)
class Window:
    """A time range in whole milliseconds, so REST (ms) and gRPC (ns) ask for exactly the same one."""

    start_ns: int
    end_ns: int

    @classmethod
    def around(cls, *times_ns: int) -> Window:
        """From an hour before the earliest time to an hour from now."""
        return cls((min(times_ns) - HOUR_NS) // 10**6 * 10**6, (time.time_ns() + HOUR_NS) // 10**6 * 10**6)

    def rest(self) -> dict[str, str]:
        return {"from": str(self.start_ns // 10**6), "until": str(self.end_ns // 10**6)}

    def grpc(self) -> types_pb2.TimeRange:
        return types_pb2.TimeRange(start_ns=self.start_ns, end_ns=self.end_ns)


def metadata(tenant: str | None) -> tuple[tuple[str, str], ...] | None:
    return (("x-scope-orgid", tenant),) if tenant else None


def tenant_header(tenant: str | None) -> dict[str, str]:
    return {"X-Scope-OrgID": tenant} if tenant else {}


def rest(cluster: Cluster, path: str, tenant: str | None, params: dict | None = None, status: int = 200) -> dict:
    """GET /api/v1<path> from the querier; asserts the status and returns the JSON body."""
    r = cluster.http.get(f"{cluster.querier_url}/api/v1{path}", params=params, headers=tenant_header(tenant))
    assert r.status_code == status, r.text
    return r.json()


HEAP = "memory:inuse_space:bytes:space:bytes"


def merge_answers(url: str, tenant: str, windows: dict[str, tuple[int, int]],
                  formats: tuple[str, ...] = ("flamegraph", "top", "tree")) -> dict:
    """GET /api/v1/query of the querier at `url` for CPU and the in-use memory gauge, over every selector
    shape (all series, one series, a sample label filter), window and format: what tests compare."""
    out = {}
    for ptype in (CPU, HEAP):
        for selector in ("{}", '{instance="a"}', '{handler="/hash"}'):
            for name, (start, end) in windows.items():
                params = {"query": ptype + selector, "from": str(start // 10**6), "until": str(end // 10**6),
                          "max_nodes": "100000"}
                for fmt in formats:
                    r = httpx.get(f"{url}/api/v1/query", params={**params, "format": fmt},
                                  headers=tenant_header(tenant), timeout=60)
                    assert r.status_code == 200, r.text
                    out[ptype, selector, name, fmt] = r.json()
    return out


def ingest(cluster: Cluster, tenant: str | None, params: dict, body: bytes, url: str | None = None) -> httpx.Response:
    """POST /ingest to the cluster's ingester (or the one at `url`)."""
    return cluster.http.post(f"{url or cluster.ingester_url}/ingest", params=params, content=body,
                             headers=tenant_header(tenant))


def grpc_error(method, request, tenant: str | None = None, timeout: float = TIMEOUT_S) -> grpc.RpcError:
    """The error a gRPC call must fail with."""
    with pytest.raises(grpc.RpcError) as info:
        method(request, metadata=metadata(tenant), timeout=timeout)
    return info.value


def raw_series(labels: dict[str, str], *samples: tuple[str, bytes]) -> ingest_pb2.RawProfileSeries:
    """One series of a PushRequest: labels and (client id, pprof bytes) samples."""
    return ingest_pb2.RawProfileSeries(
        labels=[types_pb2.LabelPair(name=k, value=v) for k, v in labels.items()],
        samples=[ingest_pb2.RawSample(id=i, raw_profile=data) for i, data in samples])


def type_json(type_id: str) -> dict[str, str]:
    """A profile type as REST lists it."""
    keys = ("name", "sample_type", "sample_unit", "period_type", "period_unit")
    return {"id": type_id, **dict(zip(keys, type_id.split(":"), strict=True))}


def unpacked_size(data: bytes) -> int:
    return len(gzip.decompress(data))


def rfc3339(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def stored_state(cluster: Cluster) -> tuple[dict[str, int], list[str]]:
    """Rows and objects now (every accepted push is durable by the time it is acknowledged)."""
    return cluster.counts(), cluster.objects()


def settled(cluster: Cluster) -> tuple[dict[str, int], list[str]]:
    """Rows and objects once any flush a refused push could wrongly have started would be over."""
    time.sleep(3 * FLUSH_INTERVAL_S)
    return stored_state(cluster)
