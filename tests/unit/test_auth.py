"""Credentials and tenants: the Authenticator on its own, and the HTTP middleware and dependencies of
`rpc.auth` in an app built as every service builds its own."""

import asyncio
import base64
import hashlib

import bcrypt
import httpx
import pytest
from fastapi import APIRouter
from prometheus_client import REGISTRY

from flamewatch.auth import caller as caller_module
from flamewatch.auth.caller import ANYONE, Action, Authenticator, Caller
from flamewatch.auth.errors import PermissionDenied, Unauthenticated
from flamewatch.auth.webconfig import Access, WebConfig, parse_web_config
from flamewatch.rpc.auth import AdminOnly, ReadTenant, ReadTenants, WriteTenant
from flamewatch.rpc.http import build_app

ALICE = bcrypt.hashpw(b"alice-pw", bcrypt.gensalt(4)).decode()
CONFIG = parse_web_config(f"""
basic_auth_users: {{alice: "{ALICE}"}}
bearer_tokens: {{ci: "sha256:{hashlib.sha256(b"ci-token").hexdigest()}"}}
access:
  alice: {{read: [team-a, team-b], write: [team-a]}}
  ci: {{write: ["*"], admin: true}}
""")


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def refusals(reason: str) -> float:
    return REGISTRY.get_sample_value("flamewatch_auth_refusals_total", {"reason": reason}) or 0.0


def test_no_file_lets_everyone_do_everything_as_before():
    auth = Authenticator(WebConfig())
    assert not auth.enabled
    assert auth.caller(None) is ANYONE
    assert ANYONE.tenant(Action.WRITE, None) == "anonymous"
    assert ANYONE.tenant(Action.READ, "anyone-at-all") == "anyone-at-all"
    ANYONE.require_admin("anything")


def test_the_tenant_comes_from_the_credential_and_the_header_chooses_among_its_tenants():
    alice = Authenticator(CONFIG).caller(basic("alice", "alice-pw"))
    assert alice.tenant(Action.READ, None) == "team-a"  # the first it may read
    assert alice.tenant(Action.READ, "team-b") == "team-b"
    with pytest.raises(PermissionDenied, match=r"alice may not write tenant 'team-b'; it may write 'team-a'$"):
        alice.tenant(Action.WRITE, "team-b")
    with pytest.raises(PermissionDenied, match=r"alice may not GET /metrics: it needs admin"):
        alice.require_admin("GET /metrics")
    with pytest.raises(ValueError, match="invalid tenant"):
        alice.tenant(Action.READ, "../x")
    ci = Authenticator(CONFIG).caller("Bearer ci-token")
    assert (ci.name, ci.tenant(Action.WRITE, None), ci.tenant(Action.WRITE, "any-tenant")) == (
        "ci", "anonymous", "any-tenant")
    with pytest.raises(PermissionDenied, match="ci may not read any tenant"):
        ci.tenant(Action.READ, None)


def test_a_read_of_several_tenants_needs_each_of_them():
    alice = Authenticator(CONFIG).caller(basic("alice", "alice-pw"))
    assert alice.tenants("team-b|team-a") == ("team-a", "team-b")
    assert (alice.tenants(None), alice.tenants("team-b"), alice.tenants("team-b|team-b")) == (
        ("team-a",), ("team-b",), ("team-b",))  # as `tenant` reads one
    before = refusals("tenant_denied")
    with pytest.raises(PermissionDenied, match=r"^alice may not read tenant 'team-c'; it may read 'team-a', "
                                               r"'team-b'$"):
        alice.tenants("team-a|team-c")
    with pytest.raises(PermissionDenied, match=r"^alice may not read tenants 'team-c', 'team-d'; it may read"):
        alice.tenants("team-d|team-a|team-c")
    assert refusals("tenant_denied") == before + 2
    with pytest.raises(ValueError, match=r'^invalid tenant "team c"'):  # a bad request before a refusal
        alice.tenants("team-a|team c")
    assert ANYONE.tenants("x|y") == ("x", "y")  # no web configuration file: every tenant is readable


@pytest.mark.parametrize(("action", "why"), [(Action.WRITE, "a write names one tenant"),
                                             (Action.READ, "this API reads one tenant at a time")])
def test_where_one_tenant_is_needed_several_are_a_bad_request(action, why):
    for caller in (ANYONE, Authenticator(CONFIG).caller(basic("alice", "alice-pw"))):
        with pytest.raises(ValueError) as caught:
            caller.tenant(action, "team-a|team-b")
        assert str(caught.value).startswith(f'X-Scope-OrgID "team-a|team-b" names several tenants: {why}')


@pytest.mark.parametrize(("access", "stored", "listed"), [
    (Access(read=("team-b", "team-a")), ["team-c"], ["team-b", "team-a"]),  # as listed: the stored are not asked
    (Access(read=("*",)), ["team-b", "team-a"], ["anonymous", "team-a", "team-b"]),
    (Access(read=("team-z", "*")), ["team-a", "team-z"], ["team-z", "team-a"]),  # its default first, once
    (Access.everything(), [], ["anonymous"]),  # no web configuration file: ANYONE
])
def test_the_readable_tenants_are_the_listed_ones_or_with_a_star_those_with_data(access, stored, listed):
    assert Caller("u", access).readable_tenants(stored) == listed


def test_a_caller_who_may_read_no_tenant_is_refused_a_list():
    with pytest.raises(PermissionDenied, match="ci may not read any tenant"):
        Caller("ci", Access(write=("*",), admin=True)).readable_tenants(["team-a"])


@pytest.mark.parametrize(("authorization", "reason", "message"), [
    (None, "no_credentials", "credentials required: send basic auth or a bearer token"),
    (basic("alice", "wrong"), "bad_credentials", "wrong user or password (user 'alice')"),
    (basic("mallory", "alice-pw"), "bad_credentials", "wrong user or password (user 'mallory')"),
    ("Basic !!!", "bad_credentials", "malformed basic auth"),
    ("Bearer wrong-token", "bad_credentials", "unknown bearer token"),
    ("Digest abc", "unknown_scheme", "unsupported Authorization scheme 'digest': use Basic or Bearer"),
])
def test_a_missing_or_wrong_credential_is_unauthenticated_and_counted(authorization, reason, message):
    before = refusals(reason)
    with pytest.raises(Unauthenticated) as refused:
        Authenticator(CONFIG).caller(authorization)
    assert str(refused.value).startswith(message)
    assert "alice-pw" not in str(refused.value) and "wrong-token" not in str(refused.value)
    assert refusals(reason) == before + 1


def test_a_password_is_checked_by_bcrypt_once(monkeypatch):
    checks = []
    real = bcrypt.checkpw
    monkeypatch.setattr(caller_module.bcrypt, "checkpw", lambda *a: checks.append(1) or real(*a))
    auth = Authenticator(CONFIG)
    for _ in range(5):
        auth.caller(basic("alice", "alice-pw"))
        with pytest.raises(Unauthenticated):
            auth.caller(basic("alice", "guess"))
    assert len(checks) == 2  # the right password and the wrong one, each once


def test_an_event_loop_never_waits_for_bcrypt(monkeypatch):
    auth = Authenticator(CONFIG)
    threads = []
    monkeypatch.setattr(caller_module.asyncio, "to_thread",
                        lambda fn, *a: threads.append(fn) or asyncio.sleep(0, fn(*a)))
    assert asyncio.run(auth.caller_async(basic("alice", "alice-pw"))).name == "alice"
    assert asyncio.run(auth.caller_async(basic("alice", "alice-pw"))).name == "alice"  # remembered: no thread
    assert len(threads) == 1


def _app(config: WebConfig):
    router = APIRouter()

    @router.get("/read")
    def read(tenant: ReadTenant) -> dict:
        return {"tenant": tenant}

    @router.get("/reads")
    def reads(tenants: ReadTenants) -> dict:
        return {"tenants": list(tenants)}

    @router.post("/write")
    def write(tenant: WriteTenant) -> dict:
        return {"tenant": tenant}

    @router.post("/admin", dependencies=[AdminOnly])
    def admin() -> dict:
        return {}

    return build_app([router], ready=lambda: [], authenticator=Authenticator(config))


def _get(app, method: str, path: str, **headers) -> httpx.Response:
    async def call():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            return await client.request(method, path, headers=headers)

    return asyncio.run(call())


def test_http_answers_401_with_a_challenge_403_outside_the_scope_and_the_tenant_inside():
    app = _app(CONFIG)
    refused = _get(app, "GET", "/read")
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Basic realm=")
    assert refused.json() == {"error": "credentials required: send basic auth or a bearer token (Authorization "
                                       "header)"}
    alice = basic("alice", "alice-pw")
    assert _get(app, "GET", "/read", authorization=alice).json() == {"tenant": "team-a"}
    assert _get(app, "GET", "/read", authorization=alice, **{"x-scope-orgid": "team-b"}).json() == {
        "tenant": "team-b"}
    denied = _get(app, "POST", "/write", authorization=alice, **{"x-scope-orgid": "team-b"})
    assert denied.status_code == 403 and "alice may not write tenant 'team-b'" in denied.json()["error"]
    assert _get(app, "POST", "/admin", authorization=alice).status_code == 403
    assert _get(app, "GET", "/metrics", authorization=alice).status_code == 403
    assert _get(app, "GET", "/metrics", authorization="Bearer ci-token").status_code == 200
    assert _get(app, "GET", "/healthz").status_code == 200 and _get(app, "GET", "/readyz").status_code == 200


def test_http_reads_several_tenants_the_caller_may_read_and_writes_one():
    app, alice = _app(CONFIG), basic("alice", "alice-pw")

    def call(method: str, path: str, tenants: str) -> httpx.Response:
        return _get(app, method, path, authorization=alice, **{"x-scope-orgid": tenants})

    assert call("GET", "/reads", "team-b|team-a").json() == {"tenants": ["team-a", "team-b"]}
    assert _get(app, "GET", "/reads", authorization=alice).json() == {"tenants": ["team-a"]}
    denied = call("GET", "/reads", "team-a|team-z")
    assert denied.status_code == 403 and denied.json() == {
        "error": "alice may not read tenant 'team-z'; it may read 'team-a', 'team-b'"}
    bad = call("GET", "/reads", "team-a|team/z")
    assert bad.status_code == 400 and bad.json()["error"].startswith('invalid tenant "team/z"')
    for method, path in (("POST", "/write"), ("GET", "/read")):
        one = call(method, path, "team-a|team-b")
        assert one.status_code == 400 and "names several tenants" in one.json()["error"]
    assert "a write names one tenant" in call("POST", "/write", "team-a|team-b").json()["error"]


def test_without_a_file_http_serves_everyone_as_before():
    app = _app(WebConfig())
    assert _get(app, "GET", "/read").json() == {"tenant": "anonymous"}
    assert _get(app, "POST", "/write", **{"x-scope-orgid": "t1"}).json() == {"tenant": "t1"}
    assert _get(app, "GET", "/reads", **{"x-scope-orgid": "t2|t1"}).json() == {"tenants": ["t1", "t2"]}
    assert _get(app, "GET", "/metrics").status_code == 200


def test_an_app_with_a_route_that_says_nothing_of_access_does_not_start():
    router = APIRouter()

    @router.get("/open")
    def open_route() -> dict:
        return {}

    with pytest.raises(RuntimeError, match="routes that neither resolve a tenant nor ask for admin: GET /open"):
        build_app([router], ready=lambda: [])
