"""A client that retries a push (its acknowledgement was lost) must not double the stored values.

Real Go profiles go to a real ingester on Postgres and MinIO, twice, through every door; what is stored
and what the querier answers must equal one push. A profile that differs in series, time or content
is a new one and is stored.
"""

from __future__ import annotations

import gzip

import pytest
from e2e.calls import CPU, Window, ingest, metadata, raw_series, rest
from e2e.cluster import Cluster
from e2e.pushes import profile_time_ns, rewritten

from flamewatch.api.flamewatch.v1 import ingest_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]


def cpu_total(cluster: Cluster, tenant: str, window: Window, selector: str = "{}") -> tuple[int, int]:
    body = rest(cluster, "/query", tenant, {"query": CPU + selector, "format": "top", **window.rest()})
    return body["profiles"], body["top"]["total"]


def test_the_same_profile_pushed_again_over_http_is_stored_once(cluster: Cluster, go_profiles) -> None:
    tenant, data = "retry-http", go_profiles["cpu"]
    window = Window.around(profile_time_ns(data))
    first = ingest(cluster, tenant, {"service_name": "api"}, data)
    assert first.status_code == 200, first.text
    once = cpu_total(cluster, tenant, window)
    # The retry is acknowledged like the first push (the client cannot tell which one was lost) ...
    again = ingest(cluster, tenant, {"service_name": "api"}, gzip.compress(gzip.decompress(data), 1))
    assert (again.status_code, again.json()) == (200, first.json())
    # ... and changes nothing that is stored or answered.
    assert cpu_total(cluster, tenant, window) == once == (1, once[1])
    assert cluster.counts(tenant)["profiles"] == 2  # samples and cpu, one typed profile each


def test_a_retried_grpc_push_and_a_push_repeated_within_one_request_are_stored_once(cluster: Cluster,
                                                                                    go_profiles) -> None:
    tenant, data = "retry-grpc", go_profiles["heap"]
    request = ingest_pb2.PushRequest(series=[raw_series({"service_name": "api"}, ("a", data), ("b", data))])
    for _ in range(2):
        answer = cluster.ingest_stub().Push(request, metadata=metadata(tenant), timeout=30)
        assert answer.profiles == 8  # 4 sample types, twice: acknowledged as sent
    assert cluster.counts(tenant)["profiles"] == 4


def test_profiles_that_differ_in_series_time_or_content_are_all_stored(cluster: Cluster, go_profiles) -> None:
    tenant, data = "retry-distinct", go_profiles["cpu"]
    t = profile_time_ns(data)
    window = Window.around(t)
    pushes = [({"service_name": "api"}, data),
              ({"service_name": "api", "instance": "b"}, data),
              ({"service_name": "api"}, rewritten(data, time_ns=t + 10**9)),
              ({"service_name": "api"}, rewritten(data, time_ns=t, scale=2))]
    for labels, body in pushes:
        assert ingest(cluster, tenant, labels, body).status_code == 200
    profiles, total = cpu_total(cluster, tenant, window)
    _, single = cpu_total(cluster, tenant, window, '{instance="b"}')
    assert (profiles, total) == (4, 5 * single)
