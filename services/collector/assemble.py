"""The collector in a process: `flamewatch collector` and `flamewatch all` both build it here."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from flamewatch.collector.config import FileConfig
from flamewatch.collector.service import Collector, http_router, register_grpc
from flamewatch.rpc.assembly import Assembly


def routers(collector: Collector) -> list:
    """Its HTTP routes: /api/v1/targets and /-/reload."""
    return [http_router(collector)]


def assemble(stack: contextlib.AsyncExitStack, load: Callable[[], FileConfig], ingester_address: str,
             tenant: str = "anonymous") -> Assembly:
    """Start discovery and scraping from the configuration `load` reads (again on reload), pushing to the
    ingester at `ingester_address`. Asked to stop, it first sends what it has queued, while the servers
    (the ingester's, in `flamewatch all`) still answer."""
    collector = Collector(load, ingester_address, tenant)
    collector.start()
    stack.push_async_callback(collector.stop)
    return Assembly(routers(collector), register_grpc(collector), before_stop=collector.stop,
                    reload=collector.reload, parts={"collector": collector})
