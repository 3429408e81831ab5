"""One tenant, a real ingester and querier: well-behaved clients keep pushing (our /ingest, gRPC Push and
Pyroscope's Connect push) while bad inputs go into the same tenant on every push path (a NUL in a label,
a time of INT64_MIN or a day ahead, 1,000 sample types, more series than the tenant may have). Every good
push is acknowledged and stored (counted through the query API), every bad one gets a 4xx, none a 5xx."""

from __future__ import annotations

import base64
import threading
import time

import grpc
import httpx
import pytest
from e2e.calls import CPU, Window, raw_series, rest
from e2e.cluster import Cluster
from e2e.pushes import rewritten
from google.protobuf import json_format
from infra.otlp import ExportBuilder
from infra.tinypprof import tiny_pprof

from flamewatch.api.flamewatch.v1 import ingest_pb2, ingest_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

TENANT = "e2e-isolation"
HEADERS = {"X-Scope-OrgID": TENANT}
PUSHES_PER_CLIENT = 12
INT64_MIN = -(2**63)
DAY_NS = 86400 * 10**9
CLIENTS = ("ingest-a", "ingest-b", "grpc", "connect")


def _connect_body(series: list[dict[str, str]], pprof: bytes) -> dict:
    data = base64.b64encode(pprof).decode()
    return {"series": [{"labels": [{"name": k, "value": v} for k, v in labels.items()],
                        "samples": [{"rawProfile": data}]} for labels in series]}


class Client:
    """Pushes the Go CPU profile, dated anew each time (so no push is a retry of another), on one path."""

    def __init__(self, name: str, ingester, go_cpu: bytes) -> None:
        self.name, self.ingester, self.go_cpu = name, ingester, go_cpu
        self.acknowledged = 0
        self.failures: list[str] = []

    def run(self, pushes: int) -> None:
        with httpx.Client(timeout=60) as http, grpc.insecure_channel(self.ingester.grpc_address) as channel:
            stub = ingest_pb2_grpc.IngestServiceStub(channel)
            for _ in range(pushes):
                outcome = self._push(http, stub, rewritten(self.go_cpu, time_ns=time.time_ns()))
                if outcome is None:
                    self.acknowledged += 1
                else:
                    self.failures.append(outcome)

    def _push(self, http: httpx.Client, stub, pprof: bytes) -> str | None:
        labels = {"service_name": "isolation", "client": self.name}
        if self.name == "grpc":
            try:
                stub.Push(ingest_pb2.PushRequest(series=[raw_series({"__name__": "process_cpu", **labels},
                                                                    ("", pprof))]),
                          metadata=(("x-scope-orgid", TENANT),), timeout=60)
                return None
            except grpc.RpcError as exc:
                return f"{exc.code()}: {exc.details()}"
        if self.name == "connect":
            r = http.post(f"{self.ingester.url}/push.v1.PusherService/Push", headers=HEADERS,
                          json=_connect_body([{"__name__": "process_cpu", **labels}], pprof))
        else:
            r = http.post(f"{self.ingester.url}/ingest", params=labels, content=pprof, headers=HEADERS)
        return None if r.status_code == 200 else f"{r.status_code}: {r.text}"


def _otlp_with_nul(now: int) -> bytes:
    b = ExportBuilder()
    profile = b.profile({"service.name": "isolation", "foo": "a\x00b"}, time_ns=now)
    profile.samples.add(stack_index=b.stack("work", "main"), values=[7])
    return json_format.MessageToJson(b.request).encode()


def _bad_http(ingester, go_cpu: bytes, now: int) -> dict[str, tuple[str, dict, bytes, dict]]:
    """Name -> (path, query parameters, body, headers) of each bad push over HTTP."""
    json_headers = {**HEADERS, "Content-Type": "application/json"}
    too_many = [{"__name__": "process_cpu", "service_name": "isolation", "pod": f"new-{i}"} for i in range(4)]
    return {
        "nul label, /ingest": ("/ingest", {"service_name": "x", "foo": "a\x00b"}, go_cpu, HEADERS),
        "nul label, Pyroscope /ingest": ("/ingest", {"name": "isolation.cpu{foo=a\x00b}", "format": "pprof"},
                                         tiny_pprof(now, zipped=False), HEADERS),
        "nul label, Connect push": ("/push.v1.PusherService/Push", {}, _json_bytes(_connect_body(
            [{"__name__": "process_cpu", "service_name": "isolation", "foo": "a\x00b"}], go_cpu)), json_headers),
        "nul label, OTLP": ("/v1development/profiles", {}, _otlp_with_nul(now), json_headers),
        "INT64_MIN time": ("/ingest", {"service_name": "isolation"}, tiny_pprof(INT64_MIN), HEADERS),
        "a day ahead": ("/ingest", {"service_name": "isolation"}, tiny_pprof(now + DAY_NS), HEADERS),
        "1,000 sample types": ("/ingest", {"service_name": "isolation"}, tiny_pprof(now, sample_types=1000), HEADERS),
        "8 new series": ("/push.v1.PusherService/Push", {}, _json_bytes(_connect_body(too_many, go_cpu)),
                         json_headers),
    }


def _json_bytes(body: dict) -> bytes:
    return httpx.Request("POST", "http://x", json=body).read()


def _bad_grpc(go_cpu: bytes) -> dict[str, ingest_pb2.PushRequest]:
    return {
        "nul label, gRPC": ingest_pb2.PushRequest(series=[raw_series({"service_name": "x", "foo": "a\x00b"},
                                                                     ("nul", go_cpu))]),
        "INT64_MIN time, gRPC": ingest_pb2.PushRequest(series=[raw_series({"service_name": "isolation"},
                                                                          ("old", tiny_pprof(INT64_MIN)))]),
    }


EXPECTED = {"nul label, /ingest": 400, "nul label, Pyroscope /ingest": 400, "nul label, Connect push": 400,
            "nul label, OTLP": 400, "INT64_MIN time": 400, "a day ahead": 400, "1,000 sample types": 413,
            "8 new series": 429, "nul label, gRPC": grpc.StatusCode.INVALID_ARGUMENT,
            "INT64_MIN time, gRPC": grpc.StatusCode.INVALID_ARGUMENT}


def _push_bad(ingester, go_cpu: bytes, rounds: int) -> dict[str, set]:
    seen: dict[str, set] = {}
    with httpx.Client(timeout=60) as http, grpc.insecure_channel(ingester.grpc_address) as channel:
        stub = ingest_pb2_grpc.IngestServiceStub(channel)
        for _ in range(rounds):
            for name, (path, params, body, headers) in _bad_http(ingester, go_cpu, time.time_ns()).items():
                seen.setdefault(name, set()).add(http.post(f"{ingester.url}{path}", params=params, content=body,
                                                           headers=headers).status_code)
            for name, request in _bad_grpc(go_cpu).items():
                try:
                    stub.Push(request, metadata=(("x-scope-orgid", TENANT),), timeout=60)
                    seen.setdefault(name, set()).add(grpc.StatusCode.OK)
                except grpc.RpcError as exc:
                    seen.setdefault(name, set()).add(exc.code())
    return seen


@pytest.fixture(scope="module")
def guarded(cluster: Cluster):
    """The tenant may have 12 series: the four clients' eight (a Go CPU profile has two sample types) and 4 more."""
    return cluster.add_ingester("guarded", "--limits.tenant", f"{TENANT}:max-series=12")


def test_bad_pushes_get_4xx_while_the_tenants_good_clients_are_all_stored(cluster: Cluster, guarded, go_profiles):
    started = time.time_ns()
    clients = [Client(name, guarded, go_profiles["cpu"]) for name in CLIENTS]
    for client in clients:  # every client's series exist before the bad pushes start
        client.run(1)
    threads = [threading.Thread(target=c.run, args=(PUSHES_PER_CLIENT - 1,)) for c in clients]
    for thread in threads:
        thread.start()
    seen = _push_bad(guarded, go_profiles["cpu"], rounds=3)
    for thread in threads:
        thread.join(timeout=300)

    assert {name: sorted(map(str, codes)) for name, codes in seen.items()} == {
        name: [str(code)] for name, code in EXPECTED.items()}
    assert [(c.name, c.acknowledged, c.failures) for c in clients] == [(n, PUSHES_PER_CLIENT, []) for n in CLIENTS]
    window = Window.around(started)
    for client in clients:
        answer = rest(cluster, "/query", TENANT, {"query": CPU + f'{{client="{client.name}"}}', "format": "top",
                                                  **window.rest()})
        assert answer["profiles"] == PUSHES_PER_CLIENT, client.name
    assert cluster.counts(TENANT)["profiles"] == 2 * PUSHES_PER_CLIENT * len(CLIENTS)  # two sample types each
    assert rest(cluster, "/label/client/values", TENANT, window.rest())["data"] == sorted(CLIENTS)
    assert rest(cluster, "/label/foo/values", TENANT, window.rest())["data"] == []
    assert rest(cluster, "/label/pod/values", TENANT, window.rest())["data"] == []
    _assert_messages(cluster, guarded, go_profiles["cpu"])


def _assert_messages(cluster: Cluster, guarded, go_cpu: bytes) -> None:
    """The refusals name the problem and the flag that moves the limit."""
    bad = _bad_http(guarded, go_cpu, time.time_ns())

    def error(name: str) -> str:
        path, params, body, headers = bad[name]
        r = cluster.http.post(f"{guarded.url}{path}", params=params, content=body, headers=headers)
        return r.json().get("error") or r.json().get("message")

    assert error("nul label, /ingest") == ('label "foo": value contains a NUL character (\\x00 at position 1), which '
                                           'cannot be stored; remove it')
    old = error("INT64_MIN time")
    assert old.startswith("profile time 1677-09-21T00:12:43Z is too old: accepted are times from 1970-01-01T00:00:00Z "
                          "to "), old
    assert old.endswith("(times before 1970 are never accepted); send the profile with its real time"), old
    assert "(--limits.reject-newer-than); check the client's clock" in error("a day ahead")
    assert error("1,000 sample types") == ("profile has 1000 sample types, the limit is 64 (each becomes a series; "
                                           "--limits.max-sample-types raises it)")
    assert error("8 new series") == (f"tenant '{TENANT}' has 8 active series (with a profile in the last hour) and "
                                     "this push would add 8: the limit is 12 (--limits.max-series, or --limits.tenant "
                                     f"{TENANT}:max-series=N for this tenant); pushes to existing series still pass")


def test_a_timeless_pprof_retried_on_plain_ingest_is_stored_once(cluster: Cluster):
    """The server's clock dates a pprof without a time; a client resending it (lost acknowledgement) must not
    double its values."""
    tenant, timeless = "e2e-timeless-retry", tiny_pprof(0)
    for _ in range(3):
        r = cluster.http.post(f"{cluster.ingester_url}/ingest", params={"service_name": "retry"}, content=timeless,
                              headers={"X-Scope-OrgID": tenant})
        assert r.status_code == 200, r.text
    assert cluster.counts(tenant)["profiles"] == 1
    answer = rest(cluster, "/query", tenant, {"query": 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{}',
                                              "format": "top", **Window.around(time.time_ns()).rest()})
    assert (answer["profiles"], answer["top"]["entries"][0]["total"]) == (1, 10_000_000)
