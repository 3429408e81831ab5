"""The clients people use, each configured with its own auth settings, against an ingester and a querier
that read a web configuration file (`--web.config.file`, tests/e2e/credentials.py).

- The Pyroscope Go SDK (tests/targets/gosdk) with BasicAuthUser/BasicAuthPassword, AuthToken and
  TenantID pushing to `/ingest`; the Python SDK (pyroscope-io, tests/targets/pyroscope_python) with
  basic_auth_username/basic_auth_password, http_headers and tenant_id pushing push.v1.
- Grafana's Pyroscope datasource calls (tests/targets/grafanaclient) with basic auth and with a bearer
  token, reading with read-only credentials that are refused when they write.
- An OTLP exporter (tests/targets/otlpsender) with an `authorization` header, over gRPC and HTTP.
- The UI's API calls through `flamewatch frontend`, which passes the browser's credential on to the querier.

Profiles land in the credential's tenant (or the one `X-Scope-OrgID` chooses among those it may use);
a wrong secret or no credential is refused, nothing is stored, and the refusal is counted in /metrics.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from e2e.calls import CPU, rest, settled
from e2e.cluster import Cluster, Storage, running, running_frontend
from e2e.credentials import ADMIN, ALICE, CI, EVERYONE, GRAFANA, VIEWER, refusals, write_web_config
from e2e.grafana import GrafanaClient
from infra import gotargets
from infra.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

TENANTS = ("anonymous", "team-a", "team-b", "team-c")
PYTHON_SDK = Path(__file__).resolve().parents[1] / "targets" / "pyroscope_python" / "main.py"
PYTHON_SDK_FUNCTION = "flamewatch_sdk_hot_loop"
GO_SDK_RUN_S = 2
OTLP_TYPE = "process_cpu:samples:count:cpu:nanoseconds"
CHALLENGE = 'Basic realm="flamewatch", charset="UTF-8"'
NO_CREDENTIALS = "credentials required: send basic auth or a bearer token (Authorization header)"


@pytest.fixture(scope="module")
def secured(e2e_storage: Storage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """An ingester and a querier behind one web configuration; the cluster's own HTTP client is the admin."""
    workdir = tmp_path_factory.mktemp("client-auth")
    web_config = write_web_config(workdir / "web.yml", *EVERYONE)
    c = Cluster(e2e_storage, workdir, flags=("--web.config.file", str(web_config)),
                headers={"Authorization": ADMIN.authorization})
    with running(c):
        yield c


def _app(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def tenants_holding(cluster: Cluster, app: str) -> list[str]:
    """The tenants that hold a series of `app` (read by the admin, who may read all of them)."""
    params = {"match[]": f'{{service_name="{app}"}}', "from": "now-1h"}
    return [t for t in TENANTS if rest(cluster, "/series", t, params)["data"]]


def wait_until_stored(cluster: Cluster, app: str) -> list[str]:
    return wait_for(lambda: tenants_holding(cluster, app), 30, f"profiles of {app} in some tenant")


def assert_refused_and_counted(cluster: Cluster, app: str, before: dict[str, float], reason: str) -> float:
    """Nothing of `app` in any tenant once a flush would have written it; the refusals of `reason` counted."""
    settled(cluster)
    assert tenants_holding(cluster, app) == []
    after = refusals(cluster.http, cluster.ingester_url, ADMIN)
    refused = after.get(reason, 0) - before.get(reason, 0)
    assert refused >= 1, f"no {reason} refusal counted: {before} -> {after}"
    return refused


# ------------------------------------------------------------------------------------------ Go SDK


def run_go_sdk(cluster: Cluster, app: str, *flags: str) -> subprocess.CompletedProcess:
    command = [str(gotargets.build("gosdk")), "-server", cluster.ingester_url, "-app", app,
               "-run", f"{GO_SDK_RUN_S}s", "-upload-rate", "1s", *flags]
    return subprocess.run(command, capture_output=True, text=True, timeout=GO_SDK_RUN_S + 60)


def sdk_errors(run: subprocess.CompletedProcess) -> int:
    return int(run.stdout.rsplit("sdk errors: ", 1)[1].split()[0])


def test_go_sdk_with_basic_auth_pushes_into_the_users_tenant(secured: Cluster):
    app = _app("gosdk-basic")
    run = run_go_sdk(secured, app, "-basic-auth-user", ALICE.name, "-basic-auth-password", ALICE.secret)
    assert run.returncode == 0 and sdk_errors(run) == 0, run.stdout + run.stderr
    assert wait_until_stored(secured, app) == ["team-a"]  # alice's first (and only) writable tenant
    names = rest(secured, "/query", "team-a", {"query": f'{CPU}{{service_name="{app}"}}', "from": "now-1h",
                                               "format": "top"})["top"]["entries"]
    assert "main.flamewatchSDKHotLoop" in {e["name"] for e in names}


def test_go_sdk_with_a_token_and_tenant_id_pushes_into_that_tenant(secured: Cluster):
    app = _app("gosdk-token")
    run = run_go_sdk(secured, app, "-auth-token", CI.secret, "-tenant", "team-c")
    assert run.returncode == 0 and sdk_errors(run) == 0, run.stdout + run.stderr
    assert wait_until_stored(secured, app) == ["team-c"]  # not team-b, the token's default


def test_go_sdk_tenant_id_the_token_may_not_write_is_refused(secured: Cluster):
    app = _app("gosdk-denied")
    before = refusals(secured.http, secured.ingester_url, ADMIN)
    run = run_go_sdk(secured, app, "-auth-token", CI.secret, "-tenant", "team-a")
    assert run.returncode == 1 and sdk_errors(run) > 0, run.stdout + run.stderr
    assert "(403)" in run.stdout and "may not write tenant 'team-a'" in run.stdout, run.stdout
    assert assert_refused_and_counted(secured, app, before, "tenant_denied") == sdk_errors(run)


def test_go_sdk_with_a_wrong_password_is_refused_and_nothing_is_stored(secured: Cluster):
    app = _app("gosdk-wrong")
    before = refusals(secured.http, secured.ingester_url, ADMIN)
    run = run_go_sdk(secured, app, "-basic-auth-user", ALICE.name, "-basic-auth-password", "not-her-password",
                     "-tenant", "team-a")
    assert run.returncode == 1 and sdk_errors(run) > 0, run.stdout + run.stderr
    assert "(401)" in run.stdout and "wrong user or password" in run.stdout, run.stdout
    assert assert_refused_and_counted(secured, app, before, "bad_credentials") == sdk_errors(run)


# -------------------------------------------------------------------------------------- Python SDK


def run_python_sdk(cluster: Cluster, app: str, *args: str) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, str(PYTHON_SDK), cluster.ingester_url, app, "3", *args],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "done" in run.stdout, run.stdout + run.stderr
    return run


def cpu_names(cluster: Cluster, tenant: str, app: str) -> set[str]:
    answer = rest(cluster, "/query", tenant, {"query": f'{CPU}{{service_name="{app}"}}', "from": "now-1h"})
    return set(answer["flamegraph"]["names"])


def test_python_sdk_with_basic_auth_pushes_into_the_users_tenant(secured: Cluster):
    app = _app("pysdk-basic")
    run = run_python_sdk(secured, app, "--basic-auth", ALICE.basic)
    assert "failed" not in run.stderr, run.stderr  # the SDK logs every refused push
    assert wait_until_stored(secured, app) == ["team-a"]
    wait_for(lambda: PYTHON_SDK_FUNCTION in cpu_names(secured, "team-a", app), 30, "the SDK's hot function")


def test_python_sdk_with_a_bearer_header_and_tenant_id_pushes_into_that_tenant(secured: Cluster):
    app = _app("pysdk-token")
    run = run_python_sdk(secured, app, "team-c", "--header", f"Authorization={CI.authorization}")
    assert "failed" not in run.stderr, run.stderr
    assert wait_until_stored(secured, app) == ["team-c"]


def test_python_sdk_with_a_wrong_password_is_refused_and_nothing_is_stored(secured: Cluster):
    app = _app("pysdk-wrong")
    before = refusals(secured.http, secured.ingester_url, ADMIN)
    run = run_python_sdk(secured, app, "team-a", "--basic-auth", f"{ALICE.name}:not-her-password")
    assert "401" in run.stderr, run.stderr
    assert_refused_and_counted(secured, app, before, "bad_credentials")


# ---------------------------------------------------------------------------------------- Grafana


@pytest.fixture(scope="module")
def grafana_data(secured: Cluster, go_profiles: dict[str, bytes]) -> tuple[int, int]:
    """The Go workload's CPU profile pushed by alice into team-a and by ci into team-b; the window (ms)."""
    for credential, tenant in ((ALICE, "team-a"), (CI, "team-b")):
        r = secured.http.post(f"{secured.ingester_url}/ingest", params={"service_name": f"grafana-{tenant}"},
                              content=go_profiles["cpu"], headers=credential.headers(tenant))
        assert r.status_code == 200, r.text
    now_ms = time.time_ns() // 10**6
    return now_ms - 3600_000, now_ms + 60_000


@pytest.fixture(scope="module")
def grafana() -> GrafanaClient:
    return GrafanaClient(gotargets.build("grafanaclient"))


GRAFANA_READS = "ProfileTypes,LabelValues,SelectMergeStacktraces"


def test_grafana_with_basic_auth_reads_the_tenant_its_header_chooses(secured: Cluster, grafana: GrafanaClient,
                                                                    grafana_data: tuple[int, int]):
    start, end = grafana_data
    for tenant, other in (("team-a", "team-b"), ("team-b", "team-a")):
        answers = grafana.run(secured.querier_url, start, end, "-basic-auth", GRAFANA.basic, "-tenant", tenant,
                              "-calls", GRAFANA_READS)
        assert f"grafana-{tenant}" in answers["LabelValues"], answers
        assert f"grafana-{other}" not in answers["LabelValues"], answers
        ours = rest(secured, "/profile_types", tenant, {"from": str(start), "until": str(end)})["data"]
        assert [t["id"] for t in answers["ProfileTypes"]] == [t["id"] for t in ours]
        assert answers["SelectMergeStacktraces"]["total"] > 0, answers["SelectMergeStacktraces"]


def test_grafana_with_a_bearer_token_reads_its_tenant_and_no_other(secured: Cluster, grafana: GrafanaClient,
                                                                  grafana_data: tuple[int, int]):
    start, end = grafana_data
    answers = grafana.run(secured.querier_url, start, end, "-bearer-token", VIEWER.secret, "-calls", GRAFANA_READS)
    assert "grafana-team-a" in answers["LabelValues"], answers  # its one tenant, with no header
    assert "grafana-team-b" not in answers["LabelValues"], answers
    refused = grafana.run(secured.querier_url, start, end, "-bearer-token", VIEWER.secret, "-tenant", "team-b",
                          "-calls", GRAFANA_READS)
    for method, answer in refused.items():
        assert answer["error"]["code"] == "permission_denied", (method, answer)
        assert "viewer may not read tenant 'team-b'" in answer["error"]["message"], answer


@pytest.mark.parametrize("auth", [(), ("-basic-auth", f"{GRAFANA.name}:wrong"), ("-bearer-token", "wrong-token")],
                         ids=["none", "wrong-password", "wrong-token"])
def test_grafana_without_a_valid_credential_is_unauthenticated(secured: Cluster, grafana: GrafanaClient,
                                                               grafana_data: tuple[int, int], auth: tuple[str, ...]):
    answers = grafana.run(secured.querier_url, *grafana_data, *auth, "-calls", GRAFANA_READS)
    assert {answer["error"]["code"] for answer in answers.values()} == {"unauthenticated"}, answers


@pytest.mark.parametrize("credential", [GRAFANA, VIEWER], ids=["basic", "bearer"])
def test_grafanas_read_only_credentials_may_not_write(secured: Cluster, go_profiles: dict[str, bytes], credential):
    """Grafana never writes; its credential, used to push anyway, is refused on /ingest and on push.v1."""
    app = _app("grafana-write")
    ingest = secured.http.post(f"{secured.ingester_url}/ingest", params={"service_name": app},
                               content=go_profiles["cpu"], headers=credential.headers("team-a"))
    assert ingest.status_code == 403, ingest.text
    assert ingest.json()["error"] == f"{credential.name} may not write tenant 'team-a'; it may write no tenant"
    push = secured.http.post(f"{secured.ingester_url}/push.v1.PusherService/Push", json={"series": []},
                             headers={**credential.headers(), "Connect-Protocol-Version": "1"})
    assert push.status_code == 403 and push.json()["code"] == "permission_denied", push.text
    settled(secured)
    assert tenants_holding(secured, app) == []


# ------------------------------------------------------------------------------------ the UI's API


@pytest.fixture(scope="module")
def frontend(secured: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`flamewatch frontend` in front of the querier, behind the same web configuration."""
    with running_frontend(secured.querier_url, tmp_path_factory.mktemp("frontend"), *secured.querier.flags) as url:
        yield url


@pytest.mark.parametrize("credential", [ALICE, VIEWER], ids=["basic", "bearer"])
def test_the_frontend_passes_the_users_credential_on_to_the_querier(secured: Cluster, frontend: str,
                                                                   grafana_data: tuple[int, int], credential):
    values = f"{frontend}/api/v1/label/service_name/values"
    mine = secured.http.get(values, params={"from": "now-1h"}, headers=credential.headers())
    assert mine.status_code == 200 and "grafana-team-a" in mine.json()["data"], mine.text
    assert "grafana-team-b" not in mine.json()["data"]
    other = secured.http.get(values, params={"from": "now-1h"}, headers=credential.headers("team-c"))
    assert other.status_code == 403, other.text
    assert other.json()["error"].startswith(f"{credential.name} may not read tenant 'team-c'")


def test_the_frontend_asks_a_browser_without_credentials_for_a_password(frontend: str):
    for path in ("/", "/api/v1/profile_types"):
        r = httpx.get(frontend + path, timeout=30)
        assert (r.status_code, r.headers["www-authenticate"]) == (401, CHALLENGE), r.text
        assert r.json() == {"error": NO_CREDENTIALS}


# ------------------------------------------------------------------------------------------ OTLP


def send_otlp(cluster: Cluster, transport: str, *flags: str) -> dict:
    target = cluster.ingester.grpc_address if transport == "grpc" else cluster.ingester_url
    result = subprocess.run([str(gotargets.build("otlpsender")), "-transport", transport, "-target", target, *flags],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def otlp_services(cluster: Cluster, tenant: str) -> list[str]:
    match = f'{{__profile_type__="{OTLP_TYPE}"}}'
    return rest(cluster, "/label/service_name/values", tenant, {"match[]": match, "from": "now-1h"})["data"]


@pytest.mark.parametrize("transport", ["grpc", "http-protobuf"])
def test_otlp_exporter_headers_carry_the_credential(secured: Cluster, transport: str):
    answer = send_otlp(secured, transport, "-header", f"authorization={CI.authorization}")
    assert answer["code"] in (0, 200) and answer["rejected"] == 0, answer
    assert f"otlp-{transport}" in otlp_services(secured, "team-b")  # the token's first tenant
    answer = send_otlp(secured, transport, "-header", f"authorization={ALICE.authorization}", "-tenant", "team-a")
    assert answer["code"] in (0, 200) and answer["rejected"] == 0, answer
    assert f"otlp-{transport}" in otlp_services(secured, "team-a")


@pytest.mark.parametrize(("transport", "code"), [("grpc", 16), ("http-protobuf", 401), ("http-json", 401)])
def test_otlp_export_without_credentials_is_refused(secured: Cluster, transport: str, code: int):
    before = refusals(secured.http, secured.ingester_url, ADMIN)
    answer = send_otlp(secured, transport, "-tenant", "team-c")
    # Over HTTP the refusal is our JSON error, not a google.rpc.Status: the Collector's exporter then
    # reports the HTTP status and the body's text, so the message still reaches its log.
    assert answer["code"] == code and NO_CREDENTIALS in answer["message"], answer
    settled(secured)
    assert f"otlp-{transport}" not in otlp_services(secured, "team-c")
    after = refusals(secured.http, secured.ingester_url, ADMIN)
    assert after.get("no_credentials", 0) == before.get("no_credentials", 0) + 1, (before, after)
