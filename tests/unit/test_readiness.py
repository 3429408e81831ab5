"""`Readiness`: the problems of the checks, cached for a while; `/readyz` and `/healthz` built on it."""

import asyncio
import logging

import httpx
import pytest

from flamewatch.rpc.http import build_app
from flamewatch.rpc.readiness import Check, Readiness


class Dependency:
    def __init__(self, name: str) -> None:
        self.name, self.error, self.calls = name, None, 0

    def check(self) -> None:
        self.calls += 1
        if self.error:
            raise ConnectionError(self.error)


@pytest.fixture
def clock() -> list[float]:
    return [0.0]


@pytest.fixture
def deps() -> tuple[Dependency, Dependency]:
    return Dependency("postgres"), Dependency("object store")


@pytest.fixture
def ready(deps, clock) -> Readiness:
    return Readiness([Check(d.name, d.check) for d in deps], ttl_s=2.0, clock=lambda: clock[0])


def test_ready_when_every_check_passes(ready: Readiness, deps) -> None:
    assert ready() == []
    assert [d.calls for d in deps] == [1, 1]


def test_each_failing_check_is_named_with_its_reason(ready: Readiness, deps) -> None:
    deps[0].error = "connection refused"
    deps[1].error = "bucket gone"
    assert ready() == ["postgres: connection refused", "object store: bucket gone"]


def test_the_answer_is_cached_for_the_ttl(ready: Readiness, deps, clock) -> None:
    assert ready() == []
    deps[0].error = "connection refused"
    clock[0] = 1.9
    assert ready() == []
    assert deps[0].calls == 1
    clock[0] = 2.0
    assert ready() == ["postgres: connection refused"]
    assert deps[0].calls == 2


def test_changes_are_logged_once(ready: Readiness, deps, clock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="flamewatch.rpc.readiness")
    ready()
    deps[1].error = "unreachable"
    for t in (2, 4, 6):
        clock[0] = t
        ready()
    deps[1].error = None
    clock[0] = 8
    ready()
    assert [r.getMessage() for r in caplog.records] == ["not ready: object store: unreachable", "ready again"]


def get(ready: Readiness, path: str) -> tuple[int, str]:
    """One request to an app with this readiness, in process (Starlette's TestClient warns about httpx)."""
    async def request() -> httpx.Response:
        transport = httpx.ASGITransport(app=build_app([], ready=ready))
        async with httpx.AsyncClient(transport=transport, base_url="http://flamewatch") as client:
            return await client.get(path)

    response = asyncio.run(request())
    return response.status_code, response.text


def test_readyz_follows_readiness_and_healthz_does_not(ready: Readiness, deps, clock) -> None:
    assert get(ready, "/readyz") == (200, "ready")
    deps[0].error = "connection refused"
    clock[0] = 5
    assert get(ready, "/readyz") == (503, "not ready: postgres: connection refused")
    assert get(ready, "/healthz") == (200, "ok")
