"""Every endpoint of `flamewatch all` with a web configuration file: without credentials, with wrong ones,
and with a user of another tenant, each is refused (401, 403 or the gRPC codes for them) and nothing is
written; the user of the tenant gets through.

The HTTP routes are taken from the routers `flamewatch all` serves (`cli.routers_of_all`, plus what every
process serves), and the gRPC methods from every service our protos and OTLP define, so a route or a
method added later is tried here without anyone listing it.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import time

import bcrypt
import grpc
import httpx
import psycopg
import pytest
from e2e.cluster import Service, Storage
from google.protobuf.message_factory import GetMessageClass
from infra.otlp import otlp_export_request
from infra.tinypprof import tiny_pprof
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2 as otlp_service

from flamewatch.api.flamewatch.v1 import (
    collector_pb2,
    events_pb2,
    ingest_pb2,
    ingest_pb2_grpc,
    partial_pb2,
    query_pb2,
    query_pb2_grpc,
    symbolizer_pb2,
    types_pb2,
)
from flamewatch.api.push.v1 import push_pb2
from flamewatch.api.querier.v1 import querier_pb2
from flamewatch.api.types.v1 import types_pb2 as pyroscope_types_pb2
from flamewatch.cli.allinone import routers_of_all
from flamewatch.ingester.config import IngesterConfig
from flamewatch.ingester.service import Ingester
from flamewatch.querier.config import QuerierConfig
from flamewatch.rpc.auth import api_routes
from flamewatch.rpc.http import build_app
from flamewatch.selfprofile.routes import router as profiling_router

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3]

TEAM_A, TEAM_B = "team-a", "team-b"
PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"}
ADMIN_TOKEN = "admin-token-0123456789abcdef"


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


ALICE, BOB = _basic("alice", PASSWORDS["alice"]), _basic("bob", PASSWORDS["bob"])
CAROL = _basic("carol", PASSWORDS["carol"])  # reads team-a, writes nothing
WRONG = _basic("alice", "not-the-password")


@pytest.fixture(scope="module")
def secured(e2e_storage: Storage, tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp("security")
    users = "\n".join(f"  {user}: {bcrypt.hashpw(pw.encode(), bcrypt.gensalt(4)).decode()}"
                      for user, pw in PASSWORDS.items())
    (workdir / "web.yml").write_text(f"""basic_auth_users:
{users}
bearer_tokens:
  ops: sha256:{hashlib.sha256(ADMIN_TOKEN.encode()).hexdigest()}
access:
  alice: {{read: [{TEAM_A}], write: [{TEAM_A}]}}
  bob: {{read: [{TEAM_B}], write: [{TEAM_B}]}}
  carol: {{read: [{TEAM_A}]}}
  ops: {{admin: true}}
""")
    service = Service("all", "secured-all", e2e_storage, workdir / "all.log",
                      ("--web.config.file", str(workdir / "web.yml"), "--flush-interval", "0.2"))
    service.start()
    yield service
    assert service.stop() == 0, service.log_text()


# --------------------------------------------------------------------------------------------------- HTTP


def _http_routes() -> list[tuple[str, str]]:
    """(method, path) of every route `flamewatch all` serves, path parameters filled in."""
    class Querier:
        config = QuerierConfig()
        db = None

    routers = routers_of_all(Ingester(IngesterConfig(), None, None), Querier(), object(), ui_dir=None)
    app = build_app([*routers, profiling_router(heap_enabled=False)], ready=lambda: [])
    filled = {"name": "service_name", "path": "index.js", "incident_id": "1",
              "method": "Push"}  # a Connect method; the service part of the path says which
    out = []
    for path, route in api_routes(app.routes):
        path = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: filled[m.group(1)], path)
        if path.startswith("/querier.v1."):
            path = path.replace("/Push", "/LabelNames")
        if path.startswith("/settings.v1."):
            path = path.replace("/Push", "/Get")
        out.extend((method, path) for method in sorted(route.methods - {"HEAD"}))
    return out


HTTP_ROUTES = _http_routes()
PUBLIC = {"/healthz", "/readyz"}
ANY_CREDENTIAL = {"/", "/assets/index.js"}  # the UI's page: no tenant's data, and a 404 without a build
# The tenants the caller may read: X-Scope-OrgID chooses among them, so it lists the caller's own whatever
# the header says (test_the_tenant_list_is_the_callers_own), and refuses who may read none.
OWN_TENANTS = {"/api/v1/tenants"}


def _body(method: str, path: str) -> tuple[bytes, dict[str, str]]:
    """A body that would be written if the request were let through."""
    if method != "POST":
        return b"", {}
    if path == "/ingest":
        return tiny_pprof(time.time_ns()), {}
    if path.startswith("/push.v1."):
        request = push_pb2.PushRequest(series=[push_pb2.RawProfileSeries(
            labels=[pyroscope_types_pb2.LabelPair(name="service_name", value="sneaky")],
            samples=[push_pb2.RawSample(raw_profile=tiny_pprof(time.time_ns()))])])
        return request.SerializeToString(), {"content-type": "application/proto", "connect-protocol-version": "1"}
    if path.startswith("/v1development/profiles"):
        return gzip.decompress(otlp_export_request()), {"content-type": "application/x-protobuf"}
    if path == "/api/v1/events":
        event = {"kind": "oom_kill", "time": time.time_ns(), "labels": {"service_name": "sneaky"}}
        return json.dumps({"events": [event]}).encode(), {"content-type": "application/json"}
    if path.startswith("/settings.v1."):
        return b"", {"content-type": "application/proto", "connect-protocol-version": "1"}  # an empty Get
    if path.startswith("/querier.v1."):
        method = querier_pb2.DESCRIPTOR.services_by_name["QuerierService"].methods_by_name["LabelNames"]
        return GetMessageClass(method.input_type)().SerializeToString(), {"content-type": "application/proto",
                                                                           "connect-protocol-version": "1"}
    return b"", {}


def test_every_route_is_tried():
    paths = {path for _, path in HTTP_ROUTES}
    assert {"/ingest", "/api/v1/query", "/api/v1/tenants", "/metrics", "/debug/pprof/profile", "/-/reload",
            "/push.v1.PusherService/Push", "/querier.v1.QuerierService/LabelNames", "/pyroscope/render",
            "/settings.v1.SettingsService/Get",
            "/v1development/profiles"} <= paths
    assert len(HTTP_ROUTES) >= 20


@pytest.mark.parametrize(("method", "path"), [r for r in HTTP_ROUTES if r[1] not in PUBLIC])
def test_http_without_or_with_wrong_credentials_is_401(secured: Service, method, path):
    body, headers = _body(method, path)
    for authorization in (None, WRONG, "Bearer not-a-token", "Digest x"):
        sent = {**headers, **({"authorization": authorization} if authorization else {})}
        answer = httpx.request(method, secured.url + path, content=body, headers=sent, timeout=30)
        assert answer.status_code == 401, (authorization, answer.text)
        assert answer.headers["www-authenticate"].startswith("Basic realm=")


@pytest.mark.parametrize(("method", "path"),
                         [r for r in HTTP_ROUTES if r[1] not in PUBLIC | ANY_CREDENTIAL | OWN_TENANTS])
def test_http_as_a_user_of_another_tenant_is_403(secured: Service, method, path):
    body, headers = _body(method, path)
    answer = httpx.request(method, secured.url + path, content=body, timeout=30,
                           headers={**headers, "authorization": BOB, "x-scope-orgid": TEAM_A})
    assert answer.status_code == 403, answer.text


def test_a_reader_reads_the_tenant_settings_and_only_a_writer_sets_them(secured: Service):
    def call(method: str, who: str, body: dict) -> httpx.Response:
        return httpx.post(f"{secured.url}/settings.v1.SettingsService/{method}", json=body, timeout=30,
                          headers={"authorization": who, "x-scope-orgid": TEAM_A})

    setting = {"setting": {"name": "pluginSettings", "value": "{}", "modifiedAt": "5"}}
    assert call("Set", CAROL, setting).status_code == 403
    assert call("Set", ALICE, setting).status_code == 200
    got = call("Get", CAROL, {})
    assert got.status_code == 200 and got.json()["settings"] == [{"name": "pluginSettings", "value": "{}",
                                                                 "modifiedAt": "5"}]


def test_the_tenant_list_is_the_callers_own(secured: Service):
    def tenants(authorization: str, **headers) -> httpx.Response:
        return httpx.get(f"{secured.url}/api/v1/tenants", headers={"authorization": authorization, **headers},
                         timeout=30)

    assert [t["name"] for t in tenants(BOB, **{"x-scope-orgid": TEAM_A}).json()["data"]] == [TEAM_B]
    assert [t["name"] for t in tenants(ALICE).json()["data"]] == [TEAM_A]
    ops = tenants(f"Bearer {ADMIN_TOKEN}")
    assert ops.status_code == 403 and ops.json() == {"error": "ops may not read any tenant"}


def test_nothing_refused_was_written_and_the_tenants_user_gets_through(secured: Service):
    with psycopg.connect(secured.storage.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM series WHERE tenant = %s", (TEAM_A,)).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 0
    stored = httpx.post(f"{secured.url}/ingest", params={"service_name": "allowed"}, timeout=30,
                        content=tiny_pprof(time.time_ns()), headers={"authorization": ALICE})
    assert stored.status_code == 200, stored.text
    series = httpx.get(f"{secured.url}/api/v1/series", headers={"authorization": ALICE}, timeout=30).json()["data"]
    assert [s["service_name"] for s in series] == ["allowed"]  # team-a: the first tenant alice may read
    assert httpx.get(f"{secured.url}/api/v1/series", headers={"authorization": BOB}, timeout=30).json()["data"] == []
    assert httpx.get(f"{secured.url}/metrics", headers={"authorization": f"Bearer {ADMIN_TOKEN}"},
                     timeout=30).status_code == 200
    for path in PUBLIC:
        assert httpx.get(secured.url + path, timeout=30).status_code == 200


def test_each_refusal_is_logged_once_in_a_while_without_its_secret(secured: Service):
    log = secured.log_text()
    assert "refused: credentials required" in log and "refused: wrong user or password (user 'alice')" in log
    for secret in (*PASSWORDS.values(), "not-the-password", ADMIN_TOKEN, "not-a-token"):
        assert secret not in log
    assert log.count("refused: wrong user or password") < 20  # rate-limited: hundreds were refused
    metrics = httpx.get(f"{secured.url}/metrics", headers={"authorization": f"Bearer {ADMIN_TOKEN}"}).text
    counted = dict(re.findall(r'flamewatch_auth_refusals_total\{reason="(\w+)"\} (\S+)', metrics))
    assert float(counted["no_credentials"]) >= len(HTTP_ROUTES) - 2
    assert float(counted["tenant_denied"]) >= 5 and float(counted["admin_denied"]) >= 2


# --------------------------------------------------------------------------------------------------- gRPC


def _grpc_methods() -> list[tuple[str, type, bool]]:
    """(full method path, request class, client streaming) of every service we and OTLP define."""
    modules = (ingest_pb2, query_pb2, partial_pb2, collector_pb2, symbolizer_pb2, events_pb2, push_pb2, querier_pb2,
               otlp_service)
    out = []
    for module in modules:
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                request = GetMessageClass(method.input_type)
                out.append((f"/{service.full_name}/{method.name}", request, method.client_streaming))
    return out


GRPC_METHODS = _grpc_methods()
# Defined in our protos but served over Connect (HTTP) only, not over gRPC: UNIMPLEMENTED is their answer
CONNECT_ONLY = "/querier.v1.QuerierService/"
OWN_TENANTS_METHOD = "/flamewatch.v1.QueryService/Tenants"  # as OWN_TENANTS: the caller's own, whatever it asks


def _call(address: str, path: str, request_type: type, streaming: bool, metadata: tuple) -> grpc.StatusCode:
    with grpc.insecure_channel(address) as channel:
        request = request_type().SerializeToString()
        try:
            if streaming:
                channel.stream_unary(path)(iter([request]), metadata=metadata, timeout=30)
            else:
                channel.unary_unary(path)(request, metadata=metadata, timeout=30)
        except grpc.RpcError as exc:
            return exc.code()
        return grpc.StatusCode.OK


def test_every_grpc_method_is_tried():
    paths = {path for path, _, _ in GRPC_METHODS}
    assert {"/flamewatch.v1.IngestService/Push", "/flamewatch.v1.SymbolizerService/UploadDebuginfo",
            "/push.v1.PusherService/Push",
            "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"} <= paths


@pytest.mark.parametrize(("path", "request_type", "streaming"), GRPC_METHODS, ids=[m[0] for m in GRPC_METHODS])
def test_grpc_without_credentials_is_unauthenticated_and_another_tenant_is_denied(secured: Service, path,
                                                                                   request_type, streaming):
    if path.startswith(CONNECT_ONLY):
        assert _call(secured.grpc_address, path, request_type, streaming, ()) == grpc.StatusCode.UNIMPLEMENTED
        return
    for metadata in ((), (("authorization", WRONG),), (("authorization", "Bearer nope"),)):
        assert _call(secured.grpc_address, path, request_type, streaming, metadata) == \
            grpc.StatusCode.UNAUTHENTICATED, metadata
    other = (("authorization", BOB), ("x-scope-orgid", TEAM_A))
    refused = grpc.StatusCode.OK if path == OWN_TENANTS_METHOD else grpc.StatusCode.PERMISSION_DENIED
    assert _call(secured.grpc_address, path, request_type, streaming, other) == refused


def test_the_grpc_tenant_list_is_the_callers_own(secured: Service):
    with grpc.insecure_channel(secured.grpc_address) as channel:
        stub = query_pb2_grpc.QueryServiceStub(channel)
        bob = stub.Tenants(query_pb2.TenantsRequest(), metadata=(("authorization", BOB), ("x-scope-orgid", TEAM_A)),
                           timeout=30)
        with pytest.raises(grpc.RpcError) as ops:
            stub.Tenants(query_pb2.TenantsRequest(), metadata=(("authorization", f"Bearer {ADMIN_TOKEN}"),),
                         timeout=30)
    assert [(t.name, t.is_default) for t in bob.tenants] == [(TEAM_B, True)]
    assert (ops.value.code(), ops.value.details()) == (grpc.StatusCode.PERMISSION_DENIED, "ops may not read any tenant")


def test_a_grpc_push_of_the_tenants_user_gets_through(secured: Service):
    request = ingest_pb2.PushRequest(series=[ingest_pb2.RawProfileSeries(
        labels=[types_pb2.LabelPair(name="service_name", value="grpc-allowed")],
        samples=[ingest_pb2.RawSample(raw_profile=tiny_pprof(time.time_ns()))])])
    with grpc.insecure_channel(secured.grpc_address) as channel:
        stub = ingest_pb2_grpc.IngestServiceStub(channel)
        answer = stub.Push(request, metadata=(("authorization", ALICE),), timeout=30)
    assert answer.profiles == 1
    with psycopg.connect(secured.storage.dsn, autocommit=True) as conn:
        tenants = {t for (t,) in conn.execute("SELECT DISTINCT tenant FROM series WHERE labels->>'service_name' = "
                                              "'grpc-allowed'")}
    assert tenants == {TEAM_A}

