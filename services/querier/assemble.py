"""The querier in a process: `flamewatch querier` and `flamewatch all` both build it here."""

from __future__ import annotations

import contextlib

from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.connect import router as connect_router
from flamewatch.querier.engine import Querier
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.pyroscope_render import router as render_router
from flamewatch.querier.rest import router as rest_router
from flamewatch.querier.service import register_grpc
from flamewatch.rpc.assembly import Assembly
from flamewatch.storage.objstore import ObjectStore
from flamewatch.storage.postgres import Database


def routers(querier: Querier) -> list:
    """Its HTTP routes: REST /api/v1, Connect (Grafana's datasource), Pyroscope's /pyroscope/render."""
    return [rest_router(querier), connect_router(querier), render_router(querier)]


def assemble(stack: contextlib.AsyncExitStack, config: QuerierConfig, store: ObjectStore, db: Database,
             symbolizer_address: str | None = None) -> Assembly:
    """The querier over open storage: its block cache (in memory, and on disk when configured) and, with a
    symbolizer's address, the step that names bare addresses at query time."""
    from flamewatch.storage.disk_cache import DiskCache

    source = DiskCache(store, config.disk_cache_dir, config.disk_cache_bytes) if config.disk_cache_dir else store
    blocks = BlockCache(source, config.cache_bytes, config.fetch_concurrency, PathIndex())
    stack.callback(blocks.close)
    querier = Querier(db, blocks, config, _symbolization(stack, symbolizer_address, db))
    return Assembly(routers(querier), register_grpc(querier), parts={"querier": querier})


def _symbolization(stack: contextlib.AsyncExitStack, address: str | None, db: Database):
    if not address:
        return None
    from flamewatch.querier.symbolization import Symbolization
    from flamewatch.querier.symbolizer_client import GrpcSymbolizer

    client = GrpcSymbolizer(address)
    stack.callback(client.close)
    step = Symbolization(client, db)
    stack.callback(step.close)  # before the database closes: the stack closes the last opened first
    return step
