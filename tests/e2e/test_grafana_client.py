"""Grafana's Pyroscope datasource against a running querier: the calls it makes, through the published
Connect clients of github.com/grafana/pyroscope/api (tests/targets/grafanaclient), answer what our own
/api/v1 answers for the same data; bad input gets the right Connect code and our message; and Pyroscope's
HTTP /pyroscope/render and /pyroscope/render-diff answer the same merges.

The data: the Go workload's real CPU profile pushed six times, 20 s apart (service "workload"), a
hand-built CPU profile whose samples carry span ids (service "api"), and the workload's heap profile.
"""

from __future__ import annotations

import base64
import gzip
import time
from dataclasses import dataclass

import pytest
from e2e.calls import CPU, Window, ingest, rest
from e2e.cluster import Cluster
from e2e.grafana import GrafanaClient, read_tree, self_by_name, top_names
from infra import gotargets
from infra.stringtable import interner

from flamewatch.api.perftools.profiles import profile_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

WORKLOAD = '{service_name="workload"}'
INUSE = "memory:inuse_space:bytes:space:bytes"
PUSH_GAP_NS = 20 * 10**9
PUSHES = 6
MAX_NODES = 2048
# Grafana's calls for a "both" query with the query editor's pickers before it, then the profiles app's.
GRAFANA_ORDER = ["ProfileTypes", "LabelNames", "LabelValues", "SelectSeries", "SelectMergeStacktraces",
                 "SelectMergeStacktracesTree", "Series", "SelectMergeProfile", "Diff", "GetProfileStats"]
# (stack, leaf first; cpu nanoseconds; span id) of service "api"
SPAN_SAMPLES = [(["login", "serve", "main"], 100, "a1"), (["login", "serve", "main"], 50, "a2"),
                (["home", "serve", "main"], 30, "b1")]
# ... and one labelled as Pyroscope's canary and the older Go otel-profiling package label a span: profile_id
LEGACY_SPAN_SAMPLES = [(["home", "serve", "main"], 7, "c1")]


@dataclass(frozen=True)
class Loaded:
    window: Window
    times_ns: list[int]  # of the workload's CPU profiles

    @property
    def start_ms(self) -> int:
        return self.window.start_ns // 10**6

    @property
    def end_ms(self) -> int:
        return self.window.end_ns // 10**6

    @property
    def split_ms(self) -> int:
        """Between the third and fourth CPU profile: Diff's left side holds three, its right side three."""
        return (self.times_ns[2] + self.times_ns[3]) // 2 // 10**6


def at_time(gzipped: bytes, time_ns: int) -> bytes:
    p = profile_pb2.Profile.FromString(gzip.decompress(gzipped))
    p.time_nanos = time_ns
    return gzip.compress(p.SerializeToString())


def span_profile(time_ns: int) -> bytes:
    p = profile_pb2.Profile(string_table=[""], time_nanos=time_ns, duration_nanos=10**9, period=10**7)
    s = interner(p)
    p.sample_type.add(type=s("cpu"), unit=s("nanoseconds"))
    p.period_type.type, p.period_type.unit = s("cpu"), s("nanoseconds")
    ids = {name: i + 1 for i, name in enumerate(["login", "home", "serve", "main"])}
    for name, i in ids.items():
        p.function.add(id=i, name=s(name), system_name=s(name), filename=s("api.go"))
        p.location.add(id=i, address=0x1000 * i).line.add(function_id=i, line=i)
    for key, samples in (("span_id", SPAN_SAMPLES), ("profile_id", LEGACY_SPAN_SAMPLES)):
        for stack, value, span in samples:
            sample = p.sample.add(location_id=[ids[n] for n in stack], value=[value])
            sample.label.add(key=s(key), str=s(span))
    return gzip.compress(p.SerializeToString())


def push(cluster: Cluster, labels: dict[str, str], data: bytes) -> None:
    r = ingest(cluster, None, labels, data)
    assert r.status_code == 200, r.text


@pytest.fixture(scope="module")
def loaded(cluster: Cluster, go_profiles: dict[str, bytes]) -> Loaded:
    now = time.time_ns() // 10**9 * 10**9
    times = [now - (PUSHES - i) * PUSH_GAP_NS for i in range(PUSHES)]
    for t in times:
        push(cluster, {"service_name": "workload", "__name__": "process_cpu"}, at_time(go_profiles["cpu"], t))
    for t in times[:3]:
        push(cluster, {"service_name": "workload", "__name__": "memory"}, at_time(go_profiles["heap"], t))
    push(cluster, {"service_name": "api", "__name__": "process_cpu"}, span_profile(times[-1]))
    return Loaded(Window.around(*times), times)


@pytest.fixture(scope="module")
def client() -> GrafanaClient:
    return GrafanaClient(gotargets.build("grafanaclient"))


def run(client: GrafanaClient, cluster: Cluster, loaded: Loaded, *args: str) -> dict[str, dict]:
    return client.run(cluster.querier_url, loaded.start_ms, loaded.end_ms, "-diff-split", str(loaded.split_ms), *args)


def rest_range(loaded: Loaded, start_ms: int | None = None, end_ms: int | None = None) -> dict[str, str]:
    return {"from": str(start_ms or loaded.start_ms), "until": str(end_ms or loaded.end_ms)}


def rest_flamegraph(cluster: Cluster, query: str, params: dict[str, str]) -> dict:
    return rest(cluster, "/query", None, {"query": query, "max_nodes": str(MAX_NODES), **params})["flamegraph"]


@pytest.fixture(scope="module")
def grafana(client: GrafanaClient, cluster: Cluster, loaded: Loaded) -> dict[str, dict]:
    return run(client, cluster, loaded, "-selector", WORKLOAD, "-step", "20", "-tree", "-max-nodes", str(MAX_NODES))


def test_grafana_makes_its_calls_in_order_and_none_fails(grafana: dict[str, dict]):
    assert list(grafana) == GRAFANA_ORDER
    failed = {m: r for m, r in grafana.items() if isinstance(r, dict) and "error" in r}
    assert not failed


def test_flamegraph_is_our_flamegraph(grafana: dict[str, dict], cluster: Cluster, loaded: Loaded):
    ours = rest_flamegraph(cluster, CPU + WORKLOAD, rest_range(loaded))
    theirs = grafana["SelectMergeStacktraces"]
    assert ours["total"] > 0
    assert theirs == {k: ours[k] for k in ("names", "levels", "total", "max_self")}
    top = rest(cluster, "/query", None, {"query": CPU + WORKLOAD, "format": "top", **rest_range(loaded)})["top"]
    assert top_names(self_by_name(theirs), 3) == top_names({e["name"]: e["self"] for e in top["entries"]}, 3)


def test_tree_format_holds_the_flamegraph(grafana: dict[str, dict]):
    nodes = read_tree(base64.b64decode(grafana["SelectMergeStacktracesTree"]["tree"]))
    fg = grafana["SelectMergeStacktraces"]
    assert nodes[0][0] == "" and nodes[0][2] == 0  # the nameless root first
    assert sum(v for _, v, _ in nodes) == fg["total"]
    by_name = self_by_name(fg)
    tree_self: dict[str, int] = {}
    for name, value, _ in nodes[1:]:
        tree_self[name] = tree_self.get(name, 0) + value
    assert {k: v for k, v in tree_self.items() if v} == {k: v for k, v in by_name.items() if v and k != "total"}


def test_series_points_are_our_points(grafana: dict[str, dict], cluster: Cluster, loaded: Loaded):
    ours = rest(cluster, "/query_range", None, {"query": CPU + WORKLOAD, "step": "20s", **rest_range(loaded)})
    assert len(ours["series"]) == 1
    [theirs] = grafana["SelectSeries"]
    assert theirs["labels"] == {}
    assert theirs["points"] == [[float(t), v] for t, v in ours["series"][0]["points"]]
    assert len(theirs["points"]) == PUSHES


def test_pprof_has_our_totals_and_top_functions(grafana: dict[str, dict], cluster: Cluster, loaded: Loaded):
    profile = grafana["SelectMergeProfile"]
    fg = grafana["SelectMergeStacktraces"]
    assert profile["sample_types"] == ["cpu:nanoseconds"]
    assert profile["totals"] == [fg["total"]]
    assert profile["period_type"] == "cpu:nanoseconds"
    assert top_names(profile["self_by_function"], 3) == top_names(self_by_name(fg), 3)


def test_diff_compares_the_two_halves_as_our_diff(grafana: dict[str, dict], cluster: Cluster, loaded: Loaded):
    theirs = grafana["Diff"]
    split = loaded.split_ms
    left = rest_flamegraph(cluster, CPU + WORKLOAD, rest_range(loaded, end_ms=split))
    right = rest_flamegraph(cluster, CPU + WORKLOAD, rest_range(loaded, start_ms=split))
    assert (theirs["left_ticks"], theirs["right_ticks"]) == (left["total"], right["total"])
    assert left["total"] > 0 and right["total"] > 0
    ours = rest(cluster, "/diff", None, {
        "left_query": CPU + WORKLOAD, "right_query": CPU + WORKLOAD, "left_from": str(loaded.start_ms),
        "left_until": str(split), "right_from": str(split), "right_until": str(loaded.end_ms),
        "max_nodes": str(MAX_NODES)})["flamegraph"]
    # Pyroscope's diff names no binaries; ours does where the mappings say (the Go program's executable)
    assert ours.pop("binaries")[ours["names"].index("main.cpuFibonacci")].endswith("/workload")
    assert theirs == ours


def test_profile_stats_span_the_pushed_profiles(grafana: dict[str, dict], loaded: Loaded):
    stats = grafana["GetProfileStats"]
    assert stats["data_ingested"] is True
    assert stats["oldest_profile_time"] <= loaded.times_ns[0] // 10**6
    assert stats["newest_profile_time"] >= loaded.times_ns[-1] // 10**6


def test_profile_types_are_ours(grafana: dict[str, dict], cluster: Cluster, loaded: Loaded):
    ours = rest(cluster, "/profile_types", None, rest_range(loaded))["data"]
    assert grafana["ProfileTypes"] == ours


def test_span_profile_merges_only_the_spans_samples(client: GrafanaClient, cluster: Cluster, loaded: Loaded):
    out = run(client, cluster, loaded, "-selector", '{service_name="api"}', "-span-ids", "a1,a2",
              "-calls", "SelectMergeSpanProfile")
    fg = out["SelectMergeSpanProfile"]
    ours = rest_flamegraph(cluster, CPU + '{service_name="api", span_id=~"a1|a2"}', rest_range(loaded))
    assert fg["total"] == ours["total"] == 150
    assert self_by_name(fg).get("home", 0) == 0  # b1's sample is not in a1 or a2


def test_a_span_labelled_profile_id_is_found_as_pyroscope_finds_it(client: GrafanaClient, cluster: Cluster,
                                                                    loaded: Loaded):
    for spans, total, functions in (("c1", 7, {"home"}), ("a2,c1", 57, {"home", "login"})):
        fg = run(client, cluster, loaded, "-selector", '{service_name="api"}', "-span-ids", spans,
                 "-calls", "SelectMergeSpanProfile")["SelectMergeSpanProfile"]
        assert fg["total"] == total, (spans, fg)
        assert {n for n, v in self_by_name(fg).items() if v} == functions


def test_series_group_by_and_limit(client: GrafanaClient, cluster: Cluster, loaded: Loaded):
    out = run(client, cluster, loaded, "-selector", "{}", "-step", "20", "-group-by", "service_name",
              "-calls", "SelectSeries")
    assert sorted(s["labels"]["service_name"] for s in out["SelectSeries"]) == ["api", "workload"]
    limited = run(client, cluster, loaded, "-selector", "{}", "-step", "20", "-group-by", "service_name",
                  "-limit", "1", "-calls", "SelectSeries")
    [top] = limited["SelectSeries"]
    assert top["labels"] == {"service_name": "workload"}  # the larger of the two


def test_series_average_is_the_mean_profile_total_per_step(client: GrafanaClient, cluster: Cluster,
                                                           loaded: Loaded):
    step_s = 60
    args = ("-selector", WORKLOAD, "-step", str(step_s), "-calls", "SelectSeries")
    [summed] = run(client, cluster, loaded, *args, "-aggregation", "sum")["SelectSeries"]
    [averaged] = run(client, cluster, loaded, *args, "-aggregation", "avg")["SelectSeries"]
    per_step = {}
    for t in loaded.times_ns:
        bucket = (t - loaded.window.start_ns) // (step_s * 10**9)
        per_step[bucket] = per_step.get(bucket, 0) + 1
    counts = [per_step[b] for b in sorted(per_step)]
    assert [t for t, _ in averaged["points"]] == [t for t, _ in summed["points"]]
    assert [round(v * n) for (_, v), n in zip(averaged["points"], counts, strict=True)] == \
        [round(v) for _, v in summed["points"]]
    assert any(n > 1 for n in counts)  # some step holds several profiles, so the two differ


def test_exemplars_name_a_profile_of_each_point_that_opens_alone(client: GrafanaClient, cluster: Cluster,
                                                                 loaded: Loaded):
    out = run(client, cluster, loaded, "-selector", WORKLOAD, "-step", "60", "-exemplars", "-calls", "SelectSeries")
    [series] = out["SelectSeries"]
    exemplars = series["exemplars"]
    assert [e["point"] for e in exemplars] == [t for t, _ in series["points"]]
    pushed_ms = {t // 10**6 for t in loaded.times_ns}
    for e in exemplars:
        assert e["timestamp"] in pushed_ms and e["point"] <= e["timestamp"] < e["point"] + 60_000
        assert (e["labels"]["service_name"], e["labels"]["__profile_type__"]) == ("workload", CPU)
    e = exemplars[-1]
    alone = run(client, cluster, loaded, "-selector", WORKLOAD, "-profile-ids", e["profile_id"],
                "-calls", "SelectMergeStacktraces")["SelectMergeStacktraces"]
    nearest = rest(cluster, "/query", None, {"query": CPU + WORKLOAD, "time": str(e["timestamp"])})["flamegraph"]
    assert alone["total"] == nearest["total"] == e["value"] > 0
    bad = run(client, cluster, loaded, "-selector", WORKLOAD, "-profile-ids", "7c9e6679-7425-40de-944b",
              "-calls", "SelectMergeStacktraces")["SelectMergeStacktraces"]["error"]
    assert bad["code"] == "invalid_argument" and "is not a profile id of this server" in bad["message"]


def test_json_bodies_and_gzip_answer_the_same(client: GrafanaClient, cluster: Cluster, loaded: Loaded,
                                              grafana: dict[str, dict]):
    out = run(client, cluster, loaded, "-selector", WORKLOAD, "-max-nodes", str(MAX_NODES), "-json", "-gzip",
              "-calls", "SelectMergeStacktraces,SelectMergeProfile,Diff")
    for method in ("SelectMergeStacktraces", "Diff"):
        assert out[method] == grafana[method]
    assert out["SelectMergeProfile"]["totals"] == grafana["SelectMergeProfile"]["totals"]


MERGE_METHODS = "SelectMergeStacktraces,SelectMergeSpanProfile,SelectMergeProfile,SelectSeries,Diff"


@pytest.mark.parametrize(("args", "code", "message"), [
    (("-selector", '{service_name=}'), "invalid_argument", "label_selector"),
    (("-selector", '{service_name="workload"'), "invalid_argument", "label_selector"),
    (("-profile-type", "nope:cpu:nanoseconds:cpu:nanoseconds"), "not_found", 'unknown profile type "nope:'),
    (("-profile-type", "cpu"), "invalid_argument", 'invalid profile type id "cpu"'),
    (("-max-nodes", "-5"), "invalid_argument", "max_nodes must be between 1 and"),
])
def test_bad_input_gets_the_right_code_and_our_message(client: GrafanaClient, cluster: Cluster, loaded: Loaded,
                                                       args: tuple[str, ...], code: str, message: str):
    out = run(client, cluster, loaded, *args, "-span-ids", "a1", "-calls", MERGE_METHODS)
    if args[0] == "-max-nodes":  # SelectSeries and SelectMergeProfile take no max_nodes that matters
        out = {m: out[m] for m in ("SelectMergeStacktraces", "SelectMergeSpanProfile", "Diff")}
    for method, answer in out.items():
        assert answer and "error" in answer, (method, answer)
        assert answer["error"]["code"] == code, (method, answer)
        assert message in answer["error"]["message"], (method, answer)


def test_a_range_that_ends_before_it_starts_is_invalid(client: GrafanaClient, cluster: Cluster, loaded: Loaded):
    out = client.run(cluster.querier_url, loaded.end_ms, loaded.start_ms, "-selector", WORKLOAD,
                     "-span-ids", "a1", "-calls", MERGE_METHODS)
    for method, answer in out.items():
        assert answer and answer["error"]["code"] == "invalid_argument", (method, answer)
        assert "is after end" in answer["error"]["message"], (method, answer)


def test_another_tenant_sees_none_of_the_data(client: GrafanaClient, cluster: Cluster, loaded: Loaded):
    out = run(client, cluster, loaded, "-tenant", "someone-else", "-selector", WORKLOAD,
              "-calls", "ProfileTypes,SelectMergeStacktraces,GetProfileStats")
    assert out["ProfileTypes"] == []
    assert out["SelectMergeStacktraces"]["error"]["code"] == "not_found"
    assert "stored types are: none yet" in out["SelectMergeStacktraces"]["error"]["message"]
    assert out["GetProfileStats"] == {"data_ingested": False, "oldest_profile_time": 0, "newest_profile_time": 0}


def test_empty_span_selector_is_invalid(client: GrafanaClient, cluster: Cluster, loaded: Loaded):
    out = run(client, cluster, loaded, "-span-ids", ",", "-calls", "SelectMergeSpanProfile")
    assert out["SelectMergeSpanProfile"]["error"] == {
        "code": "invalid_argument", "message": "span_selector is empty: give the span ids whose samples to merge"}


# ------------------------------------------------------------------------------- HTTP render


def render(cluster: Cluster, path: str, params: dict[str, str], status: int = 200) -> dict:
    r = cluster.http.get(f"{cluster.querier_url}/pyroscope/{path}", params=params)
    assert r.status_code == status, r.text
    return r.json()


def test_render_answers_our_flamegraph_and_timeline(cluster: Cluster, loaded: Loaded):
    body = render(cluster, "render", {"query": CPU + WORKLOAD, **rest_range(loaded), "max-nodes": str(MAX_NODES),
                                      "format": "json"})
    ours = rest_flamegraph(cluster, CPU + WORKLOAD, rest_range(loaded))
    assert body["flamebearer"] == {"names": ours["names"], "levels": ours["levels"], "numTicks": ours["total"],
                                   "maxSelf": ours["max_self"]}
    assert body["metadata"] == {"format": "single", "spyName": "", "sampleRate": 10**9, "units": "samples",
                                "name": "cpu"}
    timeline = body["timeline"]
    assert timeline["startTime"] == loaded.start_ms // 1000
    assert timeline["durationDelta"] == 15
    assert sum(timeline["samples"]) == ours["total"]
    assert sum(1 for v in timeline["samples"] if v) == PUSHES
    assert body["groups"] is None


def test_render_groups_by_a_label(cluster: Cluster, loaded: Loaded):
    body = render(cluster, "render", {"query": CPU + "{}", **rest_range(loaded), "groupBy": "service_name"})
    assert sorted(body["groups"]) == ["api", "workload"]
    assert sum(body["groups"]["api"]["samples"]) == sum(v for _, v, _ in SPAN_SAMPLES + LEGACY_SPAN_SAMPLES)


def test_render_diff_answers_our_diff(cluster: Cluster, loaded: Loaded):
    split = str(loaded.split_ms)
    body = render(cluster, "render-diff", {
        "leftQuery": CPU + WORKLOAD, "leftFrom": str(loaded.start_ms), "leftUntil": split,
        "rightQuery": CPU + WORKLOAD, "rightFrom": split, "rightUntil": str(loaded.end_ms),
        "max-nodes": str(MAX_NODES)})
    ours = rest(cluster, "/diff", None, {
        "left_query": CPU + WORKLOAD, "right_query": CPU + WORKLOAD, "left_from": str(loaded.start_ms),
        "left_until": split, "right_from": split, "right_until": str(loaded.end_ms),
        "max_nodes": str(MAX_NODES)})["flamegraph"]
    assert body["flamebearer"]["levels"] == ours["levels"]
    assert (body["leftTicks"], body["rightTicks"]) == (ours["left_ticks"], ours["right_ticks"])
    assert body["metadata"]["format"] == "double"


@pytest.mark.parametrize(("path", "params", "status", "message"), [
    ("render", {"query": '{service_name="workload"}'}, 400, "the query names no profile type"),
    ("render", {"query": "nope:cpu:nanoseconds:cpu:nanoseconds"}, 404, "unknown profile type"),
    ("render", {"query": CPU, "aggregation": "median"}, 400, 'unknown aggregation "median"'),
    ("render", {"query": CPU, "from": "now", "until": "now-1h"}, 400, "is after until"),
    ("render-diff", {"leftQuery": CPU, "rightQuery": INUSE}, 400, "both sides need the same profile type"),
])
def test_render_bad_input(cluster: Cluster, loaded: Loaded, path: str, params: dict[str, str], status: int,
                          message: str):
    assert message in render(cluster, path, params, status)["error"]

