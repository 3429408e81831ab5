"""The query cost flags of a `flamewatch querier` process, over REST, gRPC and Connect: a selector over
`--query.max-matchers` is refused as a bad request, and a query over `--query.timeout` is stopped with
a timeout, each naming its flag. The timeout is 1 ms, which parsing a selector of 1,000 matchers alone
outlasts, so the first check after it fails whatever the machine's load."""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import httpx
import pytest
from e2e.cluster import Service, Storage

from flamewatch.api.flamewatch.v1 import query_pb2, query_pb2_grpc, types_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3]

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
LIMIT = 1000
TOO_MANY = (f"the selector has {LIMIT + 1} label matchers, more than the {LIMIT} a selector may have "
            "(--query.max-matchers): combine them, e.g. several != on one label into one !~ regex, or raise the limit")
TIMED_OUT = ("the query ran for longer than --query.timeout (0.001 s) allows and was stopped: narrow its selector "
             "or time range, or raise --query.timeout")


def selector(n: int) -> str:
    return "{" + ",".join(f'absent_{i}!="x"' for i in range(n)) + "}"


@pytest.fixture(scope="module")
def querier(e2e_storage: Storage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    service = Service("querier", "querier", e2e_storage, tmp_path_factory.mktemp("limits") / "querier.log",
                      ("--query.max-matchers", str(LIMIT), "--query.timeout", "0.001"))
    service.start()
    try:
        yield service
    finally:
        assert service.stop() == 0, service.log_text()


def test_rest_refuses_too_many_matchers_with_400(querier: Service):
    r = httpx.get(f"{querier.url}/api/v1/query", params={"query": CPU + selector(LIMIT + 1)}, timeout=60)
    assert (r.status_code, r.json()) == (400, {"error": TOO_MANY})
    r = httpx.get(f"{querier.url}/api/v1/series", params={"match[]": selector(LIMIT + 1)}, timeout=60)
    assert (r.status_code, r.json()) == (400, {"error": TOO_MANY})


def test_rest_stops_a_query_over_its_timeout_with_504(querier: Service):
    r = httpx.get(f"{querier.url}/api/v1/query", params={"query": CPU + selector(LIMIT)}, timeout=60)
    assert (r.status_code, r.json()) == (504, {"error": TIMED_OUT})


def test_grpc_answers_invalid_argument_and_deadline_exceeded(querier: Service):
    now = time.time_ns()
    rng = types_pb2.TimeRange(start_ns=now - 3600 * 10**9, end_ns=now)
    with grpc.insecure_channel(querier.grpc_address) as channel:
        stub = query_pb2_grpc.QueryServiceStub(channel)
        for matchers, code, message in [(LIMIT + 1, grpc.StatusCode.INVALID_ARGUMENT, TOO_MANY),
                                        (LIMIT, grpc.StatusCode.DEADLINE_EXCEEDED, TIMED_OUT)]:
            with pytest.raises(grpc.RpcError) as caught:
                stub.Query(query_pb2.QueryRequest(query=CPU + selector(matchers), range=rng), timeout=60)
            assert (caught.value.code(), caught.value.details()) == (code, message)


def test_connect_answers_invalid_argument_and_deadline_exceeded(querier: Service):
    url = f"{querier.url}/querier.v1.QuerierService/SelectMergeStacktraces"
    now_ms = time.time_ns() // 10**6
    for matchers, status, code, message in [(LIMIT + 1, 400, "invalid_argument", TOO_MANY),
                                            (LIMIT, 504, "deadline_exceeded", TIMED_OUT)]:
        body = {"profileTypeID": CPU, "labelSelector": selector(matchers), "start": now_ms - 3600_000,
                "end": now_ms}
        r = httpx.post(url, json=body, timeout=60)
        assert (r.status_code, r.json()) == (status, {"code": code, "message": message})


def test_analyze_is_held_to_the_same_limits(querier: Service):
    r = httpx.get(f"{querier.url}/api/v1/analyze", params={"query": CPU + selector(LIMIT + 1)}, timeout=60)
    assert (r.status_code, r.json()) == (400, {"error": TOO_MANY})
    r = httpx.get(f"{querier.url}/api/v1/analyze", params={"query": CPU + selector(LIMIT)}, timeout=60)
    assert (r.status_code, r.json()) == (504, {"error": TIMED_OUT})
    now = time.time_ns()
    with grpc.insecure_channel(querier.grpc_address) as channel:
        with pytest.raises(grpc.RpcError) as caught:
            query_pb2_grpc.QueryServiceStub(channel).AnalyzeQuery(query_pb2.AnalyzeQueryRequest(
                query=CPU + selector(LIMIT), range=types_pb2.TimeRange(start_ns=now - 3600 * 10**9, end_ns=now)),
                timeout=60)
        assert (caught.value.code(), caught.value.details()) == (grpc.StatusCode.DEADLINE_EXCEEDED, TIMED_OUT)
