"""What Grafana's Profiles Drilldown calls besides the datasource's calls. It keeps its settings in
Pyroscope's `settings.v1.SettingsService`: through the published Connect client
(tests/targets/grafanaclient), a querier stores a tenant's setting, answers it to the next Get (and not
to another tenant), refuses an older write with ALREADY_EXISTS as Pyroscope does, and stamps a setting
sent without a time. Its landing page lists the series of all time with a `Series` call of no range."""

from __future__ import annotations

import time

import pytest
from e2e.calls import HOUR_NS, ingest
from e2e.cluster import Cluster
from e2e.grafana import GrafanaClient
from e2e.pushes import rewritten
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
