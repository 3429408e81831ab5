"""Work for an HTTP caller that went away stops: `CallerWatch` notices the disconnect while the answer is
being computed and sets the request's `caller_gone()` event, which long work (a querier's merge, through
its deadline) checks as it goes, and gRPC calls it made on the request's behalf are cancelled with it.

ASGI tells a server's app that the client left only through `receive()`, which nothing reads once a
request's body is in: the watch reads the body of a request it watches first (GET and HEAD requests, whose
body is empty, and Grafana's Connect queries, `WATCHED_POSTS`, with a body of at most `MAX_BODY` bytes),
hands it to the app as it came, and then listens for the disconnect itself. Other requests (pushes of
profiles) pass through unwatched: their work is short, and their bytes are not held twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from contextvars import ContextVar

MAX_BODY = 1 << 20
WATCHED_POSTS = ("/querier.v1.",)  # queries sent with a body: Grafana's Connect calls

_gone: ContextVar[threading.Event | None] = ContextVar("flamewatch_caller_gone", default=None)


def caller_gone() -> threading.Event | None:
    """The current HTTP request's event, set once its client has gone (None outside a watched request);
    worker threads the request's handler runs on see it too (they run in a copy of its context)."""
    return _gone.get()


class CallerWatch:
    """Pure ASGI middleware: see the module docstring."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not _watched(scope):
            await self.app(scope, receive, send)
            return
        body: list[dict] = []
        while True:
            message = await receive()
            body.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        gone = threading.Event()
        if body[-1]["type"] == "http.disconnect":
            gone.set()
        left = asyncio.Event()

        async def listen() -> None:
            while not gone.is_set():
                if (await receive())["type"] == "http.disconnect":
                    gone.set()
                    left.set()

        async def replay() -> dict:
            if body:
                return body.pop(0)
            await left.wait()  # after the body, as a server's receive(): nothing until the client leaves
            return {"type": "http.disconnect"}

        token = _gone.set(gone)
        listener = asyncio.create_task(listen()) if not gone.is_set() else None
        try:
            await self.app(scope, replay, send)
        finally:
            _gone.reset(token)
            if listener is not None:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener


def _watched(scope) -> bool:
    if scope["method"] in ("GET", "HEAD"):
        return True
    if not scope["path"].startswith(WATCHED_POSTS):
        return False
    for name, value in scope["headers"]:
        if name == b"content-length":
            return value.isdigit() and int(value) <= MAX_BODY
    return False
