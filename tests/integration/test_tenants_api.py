"""`GET /api/v1/tenants` on a real Postgres: the tenants a caller may read, for the UI's tenant picker.
Without a web configuration file and for a credential that may read every tenant, those with data and
the caller's default; for one that lists its tenants, those (and the series counts of those only)."""

from __future__ import annotations

import asyncio
import base64
import hashlib

import bcrypt
import httpx
import pytest

from flamewatch.auth.caller import Authenticator
from flamewatch.auth.webconfig import WebConfig, parse_web_config
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.engine import Querier
from flamewatch.querier.rest import router
from flamewatch.rpc.http import build_app
from flamewatch.storage import index
from flamewatch.storage.index import BlockRecord, IndexEntry

pytestmark = pytest.mark.postgres

T0 = 1_767_607_200 * 10**9
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
PASSWORD = bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()
TOKEN = "sha256:" + hashlib.sha256(b"admin-token").hexdigest()
CONFIG = parse_web_config(f"""
basic_auth_users: {{both: "{PASSWORD}", one: "{PASSWORD}", all: "{PASSWORD}", writer: "{PASSWORD}"}}
bearer_tokens: {{ops: "{TOKEN}"}}
access:
  both: {{read: [team-b, team-a]}}
  one: {{read: [team-a]}}
  all: {{read: ["*"]}}
  writer: {{write: [team-a]}}
  ops: {{admin: true}}
""")


def store_series(db, tenant: str, services: list[str]) -> None:
    entries = [IndexEntry(hash((tenant, s)) & 0x7FFFFFFF, {"service_name": s, "__profile_type__": CPU}, CPU,
                          T0, i, 100) for i, s in enumerate(services)]
    index.commit_block(db, BlockRecord(f"b-{tenant}", tenant, f"{tenant}/blocks/0/b", T0, T0, 0, 100,
                                       len(entries)), entries)


@pytest.fixture
def stored(db):
    store_series(db, "team-a", ["api", "db"])
    store_series(db, "team-b", ["web"])
    store_series(db, "team-c", ["batch"])
    return db


def tenants(db, config: WebConfig, user: str | None = None, **headers) -> httpx.Response:
    app = build_app([router(Querier(db, None, QuerierConfig()))], ready=lambda: [],
                    authenticator=Authenticator(config))
    if user is not None:
        headers["authorization"] = "Basic " + base64.b64encode(f"{user}:pw".encode()).decode()

    async def call():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            return await client.get("/api/v1/tenants", headers=headers)

    return asyncio.run(call())


def listed(answer: httpx.Response) -> list[tuple[str, int, bool]]:
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "success"
    return [(t["name"], t["series"], t["default"]) for t in answer.json()["data"]]


def test_without_a_web_config_file_every_tenant_with_data_and_anonymous(stored):
    assert listed(tenants(stored, WebConfig())) == [
        ("anonymous", 0, True), ("team-a", 2, False), ("team-b", 1, False), ("team-c", 1, False)]


def test_the_header_does_not_change_the_list(stored):
    """X-Scope-OrgID chooses among these tenants: one that is not allowed must not hide the list."""
    assert listed(tenants(stored, CONFIG, "one", **{"x-scope-orgid": "team-b"})) == [("team-a", 2, True)]


def test_a_user_of_listed_tenants_gets_those_in_its_order(stored):
    assert listed(tenants(stored, CONFIG, "both")) == [("team-b", 1, True), ("team-a", 2, False)]
    assert listed(tenants(stored, CONFIG, "one")) == [("team-a", 2, True)]


def test_a_user_of_every_tenant_gets_those_with_data(stored):
    assert listed(tenants(stored, CONFIG, "all")) == [
        ("anonymous", 0, True), ("team-a", 2, False), ("team-b", 1, False), ("team-c", 1, False)]


def test_a_listed_tenant_without_data_is_listed_with_no_series(db):
    assert listed(tenants(db, CONFIG, "both")) == [("team-b", 0, True), ("team-a", 0, False)]


def test_who_may_read_no_tenant_is_refused_and_no_credential_is_401(stored):
    writer = tenants(stored, CONFIG, "writer")
    assert writer.status_code == 403 and writer.json() == {"error": "writer may not read any tenant"}
    ops = tenants(stored, CONFIG, authorization="Bearer admin-token")
    assert ops.status_code == 403 and ops.json() == {"error": "ops may not read any tenant"}
    assert tenants(stored, CONFIG).status_code == 401
    wrong = "Basic " + base64.b64encode(b"one:wrong").decode()
    assert tenants(stored, CONFIG, authorization=wrong).status_code == 401
