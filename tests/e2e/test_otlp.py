"""OTLP profiles sent by a real client, the Go program `tests/targets/otlpsender` built with the official
generated Go types (`go.opentelemetry.io/proto/otlp`, profiles `v1development`), to a running ingester
over gRPC and over HTTP (protobuf and JSON, gzip), and read back through the querier.

Each transport's export has one CPU profile ("samples"/"count", period type cpu): `<t>_work` 40 (30 in a
sample of thread worker-1 linked to a span, 5 + 5 in one of worker-2) and `<t>_idle` 2 (two timestamps,
no values, worker-2), both called from `main`; service.name "otlp-<transport>", host.name, a
deployment.environment and a scope attribute.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import time

import grpc
import pytest
from e2e.calls import Window, rest, settled, stored_state
from e2e.cluster import Cluster, Service
from google.protobuf import json_format
from infra import gotargets
from infra.otlp import ExportBuilder, many_samples
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2_grpc import ProfilesServiceStub

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

TENANT = "e2e-otlp"
TYPE = "process_cpu:samples:count:cpu:nanoseconds"
TRANSPORTS = ["grpc", "http-protobuf", "http-json"]
SPAN = "a1b2c3d401020304"
PATH = "/v1development/profiles"
STACK_OUT_OF_RANGE = ("resource_profiles[0].scope_profiles[0].profiles[0]: samples[].stack_index 99 is outside "
                      "the dictionary's stack_table (3 entries)")
LIMIT_COMPRESSED = 300  # bytes: less than any of the sender's exports


def send(cluster: Cluster, transport: str, *flags: str, ingester: Service | None = None) -> dict:
    """Run the sender against the cluster's ingester (or `ingester`); what the ingester answered."""
    ingester = ingester or cluster.ingester
    target = ingester.grpc_address if transport == "grpc" else ingester.url
    result = subprocess.run([str(gotargets.build("otlpsender")), "-transport", transport, "-target", target,
                             "-tenant", TENANT, *flags], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def window(cluster: Cluster) -> Window:
    now = time.time_ns()
    for transport in TRANSPORTS:
        answer = send(cluster, transport, "-time", str(now))
        assert answer["code"] in (0, 200) and answer["rejected"] == 0, answer
    return Window.around(now)


def top(cluster: Cluster, window: Window, selector: str) -> dict:
    return rest(cluster, "/query", TENANT, {"query": TYPE + selector, "format": "top", **window.rest()})["top"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_each_transports_functions_are_in_the_merged_flamegraph(cluster: Cluster, window: Window, transport: str):
    prefix = transport.replace("-", "_")
    answer = top(cluster, window, f'{{service_name="otlp-{transport}"}}')
    assert answer["total"] == 42
    assert {e["name"]: (e["self"], e["total"]) for e in answer["entries"]} == {
        f"{prefix}_work": (40, 40), f"{prefix}_idle": (2, 2), "main": (0, 42)}
    merged = rest(cluster, "/query", TENANT, {"query": TYPE + "{}", **window.rest()})["flamegraph"]
    assert merged["total"] == 3 * 42
    assert {f"{prefix}_work", f"{prefix}_idle", "main"} <= set(merged["names"])


def test_resource_and_scope_attributes_are_series_labels(cluster: Cluster, window: Window):
    values = lambda name: rest(cluster, f"/label/{name}/values", TENANT, window.rest())["data"]  # noqa: E731
    assert values("service_name") == ["otlp-grpc", "otlp-http-json", "otlp-http-protobuf"]
    assert values("host_name") == ["sender-host"]
    assert values("deployment_environment") == ["e2e"]
    assert values("profiler_kind") == ["synthetic"]
    assert values("__profile_type__") == [TYPE]
    series = rest(cluster, "/series", TENANT, window.rest())["data"]
    assert len(series) == 3 and all("thread_name" not in s and "span_id" not in s for s in series)


@pytest.mark.parametrize(("selector", "total"), [
    ('{thread_name="worker-1"}', 30),
    ('{thread_name="worker-2"}', 12),
    (f'{{span_id="{SPAN}"}}', 30),
    ('{trace_id="30313233343536373839616263646566", thread_name="worker-2"}', 0),
])
def test_sample_attributes_and_links_select_samples(cluster: Cluster, window: Window, selector: str, total: int):
    for transport in TRANSPORTS:
        assert top(cluster, window, f'{{service_name="otlp-{transport}", {selector[1:]}')["total"] == total
    assert rest(cluster, "/label/thread_name/values", TENANT, window.rest())["data"] == ["worker-1", "worker-2"]


@pytest.mark.parametrize(("transport", "code"), [("grpc", 3), ("http-protobuf", 400), ("http-json", 400)])
def test_an_index_outside_the_dictionary_is_refused_and_nothing_is_written(cluster: Cluster, window: Window,
                                                                          transport: str, code: int):
    before = stored_state(cluster)
    answer = send(cluster, transport, "-bad-index")
    assert (answer["code"], answer["message"]) == (code, STACK_OUT_OF_RANGE)
    assert settled(cluster) == before


@pytest.mark.parametrize(("content_type", "body", "status", "message"), [
    ("application/x-protobuf", b"\xff\xff\xff", 400,
     "not an OTLP ExportProfilesServiceRequest: invalid protobuf (Error parsing message with type "
     "'opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest': Wire format was corrupt)"),
    ("application/json", b'{"resourceProfiles": [', 400, "not an OTLP ExportProfilesServiceRequest: invalid JSON"),
    ("application/json", b'{"resourceProfiles": 7}', 400,
     "not an OTLP ExportProfilesServiceRequest: resourceProfiles must be an array of objects"),
    ("text/plain", b"hello", 415, 'Content-Type "text/plain" is not supported'),
    ("application/x-protobuf", b"", 400, "empty request body: send an ExportProfilesServiceRequest"),
])
def test_malformed_bodies_are_refused_with_a_status(cluster: Cluster, window: Window, content_type: str, body: bytes,
                                                    status: int, message: str):
    before = stored_state(cluster)
    r = cluster.http.post(cluster.ingester_url + PATH, content=gzip.compress(body),
                          headers={"Content-Type": "application/json", "Content-Encoding": "gzip",
                                   "X-Scope-OrgID": TENANT} | {"Content-Type": content_type})
    assert r.status_code == status, r.text
    if content_type == "application/json":
        assert r.json()["code"] == 3 and r.json()["message"].startswith(message), r.text
    else:
        assert message.encode() in r.content
    assert settled(cluster) == before


@pytest.mark.parametrize(("transport", "code"), [("grpc", 8), ("http-protobuf", 413), ("http-json", 413)])
def test_an_oversize_export_is_refused_with_resource_exhausted_or_413(cluster: Cluster, window: Window,
                                                                     transport: str, code: int):
    limited = cluster.extra.get("otlp-limited") or cluster.add_ingester(
        "otlp-limited", "--limits.max-compressed-bytes", str(LIMIT_COMPRESSED))
    before = stored_state(cluster)
    answer = send(cluster, transport, ingester=limited)
    assert answer["code"] == code
    assert answer["message"].startswith("request") and answer["message"].endswith(f"{LIMIT_COMPRESSED}"
                                                                                   if transport == "grpc" else
                                                                                   "the limit"), answer
    assert settled(cluster) == before


def partial_export(time_ns: int) -> ExportBuilder:
    """Two profiles: the first well formed, the second with a sample whose stack is not in the dictionary."""
    b = ExportBuilder()
    good = b.profile({"service.name": "otlp-partial"}, time_ns=time_ns)
    good.samples.add(stack_index=b.stack("partial_work", "main"), values=[7])
    bad = b.profile({"service.name": "otlp-partial-bad"}, time_ns=time_ns)
    bad.samples.add(stack_index=50, values=[1])
    return b


PARTIAL_MESSAGE = ("1 profile refused: resource_profiles[1].scope_profiles[0].profiles[0]: samples[].stack_index 50 "
                   "is outside the dictionary's stack_table (2 entries)")


def test_a_refused_profile_is_reported_as_partial_success_and_the_rest_stored(cluster: Cluster):
    """The gRPC client is the opentelemetry-proto package's generated stub; HTTP is JSON."""
    tenant, now = "e2e-otlp-partial", time.time_ns()
    with grpc.insecure_channel(cluster.ingester_grpc) as channel:
        response = ProfilesServiceStub(channel).Export(partial_export(now).request,
                                                       metadata=(("x-scope-orgid", tenant),), timeout=30)
    assert (response.partial_success.rejected_profiles, response.partial_success.error_message) == (
        1, PARTIAL_MESSAGE)
    r = cluster.http.post(cluster.ingester_url + PATH, content=json_format.MessageToJson(partial_export(now).request),
                          headers={"Content-Type": "application/json", "X-Scope-OrgID": tenant})
    assert r.status_code == 200, r.text
    assert r.json() == {"partialSuccess": {"rejectedProfiles": "1", "errorMessage": PARTIAL_MESSAGE}}
    window = Window.around(now)
    assert rest(cluster, "/label/service_name/values", tenant, window.rest())["data"] == ["otlp-partial"]
    answer = rest(cluster, "/query", tenant, {"query": TYPE + "{}", "format": "top", **window.rest()})["top"]
    # the same profile twice (same series, time and content) is stored once
    assert {e["name"]: e["total"] for e in answer["entries"]} == {"partial_work": 7, "main": 7}


def test_an_export_of_600k_samples_is_refused_quickly_naming_the_sample_limit(cluster: Cluster, window: Window):
    """6 KB gzipped, 600,000 samples: it used to be converted whole (18 s of CPU on a loaded server) before
    the ingester's sample limit refused it; now the count is checked first."""
    before = stored_state(cluster)
    body = many_samples(600_000)
    started = time.monotonic()
    r = cluster.http.post(cluster.ingester_url + PATH, content=body, headers={
        "Content-Type": "application/x-protobuf", "Content-Encoding": "gzip", "X-Scope-OrgID": TENANT})
    elapsed = time.monotonic() - started
    assert r.status_code == 413, r.content
    assert (b"resource_profiles[0].scope_profiles[0].profiles[0]: profile has 600000 samples, the limit is 500000 "
            b"(--limits.max-samples)") in r.content
    assert elapsed < 3.0, f"refusing took {elapsed:.1f} s"  # ~0.1 s idle; loose for a loaded machine
    assert settled(cluster) == before
