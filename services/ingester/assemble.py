"""The ingester in a process: `flamewatch ingester` and `flamewatch all` both build it here, and
`flamewatch compactor` its maintenance loop alone (which `flamewatch all` runs as a process of its own)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from flamewatch.ingester.compactor import Maintenance
from flamewatch.ingester.config import IngesterConfig, MaintenanceConfig
from flamewatch.ingester.service import Ingester, http_router, register_grpc
from flamewatch.periodic import every
from flamewatch.ratelimitedlog import RateLimitedLog
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
                       db: Database, when_done: Callable[[], object] | None = None) -> Assembly:
    """Start compaction and retention rounds every `config.interval_s` over open storage, with no ingest:
    the work `flamewatch ingester --compaction.interval` does besides ingesting. With `when_done`, the
    first round runs at once, and `when_done()` is called after the first round that leaves nothing to
    compact (and no failed block waiting to be tried again), instead of waiting for the next round."""
    maintenance = Maintenance(config, store, db)
    if when_done is None:
        rounds = every(config.interval_s, maintenance.run_now, "compaction and retention round", log)
    else:
        rounds = _until_done(maintenance, config.interval_s, when_done)
    task = asyncio.create_task(rounds, name="compaction")
    stack.callback(task.cancel)
    return Assembly(parts={"maintenance": maintenance})


async def _until_done(maintenance: Maintenance, interval_s: float, when_done: Callable[[], object]) -> None:
    failures = RateLimitedLog(log)
    while True:
        try:
            await asyncio.to_thread(maintenance.run_now)
            if maintenance.idle() and not await asyncio.to_thread(maintenance.compaction_due):
                log.info("compaction: nothing left to compact")
                when_done()
                return
        except Exception as exc:  # noqa: BLE001 - logged; the next round starts over
            failures.log(logging.WARNING, type(exc).__name__, "compaction and retention round failed: %s", exc)
        await asyncio.sleep(interval_s)
