"""The ingester in a process: `flamewatch ingester` and `flamewatch all` both build it here."""

from __future__ import annotations

import contextlib

from flamewatch.ingester.config import IngesterConfig
from flamewatch.ingester.service import Ingester, http_router, register_grpc
from flamewatch.rpc.assembly import Assembly
from flamewatch.storage.objstore import ObjectStore
from flamewatch.storage.postgres import Database


def routers(ingester: Ingester) -> list:
    """Its HTTP routes: /ingest, Pyroscope's and OTLP's push paths."""
    return [http_router(ingester)]


def assemble(stack: contextlib.AsyncExitStack, config: IngesterConfig, store: ObjectStore, db: Database) -> Assembly:
    """Start the ingester (batching, flushes, compaction and sweep loops) over open storage; the stack
    stops it, its last flush written, before the storage closes."""
    ingester = Ingester(config, store, db)
    ingester.start()
    stack.push_async_callback(ingester.stop)
    return Assembly(routers(ingester), register_grpc(ingester), parts={"ingester": ingester})
