"""Pyroscope's protocols on the split services: push.v1 Push (Connect and gRPC) into the ingester, and
the querier.v1 label methods (Connect) out of the querier, with clients we did not write where they exist.

The Python SDK `pyroscope-io` (tests/targets/pyroscope_python) pushes its own CPU profile over Connect;
its hot function must show in the merged flamegraph of our `/api/v1/query`, and the Connect label methods
must answer what our REST label API answers for the same data. A refused push, over either protocol,
names its problem with the right code and writes nothing, even when its bad profile travels next to
good ones.
"""

from __future__ import annotations

import base64
import gzip
import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from e2e.calls import CPU, TIMEOUT_S, grpc_error, metadata, rest, settled, stored_state, tenant_header
from e2e.cluster import FLAMEWATCH, Cluster, Storage, running
from e2e.pushes import WORKLOAD_FUNCTIONS
from infra.ports import free_port
from infra.waiting import answers, wait_for

from flamewatch.api.push.v1 import push_pb2, push_pb2_grpc
from flamewatch.api.querier.v1 import querier_pb2
from flamewatch.api.types.v1 import types_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

SDK_PROGRAM = Path(__file__).resolve().parents[1] / "targets" / "pyroscope_python" / "main.py"
SDK_FUNCTION = "flamewatch_sdk_hot_loop"
MAX_BODY = 1 << 20  # --limits.max-decompressed-bytes: the largest push.v1 body too
PUSH = "/push.v1.PusherService/Push"
PROTO = {"Content-Type": "application/proto"}


@pytest.fixture(scope="module")
def pyro(e2e_storage: Storage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(e2e_storage, tmp_path_factory.mktemp("pyroscope"),
                ingester_flags=("--limits.max-decompressed-bytes", str(MAX_BODY)))
    with running(c):
        yield c


def _tenant() -> str:
    return f"pyro-{uuid.uuid4().hex[:8]}"


def _series(labels: dict[str, str], *samples: tuple[str, bytes]) -> push_pb2.RawProfileSeries:
    return push_pb2.RawProfileSeries(labels=[types_pb2.LabelPair(name=k, value=v) for k, v in labels.items()],
                                     samples=[push_pb2.RawSample(ID=i, raw_profile=raw) for i, raw in samples])


def _connect(cluster: Cluster, url: str, method: str, body: dict, tenant: str, status: int = 200) -> dict:
    r = cluster.http.post(f"{url}{method}", json=body, headers={"Connect-Protocol-Version": "1",
                                                                **tenant_header(tenant)})
    assert r.status_code == status, r.text
    return r.json()


def _query(cluster: Cluster, method: str, body: dict, tenant: str, status: int = 200) -> dict:
    return _connect(cluster, cluster.querier_url, f"/querier.v1.QuerierService/{method}", body, tenant, status)


def _flamegraph_names(cluster: Cluster, tenant: str, service: str) -> set[str]:
    answer = rest(cluster, "/query", tenant, {"query": f'{CPU}{{service_name="{service}"}}', "from": "now-1h"})
    return set(answer["flamegraph"]["names"])


def _eventually_names(cluster: Cluster, tenant: str, service: str, name: str) -> set[str]:
    """The SDK sends its last profile as it shuts down; wait for it rather than for a fixed time."""
    deadline = time.monotonic() + TIMEOUT_S
    names: set[str] = set()
    while time.monotonic() < deadline and name not in names:
        names = _flamegraph_names(cluster, tenant, service) if _has_series(cluster, tenant, service) else set()
        time.sleep(0.2)
    return names


def _has_series(cluster: Cluster, tenant: str, service: str) -> bool:
    return bool(rest(cluster, "/series", tenant, {"match[]": f'{{service_name="{service}"}}'})["data"])


# ------------------------------------------------------------------------------------------- SDK


def test_the_python_sdk_pushes_its_hot_function_and_the_label_methods_see_it(pyro: Cluster):
    tenant, app = _tenant(), f"pysdk-{uuid.uuid4().hex[:6]}"
    run = subprocess.run([sys.executable, str(SDK_PROGRAM), pyro.ingester_url, app, "4", tenant],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "done" in run.stdout, run.stdout + run.stderr
    assert "failed" not in run.stderr, run.stderr  # the SDK logs every refused push

    assert SDK_FUNCTION in _eventually_names(pyro, tenant, app, SDK_FUNCTION)

    # The Connect label methods answer what our REST API answers for the same data.
    window = {"start": str((time.time_ns() - 3600 * 10**9) // 10**6), "end": str(time.time_ns() // 10**6)}
    rest_window = {"from": window["start"], "until": window["end"]}
    types = _query(pyro, "ProfileTypes", window, tenant)["profileTypes"]
    assert [t["ID"] for t in types] == [t["id"] for t in rest(pyro, "/profile_types", tenant, rest_window)["data"]]
    assert CPU in [t["ID"] for t in types]
    selector = f'{{service_name="{app}"}}'
    names = _query(pyro, "LabelNames", {"matchers": [selector], **window}, tenant)["names"]
    # ... and the labels Pyroscope derives from the profile type and service name, as its LabelNames does
    derived = {"__type__", "__unit__", "__period_type__", "__period_unit__", "__service_name__"}
    assert names == sorted({*rest(pyro, "/labels", tenant, {"match[]": selector, **rest_window})["data"], *derived})
    assert {"service_name", "sdk", "otel_scope_name", "process_runtime_name"} <= set(names)
    # As the README says: push.v1 carries no spy name (Pyroscope adds pyroscope_spy only from /ingest's
    # spyName); the SDK names itself in otel.scope.name.
    assert "pyroscope_spy" not in names
    for name, value in (("otel_scope_name", "com.grafana.pyroscope/python"), ("process_runtime_name", "cpython")):
        assert rest(pyro, f"/label/{name}/values", tenant, {"match[]": selector, **rest_window})["data"] == [value]
    values = _query(pyro, "LabelValues", {"name": "service_name", **window}, tenant)["names"]
    assert values == rest(pyro, "/label/service_name/values", tenant, rest_window)["data"] == [app]
    series = _query(pyro, "Series", {"matchers": [selector], "labelNames": ["service_name", "__profile_type__"],
                                     **window}, tenant)["labelsSet"]
    assert series == [{"labels": [{"name": "__profile_type__", "value": CPU}, {"name": "service_name", "value": app}]}]
    full = _query(pyro, "Series", {"matchers": [selector], **window}, tenant)["labelsSet"]
    assert [{p["name"]: p["value"] for p in s["labels"]} for s in full] == rest(
        pyro, "/series", tenant, {"match[]": selector, **rest_window})["data"]


def test_flamewatch_all_serves_push_and_the_label_methods_on_its_one_http_port(tmp_path: Path):
    port = free_port()
    url, log = f"http://127.0.0.1:{port}", tmp_path / "all.log"
    with log.open("ab") as out:
        process = subprocess.Popen([str(FLAMEWATCH), "all", "--http-address", f"127.0.0.1:{port}",
                                    "--grpc-address", f"127.0.0.1:{free_port()}"], cwd=tmp_path, stdout=out,
                                   stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: answers(f"{url}/readyz"), 90, "flamewatch all", log, process)
        run = subprocess.run([sys.executable, str(SDK_PROGRAM), url, "all-sdk", "3"], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0 and "failed" not in run.stderr, run.stdout + run.stderr

        def sdk_values() -> list[str]:
            r = httpx.post(f"{url}/querier.v1.QuerierService/LabelValues", json={"name": "service_name"})
            assert r.status_code == 200, r.text
            return r.json().get("names", [])

        wait_for(lambda: "all-sdk" in sdk_values(), 30, "the SDK's series over Connect", log, process)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log.read_text()


# ------------------------------------------------------------------------------------------- push


def test_push_over_grpc_stores_the_profile_with_pyroscope_labels(pyro: Cluster, go_profiles: dict[str, bytes]):
    tenant, app = _tenant(), "grpc-push"
    stub = push_pb2_grpc.PusherServiceStub(pyro._channel(pyro.ingester_grpc))
    labels = {"__name__": "process_cpu", "service_name": app, "otel.scope.name": "tests", "__delta__": "false"}
    answer = stub.Push(push_pb2.PushRequest(series=[_series(labels, ("cpu-1", go_profiles["cpu"]))]),
                       metadata=metadata(tenant), timeout=TIMEOUT_S)
    assert answer == push_pb2.PushResponse()
    # acknowledged means durable: the merge sees it at once
    assert WORKLOAD_FUNCTIONS["process_cpu"] <= _flamegraph_names(pyro, tenant, app)
    stored = rest(pyro, "/series", tenant, {"match[]": f'{{service_name="{app}"}}'})["data"]
    assert {s["__profile_type__"] for s in stored} == {CPU, "process_cpu:samples:count:cpu:nanoseconds"}
    assert all(s["otel_scope_name"] == "tests" and "__delta__" not in s for s in stored), stored


def test_push_over_connect_json_with_a_gzipped_body(pyro: Cluster, go_profiles: dict[str, bytes]):
    tenant, app = _tenant(), "connect-json"
    labels = [{"name": "__name__", "value": "process_cpu"}, {"name": "service_name", "value": app}]
    body = {"series": [{"labels": labels,
                        "samples": [{"ID": "one", "rawProfile": base64.b64encode(go_profiles["cpu"]).decode()}]}]}
    r = pyro.http.post(f"{pyro.ingester_url}{PUSH}", content=gzip.compress(json.dumps(body).encode()),
                       headers={"Content-Type": "application/json", "Content-Encoding": "gzip",
                                **tenant_header(tenant)})
    assert r.status_code == 200 and r.json() == {}, r.text
    assert WORKLOAD_FUNCTIONS["process_cpu"] <= _flamegraph_names(pyro, tenant, app)


def _push_body(*series: push_pb2.RawProfileSeries) -> bytes:
    return push_pb2.PushRequest(series=list(series)).SerializeToString()


GOOD = {"__name__": "process_cpu", "service_name": "refused"}


@pytest.mark.parametrize(("case", "status", "code", "words"), [
    ("garbage profile", 400, "invalid_argument", ["bad-1:"]),
    ("bad profile next to a good one", 400, "invalid_argument", ["bad-1:"]),
    ("empty label value", 400, "invalid_argument", ['label "team" has an empty value']),
    ("no samples", 400, "invalid_argument", ["push has no profiles"]),
    ("malformed body", 400, "invalid_argument", ["malformed application/proto body for push.v1.PusherService/Push"]),
    ("oversize body", 429, "resource_exhausted", [f"request body is larger than {MAX_BODY} bytes"]),
])
def test_refused_connect_pushes_name_the_problem_and_write_nothing(pyro: Cluster, go_profiles, case, status, code,
                                                                   words):
    good = ("good-1", go_profiles["cpu"])
    bodies = {
        "garbage profile": _push_body(_series(GOOD, ("bad-1", b"\x0a\xff\xff not a pprof"))),
        "bad profile next to a good one": _push_body(_series(GOOD, good), _series(GOOD, ("bad-1", b"\x1f\x8b junk"))),
        "empty label value": _push_body(_series({**GOOD, "team": ""}, good)),
        "no samples": _push_body(_series(GOOD)),
        "malformed body": b"\x0a\x05\x0a\x03",
        "oversize body": _push_body(_series(GOOD, ("big", b"\0" * MAX_BODY))),
    }
    before = stored_state(pyro)
    r = pyro.http.post(f"{pyro.ingester_url}{PUSH}", content=bodies[case], headers=PROTO)
    assert r.status_code == status, r.text
    assert r.json()["code"] == code, r.text
    assert all(w in r.json()["message"] for w in words), r.text
    assert settled(pyro) == before


def test_refused_grpc_pushes_are_invalid_argument_and_write_nothing(pyro: Cluster, go_profiles: dict[str, bytes]):
    stub = push_pb2_grpc.PusherServiceStub(pyro._channel(pyro.ingester_grpc))
    before = stored_state(pyro)
    request = push_pb2.PushRequest(series=[_series(GOOD, ("good-1", go_profiles["cpu"])),
                                           _series(GOOD, ("bad-1", b"\x0a\xff\xff not a pprof"))])
    error = grpc_error(stub.Push, request, "grpc-refused")
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert "bad-1:" in error.details()
    assert settled(pyro) == before


# ------------------------------------------------------------------------------------------- query


def test_query_errors_carry_connect_codes(pyro: Cluster):
    unknown = _query(pyro, "SelectEverything", {}, "q", status=404)
    assert unknown == {"code": "unimplemented",
                       "message": "querier.v1.QuerierService has no method 'SelectEverything'"}
    stepless = _query(pyro, "SelectHeatmap", {}, "q", status=400)  # every QuerierService method is served
    assert stepless == {"code": "invalid_argument",
                        "message": "step must be a number of seconds from 0.001 (1 ms) to 1e+09, got 0.0"}
    bad = _query(pyro, "Series", {"matchers": ['{service_name="x"']}, "q", status=400)
    assert bad["code"] == "invalid_argument" and "invalid selector" in bad["message"], bad
    nameless = _query(pyro, "LabelValues", {}, "q", status=400)
    assert nameless == {"code": "invalid_argument", "message": "name: the label whose values to list is missing"}
    backwards = _query(pyro, "LabelNames", {"start": "2000", "end": "1000"}, "q", status=400)
    assert backwards == {"code": "invalid_argument", "message": "start (2000 ms) is after end (1000 ms)"}
    r = pyro.http.post(f"{pyro.querier_url}/querier.v1.QuerierService/LabelNames", content=b"\xff", headers=PROTO)
    assert r.status_code == 400 and r.json()["code"] == "invalid_argument", r.text


def test_label_methods_answer_in_protobuf_too(pyro: Cluster, go_profiles: dict[str, bytes]):
    tenant = _tenant()
    stub = push_pb2_grpc.PusherServiceStub(pyro._channel(pyro.ingester_grpc))
    stub.Push(push_pb2.PushRequest(series=[_series({**GOOD, "service_name": "proto-app"}, ("p", go_profiles["cpu"]))]),
              metadata=metadata(tenant), timeout=TIMEOUT_S)
    ask = types_pb2.LabelValuesRequest(name="service_name").SerializeToString()
    r = pyro.http.post(f"{pyro.querier_url}/querier.v1.QuerierService/LabelValues", content=ask,
                       headers={**PROTO, **tenant_header(tenant)})
    assert r.status_code == 200 and r.headers["content-type"] == "application/proto", r.text
    assert list(types_pb2.LabelValuesResponse.FromString(r.content).names) == ["proto-app"]
    r = pyro.http.post(f"{pyro.querier_url}/querier.v1.QuerierService/ProfileTypes", headers={**PROTO,
                       **tenant_header(tenant)}, content=querier_pb2.ProfileTypesRequest().SerializeToString())
    types = querier_pb2.ProfileTypesResponse.FromString(r.content).profile_types
    assert sorted(t.ID for t in types) == sorted([CPU, "process_cpu:samples:count:cpu:nanoseconds"])
    assert {(t.name, t.sample_type, t.period_type) for t in types} == {("process_cpu", "cpu", "cpu"),
                                                                        ("process_cpu", "samples", "cpu")}
