"""The ingester and the querier as separate processes on real Postgres and MinIO, fed real Go profiles.

The six profiles of the Go workload go in through every door, each into its own tenant: the
`flamewatch upload` command, HTTP POST /ingest and gRPC Push. Every REST endpoint and gRPC method is
then asked about them and the answers are checked against `go tool pprof`'s reading of the same files
(see `answers`). Finally both services restart and every answer must stay the same.

Refused input, limits and MinIO outages are in test_split_services_errors.py.
"""

from __future__ import annotations

import gzip
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from e2e import answers
from e2e.calls import (
    CPU,
    TIMEOUT_S,
    Window,
    grpc_error,
    ingest,
    metadata,
    raw_series,
    rest,
    rfc3339,
    tenant_header,
    type_json,
    unpacked_size,
)
from e2e.cluster import FLAMEWATCH, Cluster
from e2e.pushes import ALL_TYPE_IDS, GO_PROFILES, WORKLOAD_FUNCTIONS, Pushes, profile_time_ns, rewritten

from flamewatch.api.flamewatch.v1 import ingest_pb2, query_pb2, types_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

CLI, HTTP, GRPC, TIMELINE = "e2e-cli", "e2e-http", "e2e-grpc", "e2e-timeline"
MAIN_TENANTS = (CLI, HTTP, GRPC)
DAY_NS = 24 * 3600 * 10**9
GRPC_FORMATS = {"flamegraph": query_pb2.PROFILE_FORMAT_FLAMEGRAPH, "top": query_pb2.PROFILE_FORMAT_TOP,
                "tree": query_pb2.PROFILE_FORMAT_TREE, "pprof": query_pb2.PROFILE_FORMAT_PPROF}
# The label each tenant's series differ by, for group_by.
GROUP_LABEL = {CLI: "env", HTTP: "source", GRPC: "source", TIMELINE: "service_name"}


@dataclass(frozen=True)
class Stored:
    pushes: Pushes
    window: Window  # covers every pushed profile
    timeline: tuple[Path, Path]  # the CPU profile at t1 and, values tripled, at t2
    t1: int
    t2: int
    workdir: Path


def sorted_series(series: list[dict[str, str]]) -> list[list[tuple[str, str]]]:
    return sorted(sorted(s.items()) for s in series)


# ------------------------------------------------------------------------------------------ pushes


def upload_with_cli(cluster: Cluster, files: dict[str, Path], pushes: Pushes) -> None:
    labels = {"service_name": "workload", "env": "cli"}
    paths = [files[name] for name in GO_PROFILES]
    label_args = [a for k, v in labels.items() for a in ("--label", f"{k}={v}")]
    result = subprocess.run([str(FLAMEWATCH), "upload", *map(str, paths), "--url", cluster.ingester_url,
                             "--tenant", CLI, *label_args], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"{files[n]}: stored {len(go.sample_types)} profiles ({unpacked_size(files[n].read_bytes())} bytes)"
        for n, go in GO_PROFILES.items()]
    for name in GO_PROFILES:
        pushes.add(CLI, labels, name, files[name])


def post_over_http(cluster: Cluster, profiles: dict[str, bytes], files: dict[str, Path], pushes: Pushes) -> None:
    for name, go in GO_PROFILES.items():
        labels = {"service_name": "workload", "source": name}
        r = ingest(cluster, HTTP, {**labels, "__name__": go.name}, profiles[name])
        assert (r.status_code, r.json()) == (200, {"profiles": len(go.sample_types),
                                                   "bytes": unpacked_size(profiles[name])})
        pushes.add(HTTP, labels, name, files[name])


def push_over_grpc(cluster: Cluster, profiles: dict[str, bytes], files: dict[str, Path], pushes: Pushes) -> None:
    series = []
    for name, go in GO_PROFILES.items():
        labels = {"service_name": "workload-grpc", "source": name}
        series.append(raw_series({**labels, "__name__": go.name}, (name, profiles[name])))
        pushes.add(GRPC, labels, name, files[name])
    response = cluster.ingest.Push(ingest_pb2.PushRequest(series=series), metadata=metadata(GRPC), timeout=60)
    assert (response.profiles, response.bytes) == (sum(len(go.sample_types) for go in GO_PROFILES.values()),
                                                   sum(map(unpacked_size, profiles.values())))


def post_timeline(cluster: Cluster, cpu: bytes, workdir: Path, pushes: Pushes) -> tuple[int, int, Path, Path]:
    """The CPU profile twice, 30 minutes apart, the second with every value tripled; no __name__ given,
    so the name comes from the period type."""
    now_ms = time.time_ns() // 10**6
    t1, t2 = (now_ms - 40 * 60_000) * 10**6, (now_ms - 10 * 60_000) * 10**6
    paths = []
    for i, (at, scale) in enumerate(((t1, 1), (t2, 3)), 1):
        data = rewritten(cpu, time_ns=at, scale=scale)
        path = workdir / f"timeline-{i}.pb.gz"
        path.write_bytes(data)
        r = ingest(cluster, TIMELINE, {"service_name": "timeline"}, data)
        assert (r.status_code, r.json()) == (200, {"profiles": 2, "bytes": unpacked_size(data)})
        pushes.add(TIMELINE, {"service_name": "timeline"}, "cpu", path)
        paths.append(path)
    return t1, t2, paths[0], paths[1]


@pytest.fixture(scope="module")
def stored(cluster: Cluster, go_profiles: dict[str, bytes], go_profile_files: dict[str, Path],
           tmp_path_factory: pytest.TempPathFactory) -> Stored:
    """Every push of the module, each checked on the way: the CLI's output and exit code, the HTTP and
    gRPC replies (profiles stored, decompressed bytes)."""
    workdir = tmp_path_factory.mktemp("pushes")
    pushes = Pushes()
    upload_with_cli(cluster, go_profile_files, pushes)
    post_over_http(cluster, go_profiles, go_profile_files, pushes)
    push_over_grpc(cluster, go_profiles, go_profile_files, pushes)
    t1, t2, first, second = post_timeline(cluster, go_profiles["cpu"], workdir, pushes)
    window = Window.around(t1, *(profile_time_ns(p) for p in go_profiles.values()))
    return Stored(pushes, window, (first, second), t1, t2, workdir)


# ------------------------------------------------------------------------------------------ stored


def test_every_push_is_indexed_and_its_block_stored(cluster: Cluster, stored: Stored):
    blocks = cluster.blocks()
    for tenant in stored.pushes.tenants():
        series = stored.pushes.series(tenant)
        profiles = sum(len(files) for files in series.values())
        mine = [(key, n) for t, key, n in blocks if t == tenant]
        assert cluster.counts(tenant) == {"profiles": profiles, "series": len(series), "blocks": len(mine)}
        assert sum(n for _, n in mine) == profiles
        assert mine, tenant
        for key, _ in mine:
            assert key.startswith(f"{tenant}/blocks/0/") and key.endswith(".parquet"), key
    assert cluster.objects() == [key for _, key, _ in blocks]


def test_each_service_set_what_it_started_with_aside_from_the_garbage_collector(cluster: Cluster, stored: Stored):
    """Long-lived start-up objects are frozen (`rpc.memory.freeze_started`), so full collections stay short."""
    for url in (cluster.ingester_url, cluster.querier_url):
        text = cluster.http.get(f"{url}/metrics").text
        frozen = [float(line.split()[-1]) for line in text.splitlines()
                  if line.startswith("flamewatch_gc_frozen_objects ")]
        assert frozen and frozen[0] > 10_000, (url, frozen)


def test_profile_types(cluster: Cluster, stored: Stored):
    assert {
        "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "process_cpu:samples:count:cpu:nanoseconds",
        "memory:inuse_space:bytes:space:bytes", "memory:inuse_objects:count:space:bytes",
        "memory:alloc_space:bytes:space:bytes", "memory:alloc_objects:count:space:bytes",
        "goroutine:goroutine:count:goroutine:count", "mutex:delay:nanoseconds:contentions:count",
        "mutex:contentions:count:contentions:count", "block:contentions:count:contentions:count",
        "block:delay:nanoseconds:contentions:count",
    } == set(ALL_TYPE_IDS)
    for tenant in stored.pushes.tenants():
        want = stored.pushes.type_ids(tenant)
        assert want == (ALL_TYPE_IDS if tenant != TIMELINE else [CPU, "process_cpu:samples:count:cpu:nanoseconds"])
        assert rest(cluster, "/profile_types", tenant, stored.window.rest()) == {
            "status": "success", "data": [type_json(t) for t in want]}
        response = cluster.query.ProfileTypes(query_pb2.ProfileTypesRequest(range=stored.window.grpc()),
                                              metadata=metadata(tenant), timeout=TIMEOUT_S)
        assert [{"id": t.id, "name": t.name, "sample_type": t.sample_type, "sample_unit": t.sample_unit,
                 "period_type": t.period_type, "period_unit": t.period_unit}
                for t in response.profile_types] == [type_json(t) for t in want]


def test_label_names_and_values(cluster: Cluster, stored: Stored):
    for tenant in stored.pushes.tenants():
        series = [dict(k) for k in stored.pushes.series(tenant)]
        sample_labels = stored.pushes.sample_labels(tenant)
        assert tenant != HTTP or {"handler", "span_id"} <= set(sample_labels), "the workload labels its CPU samples"
        names = sorted({n for s in series for n in s} | set(sample_labels))
        assert rest(cluster, "/labels", tenant, stored.window.rest()) == {"status": "success", "data": names}
        response = cluster.query.LabelNames(query_pb2.LabelNamesRequest(range=stored.window.grpc()),
                                            metadata=metadata(tenant), timeout=TIMEOUT_S)
        assert list(response.names) == names
        for name in names:
            values = sorted({s[name] for s in series if name in s} | sample_labels.get(name, set()))
            assert rest(cluster, f"/label/{name}/values", tenant, stored.window.rest())["data"] == values
            response = cluster.query.LabelValues(query_pb2.LabelValuesRequest(name=name, range=stored.window.grpc()),
                                                 metadata=metadata(tenant), timeout=TIMEOUT_S)
            assert list(response.values) == values
    assert rest(cluster, "/labels", HTTP, stored.window.rest())["data"] == sorted(
        ["__name__", "__profile_type__", "service_name", "source", *stored.pushes.sample_labels(HTTP)])
    assert rest(cluster, "/label/service_name/values", GRPC, stored.window.rest())["data"] == ["workload-grpc"]

    # match[] narrows the series; several match[] are a union
    matched = {**stored.window.rest(), "match[]": ['{source="cpu"}', '{source="mutex"}']}
    assert rest(cluster, "/label/__name__/values", HTTP, matched)["data"] == ["mutex", "process_cpu"]
    heap = {**stored.window.rest(), "match[]": ['{source="heap", __profile_type__=~".*inuse.*"}']}
    assert rest(cluster, "/label/__profile_type__/values", HTTP, heap)["data"] == [
        "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"]
    response = cluster.query.LabelValues(
        query_pb2.LabelValuesRequest(name="__name__", matchers=['{source="cpu"}', '{source="mutex"}'],
                                     range=stored.window.grpc()), metadata=metadata(GRPC), timeout=TIMEOUT_S)
    assert list(response.values) == ["mutex", "process_cpu"]
    response = cluster.query.LabelNames(query_pb2.LabelNamesRequest(matchers=['{env="cli"}'],
                                                                    range=stored.window.grpc()),
                                        metadata=metadata(CLI), timeout=TIMEOUT_S)
    assert list(response.names) == sorted(["__name__", "__profile_type__", "env", "service_name",
                                           *stored.pushes.sample_labels(CLI)])


def test_series(cluster: Cluster, stored: Stored):
    for tenant in stored.pushes.tenants():
        want = sorted([list(k) for k in stored.pushes.series(tenant)])
        body = rest(cluster, "/series", tenant, stored.window.rest())
        assert body["status"] == "success"
        assert sorted_series(body["data"]) == want
        response = cluster.query.Series(query_pb2.SeriesRequest(range=stored.window.grpc()),
                                        metadata=metadata(tenant), timeout=TIMEOUT_S)
        assert sorted_series([answers.labels_json(s.labels) for s in response.series]) == want
    assert len(stored.pushes.series(CLI)) == 11  # heap and allocs share the memory series
    assert len(stored.pushes.series(HTTP)) == 15

    selector = '{__name__=~"mem.*", source!="heap"}'
    want = [s for s in stored.pushes.series(HTTP) if dict(s)["source"] == "allocs"]
    body = rest(cluster, "/series", HTTP, {**stored.window.rest(), "match[]": selector})
    assert sorted_series(body["data"]) == sorted(list(s) for s in want) and len(want) == 4
    response = cluster.query.Series(query_pb2.SeriesRequest(matchers=[selector], range=stored.window.grpc()),
                                    metadata=metadata(HTTP), timeout=TIMEOUT_S)
    assert sorted_series([answers.labels_json(s.labels) for s in response.series]) == sorted(list(s) for s in want)


def test_tenants_are_isolated(cluster: Cluster, stored: Stored):
    for path in ("/profile_types", "/labels", "/series", "/label/__name__/values"):
        assert rest(cluster, path, None, stored.window.rest()) == {"status": "success", "data": []}, path
    assert list(cluster.query.ProfileTypes(query_pb2.ProfileTypesRequest(range=stored.window.grpc()),
                                           timeout=TIMEOUT_S).profile_types) == []
    assert rest(cluster, "/series", HTTP, {**stored.window.rest(), "match[]": '{env="cli"}'})["data"] == []
    assert rest(cluster, "/label/source/values", CLI, stored.window.rest())["data"] == []
    assert rest(cluster, "/query", None, {"query": CPU, **stored.window.rest()}, status=404) == {
        "error": f'unknown profile type "{CPU}"; stored types are: none yet'}
    request = query_pb2.QueryRequest(query=CPU, range=stored.window.grpc())
    error = grpc_error(cluster.query.Query, request, "e2e-nobody")
    assert (error.code(), error.details()) == (
        grpc.StatusCode.NOT_FOUND, f'unknown profile type "{CPU}"; stored types are: none yet')
    # the gRPC tenant's type, selected by the HTTP tenant's service name: nothing
    other = rest(cluster, "/query", GRPC, {"query": CPU + '{service_name="workload"}', **stored.window.rest()})
    assert (other["profiles"], other["flamegraph"]["total"], other["flamegraph"]["names"]) == (0, 0, ["total"])


# ------------------------------------------------------------------------------------------ totals


def expected_points(stored: Stored, tenant: str, type_id: str, step: int, group: str | None) -> list[dict]:
    """query_range's answer from the pushed files: per group and step, the sum over series of each
    series' sum (counters) or mean (gauges) of its profiles' totals in that step."""
    sample_type = type_id.split(":")[1]
    gauge = sample_type in answers.GAUGE_SAMPLE_TYPES
    cells: dict[tuple, dict[tuple, list[int]]] = {}
    for labels, files in stored.pushes.series_of_type(tenant, type_id).items():
        key = (dict(labels).get(group, ""),) if group else ()
        for f in files:
            bucket = (profile_time_ns(f.read_bytes()) - stored.window.start_ns) // step
            cells.setdefault(key, {}).setdefault((bucket, labels), []).append(answers.total(f, sample_type))
    out = []
    for key in sorted(cells):
        sums: dict[int, float] = {}
        for (bucket, _), totals in cells[key].items():
            sums[bucket] = sums.get(bucket, 0.0) + (sum(totals) / len(totals) if gauge else float(sum(totals)))
        out.append({"labels": {group: key[0]} if group else {},
                    "points": [[stored.window.start_ns + b * step, sums[b]] for b in sorted(sums)]})
    return out


def in_ms(series: list[dict]) -> list[dict]:
    return [{**s, "points": [[t // 10**6, v] for t, v in s["points"]]} for s in series]


@pytest.mark.parametrize("tenant", [*MAIN_TENANTS, TIMELINE])
def test_query_range_totals_equal_the_pushed_totals(cluster: Cluster, stored: Stored, tenant: str):
    default_step = max(10 * 10**9, (stored.window.end_ns - stored.window.start_ns) // 120)
    for type_id in stored.pushes.type_ids(tenant):
        sample_type = type_id.split(":")[1]
        files = [f for fs in stored.pushes.series_of_type(tenant, type_id).values() for f in fs]
        for step, group in ((None, None), (DAY_NS, GROUP_LABEL[tenant])):
            want = expected_points(stored, tenant, type_id, step or default_step, group)
            params = {"query": type_id, **stored.window.rest(), **({"step": "1d", "group_by": group} if step else {})}
            assert rest(cluster, "/query_range", tenant, params) == {"series": in_ms(want), "warnings": []}, type_id
            request = query_pb2.QueryRangeRequest(query=type_id, range=stored.window.grpc(), step_ns=step or 0,
                                                  group_by=[group] if group else [])
            response = cluster.query.QueryRange(request, metadata=metadata(tenant), timeout=TIMEOUT_S)
            assert [{"labels": answers.labels_json(s.labels),
                     "points": [[p.timestamp_ns, p.value] for p in s.points]} for s in response.series] == want
        # in one step: the pushed totals (gotool's), summed; a gauge's series contribute their mean
        one = rest(cluster, "/query_range", tenant, {"query": type_id, "step": "1d", **stored.window.rest()})
        if sample_type in answers.GAUGE_SAMPLE_TYPES:
            per_series = stored.pushes.series_of_type(tenant, type_id).values()
            value = sum(sum(answers.total(f, sample_type) for f in fs) / len(fs) for fs in per_series)
        else:
            value = sum(answers.total(f, sample_type) for f in files)
        assert one == {"series": [{"labels": {}, "points": [[stored.window.start_ns // 10**6, value]]}],
                       "warnings": []}
    if tenant == CLI:  # heap and allocs in one series: in-use memory is their mean
        heap, allocs = (p.file for p in stored.pushes.items if p.tenant == CLI and p.profile in ("heap", "allocs"))
        inuse = rest(cluster, "/query_range", CLI, {"query": "memory:inuse_space:bytes:space:bytes", "step": "1d",
                                                   **stored.window.rest()})
        mean = (answers.total(heap, "inuse_space") + answers.total(allocs, "inuse_space")) / 2
        assert inuse["series"][0]["points"] == [[stored.window.start_ns // 10**6, mean]]


def test_query_range_warns_of_a_group_by_label_no_series_has(cluster: Cluster, stored: Stored):
    """Grouping by a misspelt label would otherwise answer one group, as if it had worked."""
    params = {"query": CPU, "step": "1d", "group_by": ["instnace", "source"], **stored.window.rest()}
    answer = rest(cluster, "/query_range", HTTP, params)
    warning = 'group_by: no matching series or sample has the label "instnace", so it does not split them'
    assert answer["warnings"] == [warning]
    assert [s["labels"] for s in answer["series"]] == [{"instnace": "", "source": "cpu"}]
    request = query_pb2.QueryRangeRequest(query=CPU, range=stored.window.grpc(), step_ns=DAY_NS,
                                          group_by=["instnace", "source"])
    response = cluster.query.QueryRange(request, metadata=metadata(HTTP), timeout=TIMEOUT_S)
    assert list(response.warnings) == [warning]


# ------------------------------------------------------------------------------------------ merges


def merge_cases() -> list:
    cases = [(t, i) for t in MAIN_TENANTS for i in ALL_TYPE_IDS]
    cases += [(TIMELINE, CPU), (TIMELINE, "process_cpu:samples:count:cpu:nanoseconds")]
    return [pytest.param(t, i, id=f"{t}-{i.split(':')[0]}:{i.split(':')[1]}") for t, i in cases]


@pytest.mark.parametrize(("tenant", "type_id"), merge_cases())
def test_merged_profile_in_every_format_matches_go_tool_pprof(cluster: Cluster, stored: Stored, tenant: str,
                                                              type_id: str):
    series = stored.pushes.series_of_type(tenant, type_id)
    sample_type = type_id.split(":")[1]
    files = [f for fs in series.values() for f in fs]
    paths = answers.merged_paths(series.values(), sample_type)
    averaged = sample_type in answers.GAUGE_SAMPLE_TYPES and any(len(fs) > 1 for fs in series.values())
    total = sum(paths.values())
    if averaged:  # heap and allocs in one series: the mean of the two, rounded per node
        want_top = answers.flat_cum(paths)
    else:
        assert total == sum(answers.total(f, sample_type) for f in files)
        want_top = answers.summed_top((f, sample_type) for f in files)
        assert answers.flat_cum(paths) == want_top  # the path model agrees with gotool's own flat/cum
    names = {n for p in paths for n in p}
    assert WORKLOAD_FUNCTIONS[type_id.split(":")[0]] <= names

    base = {"query": type_id, **stored.window.rest()}
    bodies = {fmt: rest(cluster, "/query", tenant, {**base, "format": fmt}) for fmt in ("flamegraph", "top", "tree")}
    for fmt, body in bodies.items():
        assert body.keys() == {"profile_type", "profiles", fmt, "partial", "warnings"}
        assert (body["profile_type"], body["profiles"]) == (type_id, len(files))

    flamegraph = bodies["flamegraph"]["flamegraph"]
    got, zero_wide = answers.flamegraph_paths(flamegraph)
    assert got == paths
    assert (flamegraph["total"], flamegraph["max_self"]) == (total, max(paths.values()))
    if not averaged:
        assert zero_wide == 0
        assert sorted(flamegraph["names"]) == sorted(names | {"total"})
    # the Go program's own functions were executed from its executable, which every profile's mappings name
    binary = dict(zip(flamegraph["names"], flamegraph["binaries"]))
    assert {binary[n].rsplit("/", 1)[-1] for n in WORKLOAD_FUNCTIONS[type_id.split(":")[0]]} == {"workload"}
    assert binary["total"] == ""

    top = bodies["top"]["top"]
    assert top["total"] == total
    rows = [(e["name"], e["self"], e["total"]) for e in top["entries"]]
    assert rows == sorted(rows, key=lambda r: (-r[1], -r[2], r[0]))
    if averaged:
        rows = [r for r in rows if r[1] or r[2]]
    assert {n: (s, t) for n, s, t in rows} == want_top and len(rows) == len(want_top)

    assert answers.tree_paths(bodies["tree"]["tree"]) == paths
    assert bodies["tree"]["tree"]["total"] == total

    r = cluster.http.get(f"{cluster.querier_url}/api/v1/query", params={**base, "format": "pprof"},
                         headers=tenant_header(tenant))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["content-disposition"] == f'attachment; filename="{type_id.split(":")[0]}.pb.gz"'
    downloaded, _ = answers.pprof_paths(r.content, stored.workdir, f"{tenant}-{type_id.replace(':', '_')}")
    assert downloaded.sample_types == [sample_type]
    if averaged:  # pprof values are whole per sample, so each sample is rounded, not each function path
        assert answers.within_rounding(answers.raw_profile_paths(downloaded), paths,
                                       answers.raw_profile_sample_counts(downloaded))
    else:
        assert answers.raw_profile_paths(downloaded) == paths
        assert answers.flat_cum(answers.raw_profile_paths(downloaded)) == want_top

    # gRPC answers the same question the same way
    for fmt, code in GRPC_FORMATS.items():
        request = query_pb2.QueryRequest(query=type_id, range=stored.window.grpc(), format=code)
        response = cluster.query.Query(request, metadata=metadata(tenant), timeout=TIMEOUT_S)
        assert (response.profile_type.id, response.profiles) == (type_id, len(files))
        assert response.WhichOneof("result") == fmt
        if fmt == "pprof":
            assert gzip.decompress(response.pprof) == gzip.decompress(r.content)
        else:
            convert = {"flamegraph": answers.flamegraph_json, "top": answers.top_json, "tree": answers.tree_json}
            assert convert[fmt](getattr(response, fmt)) == bodies[fmt][fmt]
    unspecified = cluster.query.Query(query_pb2.QueryRequest(query=type_id, range=stored.window.grpc()),
                                      metadata=metadata(tenant), timeout=TIMEOUT_S)
    assert answers.flamegraph_json(unspecified.flamegraph) == flamegraph


def test_time_returns_the_single_nearest_profile(cluster: Cluster, stored: Stored):
    first, second = stored.timeline
    totals = (answers.total(first, "cpu"), answers.total(second, "cpu"))
    assert totals[1] == 3 * totals[0] > 0
    second_ns = 10**9
    cases = ((stored.t1 + second_ns, totals[0], first),
             (stored.t1 + (stored.t2 - stored.t1) * 2 // 5, totals[0], first),
             (stored.t2 + 60 * second_ns, totals[1], second))
    for at, want, path in cases:
        for text in (str(at // 10**6), rfc3339(at)):
            body = rest(cluster, "/query", TIMELINE, {"query": CPU, "time": text})
            assert (body["profiles"], body["flamegraph"]["total"]) == (1, want), text
            assert answers.flamegraph_paths(body["flamegraph"])[0] == answers.merged_paths([[path]], "cpu")
        response = cluster.query.Query(query_pb2.QueryRequest(query=CPU, time_ns=at), metadata=metadata(TIMELINE),
                                       timeout=TIMEOUT_S)
        assert (response.profiles, response.flamegraph.total) == (1, want)
    # without time=, the range merges both
    both = rest(cluster, "/query", TIMELINE, {"query": CPU, **stored.window.rest()})
    assert (both["profiles"], both["flamegraph"]["total"]) == (2, sum(totals))


def split_diff(fg: dict, side: int) -> dict:
    """One side of the diff encoding as a plain flamegraph (x_delta, total, self, name)."""
    levels = [[v for i in range(0, len(lv), 7) for v in (*lv[i + 3 * side:i + 3 * side + 3], lv[i + 6])]
              for lv in fg["levels"]]
    return {"names": fg["names"], "levels": levels, "total": fg["left_ticks" if side == 0 else "right_ticks"]}


def test_diff_of_two_ranges(cluster: Cluster, stored: Stored):
    first, second = stored.timeline
    minute = 60 * 10**9
    params = {"left_query": CPU, "right_query": CPU,
              "left_from": str((stored.t1 - minute) // 10**6), "left_until": str((stored.t1 + minute) // 10**6),
              "right_from": rfc3339(stored.t2 - minute), "right_until": rfc3339(stored.t2 + minute)}
    body = rest(cluster, "/diff", TIMELINE, params)["flamegraph"]
    left, right = answers.total(first, "cpu"), answers.total(second, "cpu")
    assert (body["left_ticks"], body["right_ticks"], body["total"]) == (left, right, left + right)
    assert all(len(level) % 7 == 0 for level in body["levels"])
    assert answers.flamegraph_paths(split_diff(body, 0))[0] == answers.merged_paths([[first]], "cpu")
    assert answers.flamegraph_paths(split_diff(body, 1))[0] == answers.merged_paths([[second]], "cpu")
    assert WORKLOAD_FUNCTIONS["process_cpu"] <= set(body["names"])

    request = query_pb2.DiffRequest(
        left_query=CPU, left_range=types_pb2.TimeRange(start_ns=stored.t1 - minute, end_ns=stored.t1 + minute),
        right_query=CPU, right_range=types_pb2.TimeRange(start_ns=stored.t2 - minute, end_ns=stored.t2 + minute))
    response = cluster.query.Diff(request, metadata=metadata(TIMELINE), timeout=TIMEOUT_S)
    assert answers.diff_json(response.flamegraph) == body

    # one range against itself, in a tenant with several series
    same = {"left_query": CPU, "right_query": CPU + '{source="cpu"}', **{
        f"{side}_{k}": v for side in ("left", "right") for k, v in stored.window.rest().items()}}
    body = rest(cluster, "/diff", HTTP, same)["flamegraph"]
    cpu_total = sum(answers.total(f, "cpu") for fs in stored.pushes.series_of_type(HTTP, CPU).values() for f in fs)
    assert (body["left_ticks"], body["right_ticks"]) == (cpu_total, cpu_total)


def test_max_nodes_truncates_and_keeps_totals(cluster: Cluster, stored: Stored):
    base = {"query": CPU, **stored.window.rest()}
    full = rest(cluster, "/query", HTTP, {**base, "format": "top"})["top"]
    assert len(full["entries"]) > 3
    small = rest(cluster, "/query", HTTP, {**base, "format": "top", "max_nodes": "3"})["top"]
    assert small == {"total": full["total"], "entries": full["entries"][:3]}

    fg = rest(cluster, "/query", HTTP, {**base, "max_nodes": "6"})["flamegraph"]
    assert sum(len(level) // 4 for level in fg["levels"]) <= 6
    assert "other" in fg["names"] and fg["total"] == full["total"]
    answers.flamegraph_paths(fg)  # still a consistent flamegraph
    request = query_pb2.QueryRequest(query=CPU, range=stored.window.grpc(), max_nodes=6)
    response = cluster.query.Query(request, metadata=metadata(HTTP), timeout=TIMEOUT_S)
    assert answers.flamegraph_json(response.flamegraph) == fg

    tree = rest(cluster, "/query", HTTP, {**base, "format": "tree", "max_nodes": "6"})["tree"]
    assert tree_size(tree) <= 6 and tree["total"] == full["total"]


def tree_size(node: dict) -> int:
    return 1 + sum(tree_size(c) for c in node["children"])


# ------------------------------------------------------------------------------------------ restart


def snapshot(cluster: Cluster, stored: Stored) -> dict:
    """Every kind of answer, REST and gRPC, for every tenant and type."""
    out: dict = {}
    for tenant in stored.pushes.tenants():
        for path in ("/profile_types", "/labels", "/series", "/label/__name__/values"):
            out[tenant, path] = rest(cluster, path, tenant, stored.window.rest())
        for type_id in stored.pushes.type_ids(tenant):
            params = {"query": type_id, **stored.window.rest()}
            out[tenant, type_id, "range"] = rest(cluster, "/query_range", tenant, params)
            for fmt in ("flamegraph", "top"):
                out[tenant, type_id, fmt] = rest(cluster, "/query", tenant, {**params, "format": fmt})
            request = query_pb2.QueryRequest(query=type_id, range=stored.window.grpc(),
                                             format=query_pb2.PROFILE_FORMAT_TREE)
            out[tenant, type_id, "grpc-tree"] = cluster.query.Query(request, metadata=metadata(tenant),
                                                                    timeout=TIMEOUT_S).SerializeToString()
        response = cluster.query.Series(query_pb2.SeriesRequest(range=stored.window.grpc()),
                                        metadata=metadata(tenant), timeout=TIMEOUT_S)
        out[tenant, "grpc-series"] = response.SerializeToString()
    pprof = cluster.http.get(f"{cluster.querier_url}/api/v1/query", headers=tenant_header(CLI),
                             params={"query": CPU, "format": "pprof", **stored.window.rest()})
    assert pprof.status_code == 200, pprof.text
    out["pprof"] = gzip.decompress(pprof.content)
    out["diff"] = rest(cluster, "/diff", TIMELINE, {"left_query": CPU, "right_query": CPU, **{
        f"{side}_{k}": v for side in ("left", "right") for k, v in stored.window.rest().items()}})
    return out


def test_restarting_both_services_loses_nothing(cluster: Cluster, stored: Stored, go_profiles: dict[str, bytes]):
    before = snapshot(cluster, stored), cluster.counts(), cluster.objects()
    cluster.restart_ingester()
    cluster.restart_querier()
    after = snapshot(cluster, stored), cluster.counts(), cluster.objects()
    assert after[1:] == before[1:]
    assert after[0].keys() == before[0].keys()
    for key in before[0]:
        assert after[0][key] == before[0][key], key
    # the restarted ingester takes pushes again
    r = ingest(cluster, "e2e-restarted", {"__name__": "goroutine"}, go_profiles["goroutine"])
    assert (r.status_code, r.json()["profiles"]) == (200, 1)
    assert rest(cluster, "/profile_types", "e2e-restarted", stored.window.rest())["data"] == [
        type_json("goroutine:goroutine:count:goroutine:count")]
