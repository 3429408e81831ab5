"""What Grafana's Profiles Drilldown calls besides the datasource's calls. It keeps its settings in
Pyroscope's `settings.v1.SettingsService`: through the published Connect client
(tests/targets/grafanaclient), a querier stores a tenant's setting, answers it to the next Get (and not
to another tenant), refuses an older write with ALREADY_EXISTS as Pyroscope does, and stamps a setting
sent without a time. Its landing page lists the series of all time with a `Series` call of no range. Its
heatmap (`SelectHeatmap`, asked as Drilldown asks it) counts pushed profiles and spans of known totals in
the slots and value buckets worked out by hand, and each exemplar opens its span or profile."""

from __future__ import annotations

import time

import pytest
from e2e.calls import HOUR_NS, ingest
from e2e.cluster import Cluster
from e2e.grafana import GrafanaClient
from e2e.pushes import cpu_profile, rewritten
from infra import gotargets
from infra.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

VALUE = '{"collapsedFlamegraphs":false,"maxNodes":16384,"enableFlameGraphDotComExport":true}'


@pytest.fixture(scope="module")
def client() -> GrafanaClient:
    return GrafanaClient(gotargets.build("grafanaclient"))


def settings_call(client: GrafanaClient, url: str, tenant: str, *args: str) -> dict:
    now = time.time_ns() // 10**6
    return client.run(url, now - 60_000, now, "-tenant", tenant, *args)


def test_drilldown_keeps_its_settings_per_tenant(cluster: Cluster, client: GrafanaClient) -> None:
    url = cluster.querier_url
    assert settings_call(client, url, "drill-a", "-calls", "SettingsGet")["SettingsGet"] == []
    stored = settings_call(client, url, "drill-a", "-calls", "SettingsSet", "-setting-name", "pluginSettings",
                           "-setting-value", VALUE, "-setting-modified-at", "1000")["SettingsSet"]
    assert stored == {"name": "pluginSettings", "value": VALUE, "modified_at": 1000}
    assert settings_call(client, url, "drill-a", "-calls", "SettingsGet")["SettingsGet"] == [stored]
    assert settings_call(client, url, "drill-b", "-calls", "SettingsGet")["SettingsGet"] == []

    older = settings_call(client, url, "drill-a", "-calls", "SettingsSet", "-setting-name", "pluginSettings",
                          "-setting-value", "{}", "-setting-modified-at", "999")["SettingsSet"]
    assert older == {"error": {"code": "already_exists",
                               "message": "failed to update pluginSettings: newer update already written"}}
    assert settings_call(client, url, "drill-a", "-calls", "SettingsGet")["SettingsGet"] == [stored]

    before = time.time_ns() // 10**6
    stamped = settings_call(client, url, "drill-a", "-calls", "SettingsSet", "-setting-name", "pluginSettings",
                            "-setting-value", "{}")["SettingsSet"]
    assert stamped["value"] == "{}" and before <= stamped["modified_at"] <= time.time_ns() // 10**6
    got = settings_call(client, url, "drill-a", "-json", "-calls", "SettingsGet")["SettingsGet"]  # JSON too
    assert got == [stamped]


def test_a_setting_without_a_name_is_refused(cluster: Cluster, client: GrafanaClient) -> None:
    out = settings_call(client, cluster.querier_url, "drill-c", "-calls", "SettingsSet", "-setting-value", "x")
    assert out["SettingsSet"]["error"]["code"] == "invalid_argument"
    assert "a setting needs a name" in out["SettingsSet"]["error"]["message"]


def test_a_series_call_of_no_range_lists_the_series_of_all_time(cluster: Cluster, go_profiles) -> None:
    tenant = "drill-series"
    old = time.time_ns() - 5 * HOUR_NS
    r = ingest(cluster, tenant, {"service_name": "old-one"}, rewritten(go_profiles["cpu"], time_ns=old))
    assert r.status_code == 200, r.text

    def series(body: dict) -> list[str]:
        r = cluster.http.post(f"{cluster.querier_url}/querier.v1.QuerierService/Series", json=body,
                              headers={"X-Scope-OrgID": tenant})
        assert r.status_code == 200, r.text
        return sorted({pair["value"] for labels in r.json().get("labelsSet", []) for pair in labels["labels"]
                       if pair["name"] == "service_name"})

    wait_for(lambda: series({}) == ["old-one"], 30, "the old profile's series, asked with no range (all time)")
    assert series({"end": time.time_ns() // 10**6}) == []  # an end alone: the hour before it


def test_the_labels_pyroscope_derives_are_listed_and_selectable(cluster: Cluster, go_profiles) -> None:
    """Pyroscope's LabelNames lists `__type__`, `__unit__`, `__period_type__`, `__period_unit__` and
    `__service_name__` (its canary's `query-label-names` probe expects them) and its selectors take them."""
    tenant = "drill-derived"
    now = time.time_ns()
    for service, kind in (("derived-a", "cpu"), ("derived-b", "heap")):
        r = ingest(cluster, tenant, {"service_name": service}, rewritten(go_profiles[kind], time_ns=now - 60 * 10**9))
        assert r.status_code == 200, r.text
    window = {"start": (now - HOUR_NS) // 10**6, "end": now // 10**6}

    def call(method: str, body: dict) -> dict:
        r = cluster.http.post(f"{cluster.querier_url}/querier.v1.QuerierService/{method}", json={**window, **body},
                              headers={"X-Scope-OrgID": tenant})
        assert r.status_code == 200, r.text
        return r.json()

    names = wait_for(lambda: call("LabelNames", {}).get("names"), 30, "the tenant's label names")
    assert {"__type__", "__unit__", "__period_type__", "__period_unit__", "__service_name__", "__name__",
            "__profile_type__", "service_name"} <= set(names)
    assert call("LabelValues", {"name": "__service_name__"})["names"] == ["derived-a", "derived-b"]
    assert {"cpu", "inuse_space"} <= set(call("LabelValues", {"name": "__type__"})["names"])
    assert call("LabelValues", {"name": "__period_unit__", "matchers": ['{service_name="derived-a"}']})["names"] \
        == ["nanoseconds"]
    # selectors take them: the series of one service, by its copy; and of CPU profiles, by their type
    by_copy = call("Series", {"matchers": ['{__service_name__="derived-b"}']})["labelsSet"]
    assert {p["value"] for s in by_copy for p in s["labels"] if p["name"] == "service_name"} == {"derived-b"}
    by_unit = call("Series", {"matchers": ['{__type__="cpu", __unit__="nanoseconds"}']})["labelsSet"]
    assert {p["value"] for s in by_unit for p in s["labels"] if p["name"] == "service_name"} == {"derived-a"}
    flame = call("SelectMergeStacktraces", {"profile_typeID": "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
                                            "label_selector": '{__service_name__="derived-a"}'})
    assert int(flame["flamegraph"]["total"]) > 0


# ---------------------------------------------------------------------------------------------- heatmap
# Over S..S + 1280 s Drilldown asks for a step of 1280 / 64 = 20 s: slots are stamped with their right
# edges S + 20 s, S + 40 s, ... and hold (edge - 20 s, edge]. Value buckets: 20 of equal width from the
# smallest value to the largest, a value on an edge in the bucket above it (the querier README).
HEATMAP_TENANT = "drill-heatmap"
HEATMAP_SPAN_S = 1280
TRACE = "0af7651916cd43dd8448eb211c80319c"
# (seconds from S, total) of service "heat-profiles": values 1000..5000, buckets 200 wide
HEATMAP_PROFILES = [(5, 1000), (10, 3000), (25, 2000), (40, 5000), (65, 1000)]
# (seconds from S, [(value, span_id, trace_id, span_name)]) of service "heat-spans": spans 100..400, 15 wide
HEATMAP_SPANS = [(30, [(300, "aa01", TRACE, "GET /cart"), (100, "aa01", TRACE, "GET /cart"), (100, "aa02", "", ""),
                       (9, "", "", "")]),
                 (50, [(250, "aa03", "", "")])]


@pytest.fixture(scope="module")
def heatmap_start_ms(cluster: Cluster) -> int:
    start_ns = (time.time_ns() - 600 * 10**9) // 10**9 * 10**9
    for service, profiles in (("heat-profiles", [(t, [(v - v // 4, {}), (v // 4, {})]) for t, v in HEATMAP_PROFILES]),
                              ("heat-spans", [(t, [(v, {"span_id": a, "trace_id": b, "span_name": c})
                                                   for v, a, b, c in samples]) for t, samples in HEATMAP_SPANS])):
        for seconds, samples in profiles:
            data = cpu_profile(start_ns + seconds * 10**9, samples)
            r = ingest(cluster, HEATMAP_TENANT, {"service_name": service, "__name__": "process_cpu"}, data)
            assert r.status_code == 200, r.text
    return start_ns // 10**6


def heatmap(client: GrafanaClient, cluster: Cluster, start_ms: int, service: str, *args: str):
    out = client.run(cluster.querier_url, start_ms, start_ms + HEATMAP_SPAN_S * 1000, "-tenant", HEATMAP_TENANT,
                     "-selector", f'{{service_name="{service}"}}', "-calls", "SelectHeatmap", *args)
    return out["SelectHeatmap"]


def counting(client: GrafanaClient, cluster: Cluster, start_ms: int, service: str, n: int, *args: str) -> list[dict]:
    """The heatmap once it counts all `n` pushed profiles or spans (they are indexed within about a second)."""
    def complete() -> list[dict] | None:
        series = heatmap(client, cluster, start_ms, service, *args)
        assert isinstance(series, list), series
        return series if sum(c for s in series for slot in s["slots"] for c in slot["counts"]) == n else None
    return wait_for(complete, 30, f"{n} counted in the heatmap of {service}")


def counted(series: list[dict], start_ms: int) -> dict[int, dict[int, int]]:
    """{slot edge in seconds from S: {bucket: count}} of the buckets that count something."""
    return {(slot["timestamp"] - start_ms) // 1000: {b: c for b, c in enumerate(slot["counts"]) if c}
            for s in series for slot in s["slots"]}


def test_drilldown_heatmap_counts_each_span_and_its_exemplars_open_their_spans(cluster: Cluster,
                                                                             client: GrafanaClient,
                                                                             heatmap_start_ms: int) -> None:
    start = heatmap_start_ms
    series = counting(client, cluster, start, "heat-spans", 3)
    [only] = series
    assert only["labels"] == {}
    # aa01 = 300 + 100 and aa02 = 100 at 30 s, aa03 = 250 at 50 s; the sample of no span is not counted
    assert counted(series, start) == {40: {0: 1, 19: 1}, 60: {10: 1}}
    assert all(slot["y_min"] == [100 + i * 15 for i in range(20)] for slot in only["slots"])
    exemplars = [e for slot in only["slots"] for e in slot["exemplars"]]
    assert [(e["span_id"], e["value"], e["trace_id"], e["labels"].get("span_name"), e["profile_id"])
            for e in exemplars] == [("aa02", 100, "", None, ""), ("aa01", 400, TRACE, "GET /cart", ""),
                                    ("aa03", 250, "", None, "")]
    assert [(e["timestamp"] - start) // 1000 for e in exemplars] == [30, 30, 50]
    for e in exemplars:  # each span's exemplar opens its span, as Drilldown's flame graph of a span does
        out = client.run(cluster.querier_url, start, start + HEATMAP_SPAN_S * 1000, "-tenant", HEATMAP_TENANT,
                         "-selector", '{service_name="heat-spans"}', "-span-ids", e["span_id"],
                         "-calls", "SelectMergeSpanProfile")
        assert out["SelectMergeSpanProfile"]["total"] == e["value"]


def test_heatmap_of_individual_profiles_and_their_exemplars_open_their_profiles(cluster: Cluster,
                                                                               client: GrafanaClient,
                                                                               heatmap_start_ms: int) -> None:
    start = heatmap_start_ms
    individual = ("-heatmap-type", "individual")
    series = counting(client, cluster, start, "heat-profiles", 5, *individual)
    [only] = series
    # 1000 and 3000 in (S, S + 20 s], 2000 and 5000 in (S + 20 s, S + 40 s], 1000 at 65 s
    assert counted(series, start) == {20: {0: 1, 10: 1}, 40: {5: 1, 19: 1}, 80: {0: 1}}
    assert all(slot["y_min"] == [1000 + i * 200 for i in range(20)] for slot in only["slots"])
    for slot in only["slots"]:
        for e in slot["exemplars"]:
            assert e["span_id"] == "" and e["labels"]["service_name"] == "heat-profiles"
            alone = client.run(cluster.querier_url, start, start + HEATMAP_SPAN_S * 1000, "-tenant",
                               HEATMAP_TENANT, "-selector", '{service_name="heat-profiles"}', "-profile-ids",
                               e["profile_id"], "-calls", "SelectMergeStacktraces")["SelectMergeStacktraces"]
            assert alone["total"] == e["value"]
            assert slot["timestamp"] - 20_000 < e["timestamp"] <= slot["timestamp"]
    # without exemplars, the same counts; group_by the service and JSON bodies answer the same
    bare = heatmap(client, cluster, start, "heat-profiles", *individual, "-heatmap-exemplar-type", "none")
    assert counted(bare, start) == counted(series, start)
    assert not any(slot["exemplars"] for slot in bare[0]["slots"])
    grouped = heatmap(client, cluster, start, "heat-profiles", *individual, "-group-by", "service_name", "-json")
    assert grouped[0]["labels"] == {"service_name": "heat-profiles"}
    assert counted(grouped, start) == counted(series, start)
    assert "service_name" not in grouped[0]["slots"][0]["exemplars"][0]["labels"]


@pytest.mark.parametrize("args, message", [
    (("-heatmap-type", "0"), "query_type HEATMAP_QUERY_TYPE_UNSPECIFIED: say what to count"),
    (("-heatmap-type", "individual", "-heatmap-exemplar-type", "span"),
     "exemplar_type EXEMPLAR_TYPE_SPAN does not go with query_type HEATMAP_QUERY_TYPE_INDIVIDUAL"),
    (("-heatmap-exemplar-type", "7"), "unknown exemplar_type 7"),
    (("-heatmap-step", "0.0001"), "step must be a number of seconds from 0.001 (1 ms)"),
    (("-heatmap-step", "-5"), "step must be a number of seconds from 0.001 (1 ms)"),
    (("-limit", "-1", "-heatmap-step", "20"), "limit must not be negative"),
])
def test_a_bad_heatmap_request_is_refused_naming_the_problem(cluster: Cluster, client: GrafanaClient,
                                                             args: tuple[str, ...], message: str) -> None:
    now = time.time_ns() // 10**6
    out = heatmap(client, cluster, now - 60_000, "heat-spans", *args)
    assert out["error"]["code"] == "invalid_argument" and message in out["error"]["message"], out
