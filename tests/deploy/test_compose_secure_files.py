"""The files of `deploy/compose/secure.yml`, without Docker: the directory `make-web-config.sh` makes
(its web configuration loads, its certificate names the compose services, its secrets are for the
owner and group only and the CA's key is not among them, `.env` names it), and the collector and
Grafana files secure.yml mounts stay the twins of docker-compose.yml's but for their credentials."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import bcrypt
import pytest
import yaml
from cryptography import x509

from flamewatch.auth.caller import Action, Authenticator
from flamewatch.auth.webconfig import load_web_config

REPO = Path(__file__).resolve().parents[2]
COMPOSE_DIR = REPO / "deploy" / "compose"
SCRIPT = COMPOSE_DIR / "make-web-config.sh"
SERVICES = {"ingester", "querier", "symbolizer", "collector", "frontend"}


def make(directory: Path, env_file: Path, *names: str) -> subprocess.CompletedProcess:
    # `flamewatch` on PATH (this virtualenv's) makes the bcrypt hashes, as the image does for a user
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run([str(SCRIPT), str(directory), *names], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": path, "FLAMEWATCH_ENV_FILE": str(env_file)})


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    root = tmp_path_factory.mktemp("web-config")
    env_file = root / ".env"
    env_file.write_text("FLAMEWATCH_UI_PORT=9090\nFLAMEWATCH_WEB_DIR=/old\n")
    done = make(root / "web", env_file, "flamewatch.example.com")
    assert done.returncode == 0, done.stderr
    return root / "web", env_file, done.stdout


def test_the_web_configuration_loads_and_its_passwords_and_tokens_are_those_of_the_files(made) -> None:
    web, _, printed = made
    config = load_web_config(str(web / "web.yml"))
    assert config.tls is not None and config.tls.cert_file == str(web / "server.crt")
    assert config.client.tls.ca_file == str(web / "ca.crt")
    assert config.client.authorization.credentials_file == str(web / "flamewatch.token")
    for user in ("admin", "grafana"):
        assert bcrypt.checkpw((web / f"{user}.password").read_bytes(), bytes(config.users[user]))
    authenticator = Authenticator(config)
    agent = authenticator.caller("Bearer " + (web / "agent.token").read_text())
    assert agent.tenant(Action.WRITE, None) == "anonymous"
    services = authenticator.caller("Bearer " + (web / "flamewatch.token").read_text())
    assert services.access.admin and services.tenant(Action.READ, "team-a") == "team-a"
    for name in ("admin.password", "grafana.password", "agent.token", "flamewatch.token"):
        assert (web / name).read_text() not in printed  # the files hold them; the terminal does not


def test_the_certificate_names_the_services_and_the_ca_key_is_not_kept(made) -> None:
    web, _, _ = made
    certificate = x509.load_pem_x509_certificate((web / "server.crt").read_bytes())
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) == SERVICES | {"localhost", "flamewatch.example.com"}
    ca = x509.load_pem_x509_certificate((web / "ca.crt").read_bytes())
    certificate.verify_directly_issued_by(ca)
    assert sorted(p.name for p in web.iterdir()) == ["admin.password", "agent.token", "ca.crt", "flamewatch.token",
                                                      "grafana.password", "server.crt", "server.key", "web.yml"]


def test_the_files_are_for_their_owner_and_group_and_env_names_them(made) -> None:
    web, env_file, _ = made
    assert web.stat().st_mode & 0o777 == 0o750
    for path in web.iterdir():
        assert path.stat().st_mode & 0o777 == 0o640, path.name
        assert path.stat().st_gid == os.getgid()
    assert env_file.read_text().splitlines() == ["FLAMEWATCH_UI_PORT=9090", f"FLAMEWATCH_WEB_DIR={web}",
                                                 f"FLAMEWATCH_WEB_GID={os.getgid()}"]


def test_a_directory_holding_a_web_configuration_is_left_alone(made, tmp_path: Path) -> None:
    web, _, _ = made
    before = (web / "web.yml").read_text()
    done = make(web, tmp_path / ".env")
    assert done.returncode == 1 and "exists" in done.stderr
    assert (web / "web.yml").read_text() == before and not (tmp_path / ".env").exists()


def test_the_secure_collector_configuration_differs_only_in_how_it_profiles_flamewatch() -> None:
    plain = yaml.safe_load((COMPOSE_DIR / "collector.yaml").read_text())
    secure = yaml.safe_load((COMPOSE_DIR / "collector-secure.yaml").read_text())
    jobs = {job["job_name"]: job for job in secure["scrape_configs"]}
    added = {key: jobs["flamewatch"].pop(key) for key in ("scheme", "authorization", "tls_config")}
    assert secure == plain
    assert added == {"scheme": "https", "authorization": {"credentials_file": "/etc/flamewatch/web/flamewatch.token"},
                     "tls_config": {"ca_file": "/etc/flamewatch/web/ca.crt"}}


def test_the_secure_datasource_is_the_plain_one_over_https_with_basic_auth() -> None:
    [plain] = yaml.safe_load((COMPOSE_DIR / "grafana/datasources.yaml").read_text())["datasources"]
    [secure] = yaml.safe_load((COMPOSE_DIR / "grafana/datasources-secure.yaml").read_text())["datasources"]
    assert secure.pop("url") == plain.pop("url").replace("http:", "https:")
    assert {secure.pop("basicAuth"), secure.pop("basicAuthUser")} == {True, "grafana"}
    assert set(secure.pop("secureJsonData")) == {"basicAuthPassword", "tlsCACert"}
    assert secure["jsonData"].pop("tlsAuthWithCACert") is True
    assert secure == plain


def test_secure_yml_gives_every_flamewatch_service_the_file_and_the_frontend_https() -> None:
    services = yaml.safe_load((COMPOSE_DIR / "secure.yml").read_text())["services"]
    assert set(services) == SERVICES | {"grafana"}
    for name in SERVICES:
        assert services[name]["environment"]["FLAMEWATCH_WEB_CONFIG_FILE"] == "/etc/flamewatch/web/web.yml"
        assert any(v.endswith(":/etc/flamewatch/web:ro") for v in services[name]["volumes"]), name
        assert services[name]["group_add"] and not any("PASSWORD" in k or "TOKEN" in k
                                                       for k in services[name]["environment"])
    assert services["frontend"]["environment"]["FLAMEWATCH_QUERIER_URL"].startswith("https://")
    assert services["frontend"]["environment"]["FLAMEWATCH_COLLECTOR_URL"].startswith("https://")
