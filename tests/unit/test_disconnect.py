"""A caller that goes away stops the work for it (`rpc.disconnect`), with a real uvicorn on loopback
serving Flamewatch's HTTP app: a query-like handler looping on the deadline's checks is cancelled soon
after its client disconnects, a caller that waits gets its answer, and request bodies reach the handler
intact whether the watch buffered them (small) or passed them through (large)."""

import hashlib
import socket
import threading
import time

import httpx
import pytest
import uvicorn
from fastapi import APIRouter, Request

from flamewatch.querier import deadline
from flamewatch.rpc.auth import Authenticated
from flamewatch.rpc.disconnect import MAX_BODY, caller_gone
from flamewatch.rpc.http import build_app

WORK_S = 30.0


@pytest.fixture
def server():
    """The app on a free loopback port, in a thread of its own; yields (url, what the handler saw)."""
    seen: dict[str, object] = {}
    router = APIRouter()

    @router.get("/api/slow")
    def slow(_: Authenticated) -> dict:  # a sync handler, on a worker thread, as the querier's are
        seen["started"] = time.monotonic()
        try:
            with deadline.bounded(None, caller_gone()):
                while time.monotonic() - seen["started"] < WORK_S:
                    deadline.check()
                    time.sleep(0.01)
        except deadline.QueryCancelled:
            seen["cancelled"] = time.monotonic()
            raise
        seen["finished"] = time.monotonic()
        return {"done": True}

    @router.get("/api/quick")
    def quick(_: Authenticated) -> dict:
        gone = caller_gone()
        return {"watched": gone is not None, "gone": bool(gone and gone.is_set())}

    async def echo(request: Request, _: Authenticated) -> dict:
        body = await request.body()
        return {"bytes": len(body), "sha256": hashlib.sha256(body).hexdigest(), "watched": caller_gone() is not None}

    router.post("/querier.v1.Echo")(echo)
    router.post("/api/echo")(echo)

    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(build_app([router], ready=lambda: []), log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", seen
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_a_handler_stops_soon_after_its_client_disconnects(server) -> None:
    url, seen = server
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(f"{url}/api/slow", timeout=0.5)
    left = time.monotonic()
    deadline_s = left + 5
    while "cancelled" not in seen and time.monotonic() < deadline_s:
        time.sleep(0.05)
    assert "cancelled" in seen and "finished" not in seen
    assert seen["cancelled"] - left < 2  # not the WORK_S the handler would have run


def test_a_caller_that_waits_gets_its_answer_unhindered(server) -> None:
    url, _ = server
    assert httpx.get(f"{url}/api/quick", timeout=10).json() == {"watched": True, "gone": False}


@pytest.mark.parametrize(("path", "size", "watched"), [
    ("/querier.v1.Echo", 0, True), ("/querier.v1.Echo", 70_000, True), ("/querier.v1.Echo", MAX_BODY + 1, False),
    ("/api/echo", 10, False),  # a push, say: not a query
])
def test_request_bodies_reach_the_handler_intact(server, path: str, size: int, watched: bool) -> None:
    url, _ = server
    body = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    answer = httpx.post(url + path, content=body, timeout=10).json()
    assert answer == {"bytes": size, "sha256": hashlib.sha256(body).hexdigest(), "watched": watched}
