"""Sample labels, line granularity and unsymbolized frames through the REST and gRPC APIs of separately
running services, with profiles pushed over HTTP.

A hand-built CPU profile of service "api" labels its samples with `handler` and `span_id`; a second
service has `handler="/x"` as a series label, so a selector on `handler` is applied to its series and to
the samples of the others. The real Go workload labels its CPU bursts with pprof.Do. A copy of the Go
CPU profile stripped of its lines and functions has only mappings and addresses.
"""

from __future__ import annotations

import gzip
import time
from dataclasses import dataclass

import pytest
from e2e.calls import CPU, TIMEOUT_S, Window, ingest, metadata, rest
from e2e.cluster import Cluster
from infra.stringtable import interner

from flamewatch.api.flamewatch.v1 import query_pb2
from flamewatch.api.perftools.profiles import profile_pb2
from flamewatch.pprof import decode

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

TENANT = "e2e-samples"
DAY = "1d"
# (stack leaf first, cpu nanoseconds, sample labels) of service "api"
API_SAMPLES = [
    (["login", "serve", "main"], 100, {"handler": "/login", "span_id": "a1"}),
    (["login", "serve", "main"], 50, {"handler": "/login", "span_id": "a2"}),
    (["home", "serve", "main"], 30, {"handler": "/home", "span_id": "b1"}),
    (["gc"], 7, {}),
]
LABELLED_SERIES_SAMPLES = [(["login", "main"], 11, {"handler": "/login", "span_id": "c1"})]
LINES = {"login": 12, "home": 20, "serve": 30, "main": 40, "gc": 50}


def cpu_profile(samples: list[tuple[list[str], int, dict]], time_ns: int) -> bytes:
    p = profile_pb2.Profile(string_table=[""], time_nanos=time_ns, duration_nanos=10**9, period=10**7)
    s = interner(p)

    p.sample_type.add(type=s("cpu"), unit=s("nanoseconds"))
    p.period_type.type, p.period_type.unit = s("cpu"), s("nanoseconds")
    ids = {name: i + 1 for i, name in enumerate(LINES)}
    for name, i in ids.items():
        p.function.add(id=i, name=s(name), system_name=s(name), filename=s("/src/api/api.go"))
        p.location.add(id=i, address=0x1000 * i).line.add(function_id=i, line=LINES[name])
    for stack, value, labels in samples:
        sample = p.sample.add(location_id=[ids[n] for n in stack], value=[value])
        for key, text in labels.items():
            sample.label.add(key=s(key), str=s(text))
    return gzip.compress(p.SerializeToString())


def stripped(raw: bytes) -> bytes:
    """A Go profile reduced to mappings and addresses: no lines, no functions, no has_* flags."""
    p = profile_pb2.Profile()
    p.ParseFromString(gzip.decompress(raw))
    del p.function[:]
    for location in p.location:
        del location.line[:]
    for mapping in p.mapping:
        mapping.has_functions = mapping.has_filenames = mapping.has_line_numbers = mapping.has_inline_frames = False
    return gzip.compress(p.SerializeToString())


@dataclass(frozen=True)
class Pushed:
    window: Window
    cpu: bytes  # the Go workload's CPU profile as pushed
    bare: bytes  # its stripped copy


@pytest.fixture(scope="module")
def pushed(cluster: Cluster, go_profiles: dict[str, bytes]) -> Pushed:
    now = time.time_ns()
    bare = stripped(go_profiles["cpu"])
    for labels, data in [({"service_name": "api"}, cpu_profile(API_SAMPLES, now)),
                         ({"service_name": "api2", "handler": "/x"}, cpu_profile(LABELLED_SERIES_SAMPLES, now)),
                         ({"service_name": "workload"}, go_profiles["cpu"]),
                         ({"service_name": "bare"}, bare)]:
        r = ingest(cluster, TENANT, {**labels, "__name__": "process_cpu"}, data)
        assert r.status_code == 200, r.text
    return Pushed(Window.around(now, decode(go_profiles["cpu"]).time_nanos), go_profiles["cpu"], bare)


def flamegraph(cluster: Cluster, pushed: Pushed, selector: str, **params) -> dict:
    return rest(cluster, "/query", TENANT, {"query": CPU + selector, **pushed.window.rest(), **params})["flamegraph"]


def grpc_query(cluster: Cluster, pushed: Pushed, selector: str, **fields) -> query_pb2.QueryResponse:
    request = query_pb2.QueryRequest(query=CPU + selector, range=pushed.window.grpc(), **fields)
    return cluster.query.Query(request, metadata=metadata(TENANT), timeout=TIMEOUT_S)


@pytest.mark.parametrize(("selector", "total"), [
    ('{service_name="api"}', 187),
    ('{service_name="api", handler="/login"}', 150),
    ('{service_name="api", handler!="/login"}', 37),  # an absent label is "": the unlabelled gc sample stays
    ('{service_name="api", handler=~"/(login|home)"}', 180),
    ('{service_name="api", handler=""}', 7),
    ('{span_id="a2"}', 50),
    ('{handler="/login"}', 150),  # api2's series label handler="/x" decides for all of its samples
    ('{handler="/x"}', 11),
    ('{service_name=~"api.*", span_id=~"a.|c1"}', 161),  # a1 and a2 of api, c1 of api2
    ('{service_name="api", handler="/nowhere"}', 0),
])
def test_selectors_match_sample_labels_over_rest_and_grpc(cluster: Cluster, pushed: Pushed, selector: str,
                                                          total: int):
    assert flamegraph(cluster, pushed, selector)["total"] == total
    assert grpc_query(cluster, pushed, selector).flamegraph.total == total


def test_only_the_matching_samples_stacks_are_in_the_flamegraph(cluster: Cluster, pushed: Pushed):
    top = rest(cluster, "/query", TENANT, {"query": CPU + '{service_name="api", handler="/home"}', "format": "top",
                                          **pushed.window.rest()})["top"]
    assert {e["name"]: (e["self"], e["total"]) for e in top["entries"]} == {
        "home": (30, 30), "serve": (0, 30), "main": (0, 30)}


def test_pprof_of_a_sample_selection_keeps_its_labels(cluster: Cluster, pushed: Pushed):
    r = cluster.http.get(f"{cluster.querier_url}/api/v1/query", headers={"X-Scope-OrgID": TENANT}, params={
        "query": CPU + '{service_name="api", handler="/login"}', "format": "pprof", **pushed.window.rest()})
    assert r.status_code == 200, r.text
    p = decode(r.content)
    labels = {(p.string(k), p.string(v)) for k, v in zip(p.samples.label_key, p.samples.label_str, strict=True)}
    assert labels == {("handler", "/login"), ("span_id", "a1"), ("span_id", "a2")}
    assert sorted(p.samples.values[:, 0].tolist()) == [50, 100]
    grpc_body = grpc_query(cluster, pushed, '{service_name="api", handler="/login"}',
                           format=query_pb2.PROFILE_FORMAT_PPROF).pprof
    assert decode(grpc_body) == p


def test_query_range_groups_by_a_sample_label(cluster: Cluster, pushed: Pushed):
    params = {"query": CPU + '{service_name="api"}', "step": DAY, "group_by": "handler", **pushed.window.rest()}
    answer = rest(cluster, "/query_range", TENANT, params)
    assert answer["warnings"] == []
    assert {s["labels"]["handler"]: sum(v for _, v in s["points"]) for s in answer["series"]} == {
        "": 7, "/home": 30, "/login": 150}
    request = query_pb2.QueryRangeRequest(query=CPU + '{service_name="api"}', range=pushed.window.grpc(),
                                          step_ns=86_400 * 10**9, group_by=["service_name", "handler"])
    response = cluster.query.QueryRange(request, metadata=metadata(TENANT), timeout=TIMEOUT_S)
    grouped = {tuple((p.name, p.value) for p in s.labels): sum(x.value for x in s.points) for s in response.series}
    assert grouped == {(("handler", ""), ("service_name", "api")): 7,
                       (("handler", "/home"), ("service_name", "api")): 30,
                       (("handler", "/login"), ("service_name", "api")): 150}


def test_query_range_keeps_only_the_matching_samples(cluster: Cluster, pushed: Pushed):
    params = {"query": CPU + '{service_name=~"api.*", handler="/login"}', "step": DAY, **pushed.window.rest()}
    answer = rest(cluster, "/query_range", TENANT, params)
    assert [sum(v for _, v in s["points"]) for s in answer["series"]] == [150]
    # without sample matchers the per-series totals answer
    params["query"] = CPU + '{service_name="api2"}'
    assert [sum(v for _, v in s["points"]) for s in rest(cluster, "/query_range", TENANT, params)["series"]] == [11]


def test_label_names_and_values_include_sample_labels(cluster: Cluster, pushed: Pushed):
    names = rest(cluster, "/labels", TENANT, pushed.window.rest())["data"]
    assert {"handler", "span_id", "service_name"} <= set(names)
    assert rest(cluster, "/label/handler/values", TENANT, pushed.window.rest())["data"] == [
        "/fibonacci", "/hash", "/home", "/login", "/x"]
    api_only = {**pushed.window.rest(), "match[]": '{service_name="api"}'}
    assert rest(cluster, "/label/span_id/values", TENANT, api_only)["data"] == ["a1", "a2", "b1"]
    response = cluster.query.LabelValues(query_pb2.LabelValuesRequest(
        name="span_id", matchers=['{service_name="api", handler="/login"}'], range=pushed.window.grpc()),
        metadata=metadata(TENANT), timeout=TIMEOUT_S)
    assert list(response.values) == ["a1", "a2"]
    response = cluster.query.LabelNames(query_pb2.LabelNamesRequest(
        matchers=['{service_name="api2"}'], range=pushed.window.grpc()), metadata=metadata(TENANT), timeout=TIMEOUT_S)
    assert list(response.names) == ["__name__", "__profile_type__", "handler", "service_name", "span_id"]


def test_high_cardinality_sample_labels_create_no_series(cluster: Cluster, pushed: Pushed):
    series = rest(cluster, "/series", TENANT, pushed.window.rest())["data"]
    # one series per sample type: the Go profiles have two (samples, cpu), the hand-built ones one
    assert sorted(s["service_name"] for s in series) == ["api", "api2", "bare", "bare", "workload", "workload"]
    assert all("span_id" not in s for s in series)
    assert cluster.counts(TENANT)["series"] == 6


def test_go_workload_samples_are_selected_by_their_pprof_do_labels(cluster: Cluster, pushed: Pushed):
    p = decode(pushed.cpu)
    handler_of = {}
    for sample, key, value in zip(p.samples.label_sample, p.samples.label_key, p.samples.label_str, strict=True):
        if p.string(key) == "handler":
            handler_of[int(sample)] = p.string(value)
    expected = sum(int(p.samples.values[i, 1]) for i, h in handler_of.items() if h == "/fibonacci")
    assert expected > 0, "the workload's CPU profile has no /fibonacci samples"
    top = rest(cluster, "/query", TENANT, {"query": CPU + '{service_name="workload", handler="/fibonacci"}',
                                          "format": "top", "max_nodes": 1000, **pushed.window.rest()})["top"]
    assert top["total"] == expected
    names = {e["name"] for e in top["entries"]}
    assert "main.fibonacci" in names and "main.cpuHashLoop" not in names


def test_line_granularity_names_frames_by_file_and_line(cluster: Cluster, pushed: Pushed):
    by_function = flamegraph(cluster, pushed, '{service_name="api"}')
    assert sorted(by_function["names"]) == ["gc", "home", "login", "main", "serve", "total"]
    by_line = flamegraph(cluster, pushed, '{service_name="api"}', granularity="lines")
    assert sorted(by_line["names"]) == sorted(["total", *(f"{n} api.go:{line}" for n, line in LINES.items())])
    assert by_line["total"] == by_function["total"] == 187
    response = grpc_query(cluster, pushed, '{service_name="api"}', granularity=query_pb2.GRANULARITY_LINES)
    assert sorted(response.flamegraph.names) == sorted(by_line["names"])
    workload = flamegraph(cluster, pushed, '{service_name="workload"}', granularity="lines", max_nodes=100_000)
    assert any(n.startswith("main.fibonacci cpu.go:") for n in workload["names"])
    bad = rest(cluster, "/query", TENANT, {"query": CPU, "granularity": "bytes", **pushed.window.rest()}, status=400)
    assert "unknown granularity 'bytes'; known: functions, lines" in str(bad)


def test_unsymbolized_frames_are_named_after_their_mapping(cluster: Cluster, pushed: Pushed):
    p = decode(pushed.bare)
    mappings = {int(m): i for i, m in enumerate(p.mappings.id)}
    expected = {"total"}
    for address, mapping_id in zip(p.locations.address.tolist(), p.locations.mapping_id.tolist(), strict=True):
        m = mappings[mapping_id]
        start, limit = int(p.mappings.memory_start[m]), int(p.mappings.memory_limit[m])
        assert start <= address < limit
        base = p.string(p.mappings.filename[m]).rsplit("/", 1)[-1]
        expected.add(f"[{base}] 0x{address - start + int(p.mappings.file_offset[m]):x}")
    names = flamegraph(cluster, pushed, '{service_name="bare"}', max_nodes=100_000)["names"]
    assert set(names) == expected
    assert any(n.startswith("[workload] 0x") for n in names)
