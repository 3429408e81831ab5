"""`docker-compose.yml` with `deploy/compose/secure.yml`, as a user runs it to have credentials and TLS:
every service serves HTTPS and gRPC over TLS from one web configuration directory, mounted read-only.

The directory is the test's own, made as `deploy/compose/make-web-config.sh` makes one: a CA of the
test's (`infra.certs`, whose key stays out of the directory), a certificate for the compose service
names, bcrypt-hashed users (admin, grafana), hashed tokens (the services' own, an agent's), each secret
in a file readable by its group only (root's here, which FLAMEWATCH_WEB_GID gives the containers). The
services call each other with the file's `client` section, the collector profiles them over https with
their token, and every container's health check asks over https. Grafana cannot run here, so its
provisioned datasource is read and its health check (ProfileTypes, through the Connect client Grafana is
built with: tests/targets/grafanaclient) made with the datasource's user, password and CA from a
container on the compose network.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import httpx
import pytest
import yaml
from infra import docker, gotargets
from infra.certs import CertificateAuthority
from infra.ports import free_port
from infra.tinypprof import tiny_pprof
from infra.waiting import wait_for

pytestmark = [pytest.mark.docker, pytest.mark.go, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
FLAMEWATCH_SERVICES = ["ingester", "querier", "symbolizer", "collector", "frontend"]
SERVICES = ["postgres", "minio", *FLAMEWATCH_SERVICES, "demo"]
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
DEMO_HOT_FUNCTIONS = {"main.cpuFibonacci", "main.fibonacci", "main.cpuHashLoop"}
UP_TIMEOUT_S = 300
MOUNTED = "/etc/flamewatch/web"  # where secure.yml mounts the directory
WEB_CONFIG = """
tls_server_config: {{cert_file: server.crt, key_file: server.key}}
basic_auth_users:
  admin: {admin}
  grafana: {grafana}
bearer_tokens:
  agent: sha256:{agent}
  flamewatch: sha256:{flamewatch}
access:
  admin: {{read: ["*"], write: ["*"], admin: true}}
  grafana: {{read: ["*"]}}
  agent: {{write: [anonymous]}}
  flamewatch: {{read: ["*"], write: ["*"], admin: true}}
client:
  authorization: {{credentials_file: flamewatch.token}}
  tls_config: {{ca_file: ca.crt}}
"""


@dataclass
class WebDir:
    path: Path
    secrets: dict[str, str]  # file name -> the secret it holds

    @property
    def ca(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.path / "ca.crt"))

    def admin(self) -> tuple[str, str]:
        return "admin", self.secrets["admin.password"]


@pytest.fixture(scope="module")
def web_dir(tmp_path_factory: pytest.TempPathFactory) -> WebDir:
    root = tmp_path_factory.mktemp("secure-compose")
    web = root / "web"
    web.mkdir()
    ca = CertificateAuthority.create(root / "ca")
    ca.issue("server", names=FLAMEWATCH_SERVICES, directory=web)
    shutil.copy(ca.cert, web / "ca.crt")
    made = {"admin.password": secrets.token_hex(16), "grafana.password": secrets.token_hex(16),
            "agent.token": secrets.token_hex(32), "flamewatch.token": secrets.token_hex(32)}
    for name, secret in made.items():
        (web / name).write_text(secret)
    (web / "web.yml").write_text(WEB_CONFIG.format(
        admin=bcrypt.hashpw(made["admin.password"].encode(), bcrypt.gensalt(10)).decode(),
        grafana=bcrypt.hashpw(made["grafana.password"].encode(), bcrypt.gensalt(10)).decode(),
        agent=hashlib.sha256(made["agent.token"].encode()).hexdigest(),
        flamewatch=hashlib.sha256(made["flamewatch.token"].encode()).hexdigest()))
    # The containers' user (10001) reads them only through the group secure.yml adds (FLAMEWATCH_WEB_GID).
    for path in web.iterdir():
        os.chown(path, 0, 0)
        path.chmod(0o640)
    web.chmod(0o750)
    return WebDir(web, made)


@dataclass
class Stack:
    compose: docker.Compose
    web: WebDir
    ui: str  # the frontend over https, published on a free host port
    ingest: str  # the ingester's HTTP port over https, published likewise
    up_s: float

    def client(self, auth: tuple[str, str] | None = None) -> httpx.Client:
        return httpx.Client(verify=self.web.ca, auth=auth, timeout=30)


@pytest.fixture(scope="module")
def stack(compose_images: docker.CheckoutImages, web_dir: WebDir) -> Iterator[Stack]:
    ui_port, ingest_port = free_port(), free_port()
    env = {**compose_images.env, "FLAMEWATCH_UI_PORT": f"127.0.0.1:{ui_port}",
           "FLAMEWATCH_INGEST_PORT": f"127.0.0.1:{ingest_port}",
           "FLAMEWATCH_WEB_DIR": str(web_dir.path), "FLAMEWATCH_WEB_GID": "0"}
    compose = docker.Compose(project=f"flamewatch-test-secure-{os.getpid()}", env=env,
                             files=(REPO / "docker-compose.yml", REPO / "deploy/compose/secure.yml"))
    started = time.monotonic()
    with compose.started(SERVICES, UP_TIMEOUT_S):
        yield Stack(compose, web_dir, f"https://127.0.0.1:{ui_port}", f"https://127.0.0.1:{ingest_port}",
                    time.monotonic() - started)


def demo_flamegraph(stack: Stack) -> set[str]:
    with stack.client(stack.web.admin()) as client:
        r = client.get(f"{stack.ui}/api/v1/query", params={"query": CPU + '{service_name="demo"}',
                                                           "from": "now-5m", "until": "now"})
    return set(r.json()["flamegraph"]["names"]) & DEMO_HOT_FUNCTIONS if r.status_code == 200 else set()


def test_every_service_turns_healthy_over_https_with_its_secrets_only_in_files(stack: Stack):
    print(f"\nsecure compose up until healthy {stack.up_s:.0f} s")
    for container in stack.compose.containers():
        if container["Service"] not in FLAMEWATCH_SERVICES:
            continue
        [inspected] = json.loads(docker.docker("container", "inspect", container["ID"]))
        assert inspected["State"]["Health"]["Status"] == "healthy", container["Service"]
        assert inspected["HostConfig"]["ReadonlyRootfs"] is True
        env = "\n".join(inspected["Config"]["Env"])
        assert f"FLAMEWATCH_WEB_CONFIG_FILE={MOUNTED}/web.yml" in env
        mounts = {m["Destination"]: m for m in inspected["Mounts"]}
        assert mounts[MOUNTED]["RW"] is False and mounts[MOUNTED]["Source"] == str(stack.web.path)
        for secret in stack.web.secrets.values():
            assert secret not in env, container["Service"]
    logs = stack.compose.run("logs", "--no-color", *FLAMEWATCH_SERVICES).stdout
    assert not [name for name, secret in stack.web.secrets.items() if secret in logs]
    # the ports speak TLS only
    plain = httpx.get(stack.ui.replace("https:", "http:") + "/readyz", timeout=10)
    assert plain.status_code == 400 and "HTTPS" in plain.text


def test_the_ui_api_answers_with_basic_auth_and_401_without(stack: Stack):
    with stack.client() as anonymous:
        refused = anonymous.get(f"{stack.ui}/api/v1/labels")
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Basic")
        page = anonymous.get(stack.ui + "/")
        assert page.status_code == 401
    with stack.client(("admin", "wrong-password")) as wrong:
        assert wrong.get(f"{stack.ui}/api/v1/labels").status_code == 401
    with stack.client(stack.web.admin()) as admin:
        assert admin.get(f"{stack.ui}/api/v1/labels").status_code == 200
        page = admin.get(stack.ui + "/")
        assert page.status_code == 200 and "<title>Flamewatch</title>" in page.text


def test_the_demos_profiles_reach_the_querier_and_flamewatch_profiles_itself_over_https(stack: Stack):
    """collector -> ingester (gRPC over TLS, the services' token), frontend -> querier and collector (https,
    the user's credential), the collector's scrape of each service's /debug/pprof (https, admin token)."""
    found = wait_for(lambda: demo_flamegraph(stack), 120, "the demo's CPU flamegraph through the frontend")
    assert found
    with stack.client(stack.web.admin()) as admin:
        def scraped() -> set[str]:
            targets = admin.get(f"{stack.ui}/api/v1/targets").json()["data"]["activeTargets"]
            return {t["labels"]["instance"] for t in targets if t["health"] == "up"}

        wanted = {"demo:6060", *(f"{s}:{p}" for s, p in (("ingester", 4100), ("querier", 4200),
                                                          ("symbolizer", 4500), ("collector", 4300),
                                                          ("frontend", 8080)))}
        wait_for(lambda: scraped() >= wanted, 90, "every target scraped (Flamewatch's own over https)")


def test_a_push_with_a_wrong_token_is_refused_and_the_agents_is_taken(stack: Stack):
    body = tiny_pprof(time_nanos=time.time_ns())
    params = {"__name__": "process_cpu", "service_name": "compose-secure-push"}
    with stack.client() as client:
        for headers in ({}, {"Authorization": "Bearer " + secrets.token_hex(32)},
                        {"Authorization": "Bearer " + stack.web.secrets["grafana.password"]}):
            r = client.post(f"{stack.ingest}/ingest", content=body, params=params, headers=headers)
            assert r.status_code == 401, (headers, r.text)
        r = client.post(f"{stack.ingest}/ingest", content=body, params=params,
                        headers={"Authorization": "Bearer " + stack.web.secrets["agent.token"]})
        assert r.status_code == 200, r.text
        # the agent may write tenant anonymous, not another
        r = client.post(f"{stack.ingest}/ingest", content=body, params=params,
                        headers={"Authorization": "Bearer " + stack.web.secrets["agent.token"],
                                 "X-Scope-OrgID": "team-b"})
        assert r.status_code == 403, r.text
    with stack.client(stack.web.admin()) as admin:
        answer = admin.get(f"{stack.ui}/api/v1/query", params={
            "query": CPU + '{service_name="compose-secure-push"}', "from": "now-1h", "until": "now"}).json()
    assert answer["profiles"] == 1


def grafana_health_check(stack: Stack, url: str, *credential: str) -> dict:
    """ProfileTypes, Grafana's datasource health check, from a container on the compose network, with
    the mounted CA as the one Go trusts (the datasource's tlsCACert)."""
    binary = gotargets.build("grafanaclient")
    now_ms = int(time.time() * 1000)
    out = docker.docker(
        "run", "--rm", "--network", f"{stack.compose.project}_flamewatch", "--user", "10001:0",
        "--volume", f"{binary}:/usr/local/bin/grafanaclient:ro", "--volume", f"{stack.web.path}:{MOUNTED}:ro",
        "--env", f"SSL_CERT_FILE={MOUNTED}/ca.crt", stack.compose.env["FLAMEWATCH_PYTHON_IMAGE"],
        "grafanaclient", "-url", url, "-from", str(now_ms - 3_600_000), "-until", str(now_ms),
        "-calls", "ProfileTypes", *credential)
    [call] = json.loads(out)["calls"]
    return call


def test_grafanas_datasource_health_check_passes_with_its_credentials(stack: Stack):
    [source] = yaml.safe_load((REPO / "deploy/compose/grafana/datasources-secure.yaml").read_text())["datasources"]
    assert source["basicAuth"] is True and source["jsonData"]["tlsAuthWithCACert"] is True
    files = {key: re.fullmatch(r"\$__file\{(.+)\}", value).group(1)
             for key, value in source["secureJsonData"].items()}
    assert files == {"basicAuthPassword": f"{MOUNTED}/grafana.password", "tlsCACert": f"{MOUNTED}/ca.crt"}
    password = (stack.web.path / Path(files["basicAuthPassword"]).name).read_text()

    call = grafana_health_check(stack, source["url"], "-basic-auth", f"{source['basicAuthUser']}:{password}")
    assert "error" not in call, call
    assert CPU in {t["id"] for t in call["result"]}
    refused = grafana_health_check(stack, source["url"])
    assert refused["error"]["code"] == "unauthenticated", refused
