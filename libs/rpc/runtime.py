"""Run a process's HTTP and gRPC servers in one event loop until SIGINT/SIGTERM, then stop cleanly.

The sockets come bound (`rpc.listen`), so "serving" is logged only once both servers accept requests.
With TLS (`Listeners.tls`), uvicorn serves HTTPS through the protocol of `rpc.https`, with the
certificates `rpc.tls` keeps current.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable

import uvicorn
from fastapi import FastAPI

from flamewatch.rpc.listen import Listeners
from flamewatch.rpc.memory import freeze_started, register_gauges, release_periodically
from flamewatch.selfprofile.cpu import end_early

log = logging.getLogger(__name__)

# At a stop, requests in flight get this long to finish (gRPC calls too); then they are cancelled and
# the process stops. Pushes not answered by then were not acknowledged, so their clients send them again.
GRACEFUL_STOP_S = 5.0
# An idle HTTP connection stays open this long: longer than clients keep theirs (Go's 90 s, Grafana's and
# the SDKs'; httpx's 5 s), so a client never sends a request on a connection the server is just closing
# ("server disconnected without sending a response"). Uvicorn's own 5 s equals httpx's and raced it.
KEEP_ALIVE_S = 120


async def serve(listeners: Listeners, app: FastAPI, register_grpc,
                before_stop: Callable[[], Awaitable[None]] | None = None, ready_message: str | None = None) -> None:
    """Serve until SIGINT/SIGTERM; then `before_stop` (servers still up) and stop the servers.

    `ready_message` is logged once both servers answer. What the process opened before (storage,
    services) is the caller's to close after this returns."""
    register_gauges()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if listeners.grpc is not None:
        register_grpc(listeners.grpc)
        await listeners.grpc.start()
    http = uvicorn.Server(_http_config(app, listeners))
    http.install_signal_handlers = lambda: None  # the loop's handlers above own the signals
    http_task = asyncio.create_task(http.serve(sockets=[listeners.http]), name="http")
    # Freed memory goes back to the system as the process runs, so resident memory follows the caches.
    releasing = asyncio.create_task(release_periodically(), name="release-memory")
    try:
        await _started(http, http_task)
        freeze_started()
        host = listeners.http_address.rpartition(":")[0]
        grpc_host = (listeners.grpc_address or "").rpartition(":")[0]
        tls = listeners.tls is not None
        log.info("serving %s on %s:%d%s", "HTTPS" if tls else "HTTP", host, listeners.http_port,
                 f" and gRPC{' over TLS' if tls else ''} on {grpc_host}:{listeners.grpc_port}"
                 if listeners.grpc is not None else "")
        if ready_message:
            log.info("%s", ready_message)
        await asyncio.wait([http_task, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
        if http_task.done() and http_task.exception():
            raise http_task.exception()
        log.info("shutting down")
        end_early()  # a CPU profile being scraped answers now instead of holding the stop for its seconds
        if before_stop:
            await before_stop()
    finally:
        releasing.cancel()
        http.should_exit = True
        if listeners.grpc is not None:
            await listeners.grpc.stop(grace=GRACEFUL_STOP_S)
        await asyncio.gather(http_task, return_exceptions=True)


def _http_config(app: FastAPI, listeners: Listeners) -> uvicorn.Config:
    """TLS is the protocol's (`rpc.https`), not uvicorn's: it tells clients on the wrong protocol so."""
    from flamewatch.rpc.https import http_protocol

    return uvicorn.Config(app, log_level="warning", lifespan="off", http=http_protocol(listeners.tls),
                          timeout_keep_alive=KEEP_ALIVE_S, timeout_graceful_shutdown=GRACEFUL_STOP_S)


async def _started(http: uvicorn.Server, task: asyncio.Task) -> None:
    while not http.started:
        if task.done():
            raise task.exception() or RuntimeError("the HTTP server stopped before it started")
        await asyncio.sleep(0.01)
