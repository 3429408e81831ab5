"""Cost before work in a `flamewatch querier` process on real Postgres and MinIO: `AnalyzeQuery` (REST
`/api/v1/analyze`, gRPC `QueryService.AnalyzeQuery`, Connect `querier.v1.QuerierService/AnalyzeQuery`)
tells what a query would read, and `--query.max-bytes` refuses a query over it in every API, except for
a tenant whose `--query.max-bytes-tenant` lifts it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import httpx
import pytest
from e2e.cluster import Service, Storage
from e2e.pushes import rewritten

from flamewatch.api.flamewatch.v1 import query_pb2, query_pb2_grpc, types_pb2
from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.ingester.writer import BlockWriter
from flamewatch.querier.cost import size
from flamewatch.storage.objstore import S3Config, open_object_store
from flamewatch.storage.postgres import PostgresConfig, open_database

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
LIMIT = 1000  # bytes: less than any block
MIN = 60 * 10**9
BLOCKS = 4


@pytest.fixture(scope="module")
def stored(e2e_storage: Storage, go_profiles) -> dict[str, int]:
    """Four blocks of one CPU profile each for tenants "poor" and "rich"; the bytes of each tenant's blocks."""
    s = e2e_storage
    store = open_object_store(S3Config(s.bucket, s.minio.endpoint, s.minio.access_key, s.minio.secret_key,
                                       insecure=True))
    db = open_database(PostgresConfig(dsn=s.dsn, pool_min=1, pool_max=2))
    now = time.time_ns()
    try:
        for tenant in ("poor", "rich"):
            for i in range(BLOCKS):
                t = now - (i + 1) * MIN
                prepared = prepare({"service_name": "api"}, rewritten(go_profiles["cpu"], time_ns=t), IngestLimits(), t)
                BlockWriter(store, db).write(tenant, prepared.entries)
        with db.connection() as conn:
            return dict(conn.execute("SELECT tenant, sum(bytes)::bigint FROM blocks GROUP BY tenant").fetchall())
    finally:
        db.close()
        store.close()


@pytest.fixture(scope="module")
def querier(e2e_storage: Storage, stored, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    service = Service("querier", "querier", e2e_storage, tmp_path_factory.mktemp("cost") / "querier.log",
                      ("--query.max-bytes", str(LIMIT), "--query.max-bytes-tenant", "rich=0"))
    service.start()
    try:
        yield service
    finally:
        assert service.stop() == 0, service.log_text()


def refused(total: int) -> str:
    return (f"the query would read {BLOCKS} blocks of {size(total)} ({BLOCKS} profiles of 1 series), more than "
            f"the {size(LIMIT)} a query of tenant poor may read (--query.max-bytes): narrow it with a shorter time "
            "range or a more specific selector, or raise the limit (--query.max-bytes, or --query.max-bytes-tenant "
            "for this tenant)")


def get(querier: Service, path: str, tenant: str, **params) -> httpx.Response:
    return httpx.get(f"{querier.url}/api/v1/{path}", params={"from": "now-1h", **params},
                     headers={"X-Scope-OrgID": tenant}, timeout=60)


def test_rest_analyze_tells_what_the_query_then_reads(querier: Service, stored):
    for tenant, limit in (("rich", 0), ("poor", LIMIT)):
        r = get(querier, "analyze", tenant, query=CPU + "{}")
        assert (r.status_code, r.json()) == (200, {"blocks": BLOCKS, "series": 1, "profiles": BLOCKS,
                                                   "block_bytes": stored[tenant], "max_bytes": limit})
    r = get(querier, "query", "rich", query=CPU + "{}", format="top")
    assert (r.status_code, r.json()["profiles"]) == (200, BLOCKS)


def test_rest_refuses_a_query_over_the_limit_with_422_and_how_to_narrow_it(querier: Service, stored):
    for path, params in (("query", {"query": CPU + "{}"}), ("query", {"query": CPU + "{}", "format": "pprof"}),
                         ("diff", {"query": CPU + "{}", "label": "service_name", "a": "api", "b": "api"})):
        r = get(querier, path, "poor", **params)
        assert (r.status_code, r.json()) == (422, {"error": refused(stored["poor"])})


def test_grpc_analyzes_and_refuses_with_resource_exhausted(querier: Service, stored):
    now = time.time_ns()
    rng = types_pb2.TimeRange(start_ns=now - 3600 * 10**9, end_ns=now)
    with grpc.insecure_channel(querier.grpc_address) as channel:
        stub = query_pb2_grpc.QueryServiceStub(channel)
        found = stub.AnalyzeQuery(query_pb2.AnalyzeQueryRequest(query=CPU + "{}", range=rng), timeout=60,
                                  metadata=[("x-scope-orgid", "poor")])
        assert (found.blocks, found.series, found.profiles, found.block_bytes, found.max_bytes) == \
            (BLOCKS, 1, BLOCKS, stored["poor"], LIMIT)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Query(query_pb2.QueryRequest(query=CPU + "{}", range=rng), timeout=60,
                       metadata=[("x-scope-orgid", "poor")])
        assert (caught.value.code(), caught.value.details()) == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                                                 refused(stored["poor"]))
        answer = stub.Query(query_pb2.QueryRequest(query=CPU + "{}", range=rng), timeout=60,
                            metadata=[("x-scope-orgid", "rich")])
        assert answer.profiles == BLOCKS


def test_connect_analyzes_as_pyroscope_and_refuses_with_resource_exhausted(querier: Service, stored):
    now_ms = time.time_ns() // 10**6
    span = {"start": now_ms - 3600_000, "end": now_ms}
    r = httpx.post(f"{querier.url}/querier.v1.QuerierService/AnalyzeQuery", json={"query": CPU + "{}", **span},
                   headers={"X-Scope-OrgID": "poor"}, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["queryImpact"] == {"totalBytesInTimeRange": str(stored["poor"]), "totalQueriedSeries": "1"}
    assert r.json()["queryScopes"][0]["blockCount"] == str(BLOCKS)
    r = httpx.post(f"{querier.url}/querier.v1.QuerierService/SelectMergeStacktraces",
                   json={"profileTypeID": CPU, "labelSelector": "{}", **span}, headers={"X-Scope-OrgID": "poor"},
                   timeout=60)
    assert (r.status_code, r.json()) == (429, {"code": "resource_exhausted", "message": refused(stored["poor"])})
