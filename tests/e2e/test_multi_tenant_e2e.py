"""A read of several tenants, `X-Scope-OrgID: mt-a|mt-b`, as Grafana's datasource and Profiles Drilldown
send it, against `flamewatch all` with a web configuration file: over REST, gRPC and Connect (through the
published Connect clients, tests/targets/grafanaclient) the answer is the sum of the two tenants' answers
(flamegraph totals added, label values unioned); a user who may read only mt-a is refused the pair with
403 naming mt-b; a write naming both is a bad request (400) and writes nothing."""

from __future__ import annotations

import time

import grpc
import httpx
import psycopg
import pytest
from e2e.calls import CPU, Window
from e2e.cluster import Service, Storage
from e2e.credentials import Credential, write_web_config
from e2e.grafana import GrafanaClient
from e2e.pushes import rewritten
from infra import gotargets
from infra.waiting import wait_for

from flamewatch.api.flamewatch.v1 import query_pb2, query_pb2_grpc
from flamewatch.api.push.v1 import push_pb2
from flamewatch.api.types.v1 import types_pb2 as pyroscope_types_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

A, B = "mt-a", "mt-b"
BOTH = f"{B}|{A}"  # in either order, as dskit sorts them
# (tenant, service_name, seconds ago): both tenants have a service "api"
PUSHES = [(A, "api", 40), (A, "db", 30), (B, "api", 20), (B, "web", 10)]
AMY = Credential("amy", "amy-password", read=(A,), write=(A,))  # may read mt-a only
DUO = Credential("duo", "duo-password", read=(A, B), write=(A, B))
TIMEOUT_S = 30


@pytest.fixture(scope="module")
def secured(e2e_storage: Storage, tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp("multi-tenant")
    write_web_config(workdir / "web.yml", AMY, DUO)
    service = Service("all", "multi-tenant-all", e2e_storage, workdir / "all.log",
                      ("--web.config.file", str(workdir / "web.yml"), "--flush-interval", "0.2"))
    service.start()
    yield service
    assert service.stop() == 0, service.log_text()


@pytest.fixture(scope="module")
def stored(secured: Service, go_profiles) -> Window:
    now = time.time_ns()
    for tenant, service, ago in PUSHES:
        pushed = httpx.post(f"{secured.url}/ingest", params={"service_name": service}, timeout=TIMEOUT_S,
                            content=rewritten(go_profiles["cpu"], time_ns=now - ago * 10**9),
                            headers=DUO.headers(tenant))
        assert pushed.status_code == 200, pushed.text
    window = Window.around(now - 60 * 10**9)
    for tenant, count in ((A, 2), (B, 2)):
        wait_for(lambda t=tenant, n=count: query(secured, t)["profiles"] == n, timeout_s=TIMEOUT_S,
                 what=f"the profiles of {tenant}")
    return window


def query(secured: Service, tenant: str, who: Credential = DUO, status: int = 200, **params) -> dict:
    answer = httpx.get(f"{secured.url}/api/v1/query", timeout=TIMEOUT_S, headers=who.headers(tenant),
                       params={"query": CPU + "{}", "from": "now-1h", "until": "now+1h", **params})
    assert answer.status_code == status, answer.text
    return answer.json()


def label_values(secured: Service, tenant: str) -> list[str]:
    answer = httpx.get(f"{secured.url}/api/v1/label/service_name/values", timeout=TIMEOUT_S,
                       headers=DUO.headers(tenant), params={"from": "now-1h", "until": "now+1h"})
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


@pytest.fixture(scope="module")
def grafana() -> GrafanaClient:
    return GrafanaClient(gotargets.build("grafanaclient"))


def test_rest_reads_the_sum_of_both_tenants(secured, stored):
    a, b, both = (query(secured, t) for t in (A, B, BOTH))
    assert both["flamegraph"]["total"] == a["flamegraph"]["total"] + b["flamegraph"]["total"] > 0
    assert both["profiles"] == a["profiles"] + b["profiles"] == 4
    assert (label_values(secured, A), label_values(secured, B)) == (["api", "db"], ["api", "web"])
    assert label_values(secured, BOTH) == ["api", "db", "web"]
    series = httpx.get(f"{secured.url}/api/v1/series", headers=DUO.headers(BOTH), timeout=TIMEOUT_S,
                       params={"match[]": '{__profile_type__="' + CPU + '"}', "from": "now-1h"}).json()["data"]
    assert sorted(s["service_name"] for s in series) == ["api", "db", "web"]  # "api" of both tenants once
    assert "__tenant__" not in series[0] and "tenant" not in series[0]  # as Pyroscope: no label of the tenant


def test_grpc_reads_the_sum_of_both_tenants(secured, stored):
    def total(tenant: str) -> int:
        with grpc.insecure_channel(secured.grpc_address) as channel:
            request = query_pb2.QueryRequest(query=CPU + "{}", range=stored.grpc(),
                                             format=query_pb2.PROFILE_FORMAT_FLAMEGRAPH)
            answer = query_pb2_grpc.QueryServiceStub(channel).Query(
                request, metadata=(("authorization", DUO.authorization), ("x-scope-orgid", tenant)), timeout=TIMEOUT_S)
        return answer.flamegraph.total

    assert total(BOTH) == total(A) + total(B) > 0


def test_connect_reads_the_sum_of_both_tenants(secured, stored, grafana):
    def run(tenant: str, who: Credential = DUO) -> dict:
        return grafana.run(secured.url, stored.start_ns // 10**6, stored.end_ns // 10**6, "-tenant", tenant,
                           "-basic-auth", who.basic, "-selector", "{}",
                           "-calls", "LabelValues,SelectMergeStacktraces,GetProfileStats")

    a, b, both = run(A), run(B), run(BOTH)
    assert both["SelectMergeStacktraces"]["total"] == (a["SelectMergeStacktraces"]["total"]
                                                      + b["SelectMergeStacktraces"]["total"]) > 0
    assert both["LabelValues"] == ["api", "db", "web"]
    assert sorted({*a["LabelValues"], *b["LabelValues"]}) == both["LabelValues"]
    stats = both["GetProfileStats"]
    assert stats["oldest_profile_time"] == a["GetProfileStats"]["oldest_profile_time"]
    assert stats["newest_profile_time"] == b["GetProfileStats"]["newest_profile_time"]
    refused = run(BOTH, AMY)
    for method in ("LabelValues", "SelectMergeStacktraces", "GetProfileStats"):
        assert refused[method] == {"error": {"code": "permission_denied",
                                             "message": f"amy may not read tenant '{B}'; it may read '{A}'"}}


def test_a_user_of_one_tenant_is_refused_the_pair_naming_the_other(secured, stored):
    refused = query(secured, BOTH, AMY, 403)
    assert refused == {"error": f"amy may not read tenant '{B}'; it may read '{A}'"}
    assert query(secured, A, AMY)["profiles"] == 2  # its own tenant as before
    with grpc.insecure_channel(secured.grpc_address) as channel, pytest.raises(grpc.RpcError) as denied:
        query_pb2_grpc.QueryServiceStub(channel).LabelNames(
            query_pb2.LabelNamesRequest(), metadata=(("authorization", AMY.authorization), ("x-scope-orgid", BOTH)),
            timeout=TIMEOUT_S)
    assert (denied.value.code(), denied.value.details()) == (grpc.StatusCode.PERMISSION_DENIED,
                                                              f"amy may not read tenant '{B}'; it may read '{A}'")
    bad = query(secured, f"{A}|m t", DUO, 400)
    assert bad["error"].startswith('invalid tenant "m t"')


def test_a_write_naming_two_tenants_is_a_bad_request_and_writes_nothing(secured, stored, go_profiles, grafana):
    def series_count() -> int:
        with psycopg.connect(secured.storage.dsn, autocommit=True) as conn:
            return conn.execute("SELECT count(*) FROM series").fetchone()[0]

    before = series_count()
    profile = rewritten(go_profiles["cpu"], time_ns=time.time_ns())
    ingest = httpx.post(f"{secured.url}/ingest", params={"service_name": "both"}, content=profile,
                        headers=DUO.headers(BOTH), timeout=TIMEOUT_S)
    assert ingest.status_code == 400
    assert ingest.json() == {"error": f'X-Scope-OrgID "{BOTH}" names several tenants: a write names one tenant'}
    push = push_pb2.PushRequest(series=[push_pb2.RawProfileSeries(
        labels=[pyroscope_types_pb2.LabelPair(name="service_name", value="both")],
        samples=[push_pb2.RawSample(raw_profile=profile)])])
    pushed = httpx.post(f"{secured.url}/push.v1.PusherService/Push", content=push.SerializeToString(),
                        headers={**DUO.headers(BOTH), "content-type": "application/proto"}, timeout=TIMEOUT_S)
    assert pushed.status_code == 400 and "a write names one tenant" in pushed.json()["message"]
    now = time.time_ns() // 10**6
    settings = grafana.run(secured.url, now - 60_000, now, "-tenant", BOTH, "-basic-auth", DUO.basic, "-calls",
                           "SettingsSet,SettingsGet", "-setting-name", "pluginSettings", "-setting-value", "{}")
    assert settings["SettingsSet"]["error"]["code"] == "invalid_argument"
    assert "a write names one tenant" in settings["SettingsSet"]["error"]["message"]
    assert settings["SettingsGet"]["error"]["code"] == "invalid_argument"  # as Pyroscope's: one tenant's settings
    time.sleep(1)  # a flush would have landed by now
    assert series_count() == before
