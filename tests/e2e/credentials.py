"""Credentials for the tests of clients behind `--web.config.file`: users and tokens whose secrets the
test knows, written into a web configuration file as a user writes one (bcrypt hashes of the passwords,
sha256 of the tokens, an `access` entry each), and read back from a service's `/metrics`.

    ALICE = Credential("alice", "alice-password", read=("team-a",), write=("team-a",))
    path = write_web_config(tmp / "web.yml", ALICE, ...)
    httpx.get(url, headers={"Authorization": ALICE.authorization})
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import httpx
from prometheus_client.parser import text_string_to_metric_families

# The least bcrypt allows: the server checks each password once and remembers it, and tests start many.
BCRYPT_COST = 4


@dataclass(frozen=True)
class Credential:
    """A basic-auth user (`secret` is the password) or, with `bearer`, a bearer token (`secret` is the token)."""

    name: str
    secret: str
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    admin: bool = False
    bearer: bool = False

    @property
    def authorization(self) -> str:
        if self.bearer:
            return f"Bearer {self.secret}"
        return "Basic " + base64.b64encode(self.basic.encode()).decode()

    @property
    def basic(self) -> str:
        """USER:PASSWORD, as `--basic-auth` takes it."""
        return f"{self.name}:{self.secret}"

    def headers(self, tenant: str | None = None) -> dict[str, str]:
        return {"Authorization": self.authorization, **({"X-Scope-OrgID": tenant} if tenant else {})}

    def with_secret(self, secret: str) -> Credential:
        """The same name with another (wrong) secret."""
        return Credential(self.name, secret, self.read, self.write, self.admin, self.bearer)


def write_web_config(path: Path, *credentials: Credential) -> Path:
    """A web configuration file that lets in exactly these credentials, each with its access."""
    users = {c.name: bcrypt.hashpw(c.secret.encode(), bcrypt.gensalt(BCRYPT_COST)).decode()
             for c in credentials if not c.bearer}
    tokens = {c.name: "sha256:" + hashlib.sha256(c.secret.encode()).hexdigest() for c in credentials if c.bearer}
    access = {c.name: {"read": list(c.read), "write": list(c.write), "admin": c.admin} for c in credentials}
    # JSON is YAML: no quoting rules to get wrong for "$2b$..." and "*".
    path.write_text(json.dumps({"basic_auth_users": users, "bearer_tokens": tokens, "access": access}, indent=1))
    return path


def refusals(client: httpx.Client, service_url: str, admin: Credential) -> dict[str, float]:
    """`flamewatch_auth_refusals_total` of one service by reason, read from its /metrics as an admin."""
    r = client.get(f"{service_url}/metrics", headers=admin.headers())
    assert r.status_code == 200, r.text
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            if sample.name == "flamewatch_auth_refusals_total":
                counts[sample.labels["reason"]] = sample.value
    return counts


# The credentials of the tests: who may read and write which tenant.
ALICE = Credential("alice", "alice-password", read=("team-a", "team-b"), write=("team-a",))
GRAFANA = Credential("grafana", "grafana-password", read=("*",))  # a read-only datasource user
CI = Credential("ci", "ci-token-0123456789abcdef", write=("team-b", "team-c"), bearer=True)
VIEWER = Credential("viewer", "viewer-token-0123456789abcdef", read=("team-a",), bearer=True)
ADMIN = Credential("admin", "admin-password", read=("*",), write=("*",), admin=True)
EVERYONE = (ALICE, GRAFANA, CI, VIEWER, ADMIN)
