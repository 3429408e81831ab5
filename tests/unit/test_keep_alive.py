"""An idle HTTP connection to a Flamewatch server outlives the 5 s after which uvicorn closes one by
default, so a client (httpx's pool keeps one 5 s, Go's 90 s) never reuses a connection the server is
closing at that moment: the request would fail with "server disconnected without sending a response"."""

import socket
import threading
import time

import uvicorn
from fastapi import APIRouter

from flamewatch.rpc.auth import Authenticated
from flamewatch.rpc.http import build_app
from flamewatch.rpc.listen import Listeners
from flamewatch.rpc.runtime import _http_config

REQUEST = b"GET /api/hello HTTP/1.1\r\nHost: flamewatch\r\n\r\n"


def _answer(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"}"):
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def test_an_idle_connection_is_still_served_after_uvicorns_default_keep_alive() -> None:
    router = APIRouter()

    @router.get("/api/hello")
    def hello(_: Authenticated) -> dict:
        return {"hello": "world"}

    sock = socket.create_server(("127.0.0.1", 0))
    listeners = Listeners(http=sock, grpc=None, http_address="127.0.0.1:0", grpc_address=None)
    server = uvicorn.Server(_http_config(build_app([router], ready=lambda: []), listeners))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        with socket.create_connection(sock.getsockname(), timeout=5) as conn:
            conn.sendall(REQUEST)
            assert _answer(conn).startswith(b"HTTP/1.1 200")
            time.sleep(6)  # past uvicorn's default of 5 s
            conn.sendall(REQUEST)
            second = _answer(conn)
            assert second.startswith(b"HTTP/1.1 200"), second
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
