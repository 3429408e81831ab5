"""The frontend's `/api` proxy passes on plain paths under `/api/` and nothing else of the querier.

The querier serves `/metrics` and `/debug/pprof/*` too. A path that a client or the querier would
resolve outside `/api/` (escaped slashes, dot segments, double escapes, backslashes) is refused by the
frontend with 400 and a message, never passed on. Requests are sent byte for byte over a socket, so
no client normalises them first.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import pytest
from e2e.cluster import Cluster, running_frontend

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3]

ESCAPES = [
    "/api/..%2Fmetrics",
    "/api/..%2fmetrics",
    "/api/%2e%2e/metrics",
    "/api/%2E%2E%2Fmetrics",
    "/api/v1/..%2F..%2Fmetrics",
    "/api/v1/%2e%2e/%2e%2e/debug/pprof/profile?seconds=1",
    "/api/..%2Fdebug/pprof/profile?seconds=1",
    "/api/..%252Fmetrics",
    "/api/%252e%252e/metrics",
    "/api/..%5Cmetrics",
    "/api/..\\metrics",
    "/api/v1\\..\\..\\metrics",
    "/api/../metrics",
    "/api/./../metrics",
    "/api/v1/../../debug/pprof/heap",
]


@pytest.fixture(scope="module")
def frontend(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with running_frontend(cluster.querier_url, tmp_path_factory.mktemp("frontend")) as url:
        yield int(url.rpartition(":")[2])


def raw_get(port: int, path: str) -> tuple[int, bytes]:
    """GET `path` exactly as written: http.client sends the request target unchanged."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path", ESCAPES)
def test_a_path_leaving_api_is_refused_and_never_reaches_the_querier(frontend: int, path: str):
    status, body = raw_get(frontend, path)
    assert status == 400, (status, body[:300])
    message = json.loads(body)["error"]
    assert message.startswith(f"refused path {path.split('?')[0]!r}: "), message
    assert message.endswith("the frontend passes on only plain paths under /api/, such as /api/v1/query"), message


def test_the_querier_does_serve_what_the_escapes_aim_at(cluster: Cluster):
    """So the refusals above guard something real: the querier answers these paths itself."""
    assert cluster.http.get(cluster.querier_url + "/metrics").text.startswith("# HELP")
    assert cluster.http.get(cluster.querier_url + "/debug/pprof/profile", params={"seconds": 1}).status_code == 200


@pytest.mark.parametrize("path", ["/api/v1/tenants", "/api/v1/profile_types", "/api/v1/label/service_name/values",
                                  "/api/v1/series?match[]=%7Bservice_name%3D%22a%2Fb%22%7D"])
def test_plain_api_paths_are_passed_on_as_the_querier_answers_them(cluster: Cluster, frontend: int, path: str):
    status, body = raw_get(frontend, path)
    direct = cluster.http.get(cluster.querier_url + path)
    assert (status, json.loads(body)) == (200, direct.json())


def test_an_unknown_api_path_is_the_querier_s_404(frontend: int):
    status, body = raw_get(frontend, "/api/v1/no-such-thing")
    assert (status, json.loads(body)) == (404, {"detail": "Not Found"})

