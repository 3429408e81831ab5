"""Run a process's HTTP and gRPC servers in one event loop until SIGINT/SIGTERM, then stop cleanly."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable

import uvicorn
from fastapi import FastAPI

from flamewatch.rpc.grpc_server import parse_address, start_grpc_server

log = logging.getLogger(__name__)


async def serve(app: FastAPI, http_address: str, grpc_address: str | None, register_grpc,
                on_stop: Callable[[], Awaitable[None]],
                before_stop: Callable[[], Awaitable[None]] | None = None) -> None:
    """Serve until SIGINT/SIGTERM; then `before_stop` (servers still up), stop the servers, `on_stop`."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    grpc_server = await start_grpc_server(grpc_address, register_grpc) if grpc_address else None
    host, port = parse_address(http_address)
    http = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off"))
    http.install_signal_handlers = lambda: None  # the loop's handlers above own the signals
    http_task = asyncio.create_task(http.serve(), name="http")
    log.info("serving HTTP on %s%s", http_address, f" and gRPC on {grpc_address}" if grpc_address else "")
    done, _ = await asyncio.wait([http_task, asyncio.create_task(stop.wait())],
                                 return_when=asyncio.FIRST_COMPLETED)
    if http_task in done and http_task.exception():
        raise http_task.exception()
    log.info("shutting down")
    if before_stop:
        await before_stop()
    http.should_exit = True
    if grpc_server:
        await grpc_server.stop(grace=5)
    await http_task
    await on_stop()
    log.info("stopped")
