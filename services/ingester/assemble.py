"""The ingester in a process: `flamewatch ingester` and `flamewatch all` both build it here, and
`flamewatch compactor` its maintenance loop alone (which `flamewatch all` runs as a process of its own)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from flamewatch.ingester.compactor import Maintenance
from flamewatch.ingester.config import IngesterConfig, MaintenanceConfig
from flamewatch.ingester.service import Ingester, http_router, register_grpc
from flamewatch.periodic import every
from flamewatch.rpc.assembly import Assembly
from flamewatch.storage.objstore import ObjectStore
from flamewatch.storage.postgres import Database

log = logging.getLogger(__name__)


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


def assemble_compactor(stack: contextlib.AsyncExitStack, config: MaintenanceConfig, store: ObjectStore,
                       db: Database) -> Assembly:
    """Start compaction and retention rounds every `config.interval_s` over open storage, with no ingest:
    the work `flamewatch ingester --compaction.interval` does besides ingesting."""
    maintenance = Maintenance(config, store, db)
    rounds = asyncio.create_task(every(config.interval_s, maintenance.run_now, "compaction and retention round",
                                       log), name="compaction")
    stack.callback(rounds.cancel)
    return Assembly(parts={"maintenance": maintenance})
