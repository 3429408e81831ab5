"""The querier in a process: `flamewatch querier` and `flamewatch all` both build it here."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.connect import router as connect_router
from flamewatch.querier.engine import Querier
from flamewatch.querier.fanout import Peers
from flamewatch.querier.incidents import Incidents
from flamewatch.querier.incidents import register_grpc as incidents_grpc
from flamewatch.querier.incidents import router as incidents_router
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.pyroscope_render import router as render_router
from flamewatch.querier.rest import router as rest_router
from flamewatch.querier.service import register_grpc
from flamewatch.querier.settings import router as settings_router
from flamewatch.rpc.assembly import Assembly
from flamewatch.storage.objstore import ObjectStore
from flamewatch.storage.postgres import Database


def routers(querier: Querier) -> list:
    """Its HTTP routes: REST /api/v1 (incidents too), Connect (Grafana's datasource, and the tenant settings
    of its Profiles Drilldown app), Pyroscope's /pyroscope/render."""
    return [rest_router(querier), incidents_router(Incidents(querier.db)), connect_router(querier),
            settings_router(querier.db), render_router(querier)]


def assemble(stack: contextlib.AsyncExitStack, config: QuerierConfig, store: ObjectStore, db: Database,
             symbolizer_address: str | None = None, rules_file: str | None = None, record=None,
             peers: Callable[[], list[str]] | None = None) -> Assembly:
    """The querier over open storage: its block cache (in memory, and on disk when configured), with a
    symbolizer's address the step that names bare addresses at query time, with a rule file its
    rules (regressions go to `record`, `events.api.Recorder.record`; recorded series to /metrics), and
    with `peers` (the gRPC addresses of other queriers, asked at each long merge) long merges split with
    them (`fanout`)."""
    from flamewatch.storage.disk_cache import DiskCache

    source = DiskCache(store, config.disk_cache_dir, config.disk_cache_bytes) if config.disk_cache_dir else store
    blocks = BlockCache(source, config.cache_bytes, config.fetch_concurrency, PathIndex())
    stack.callback(blocks.close)
    querier = Querier(db, blocks, config, _symbolization(stack, symbolizer_address, db))
    if peers is not None:
        querier.peers = Peers(peers, config.split_min_profiles)
        stack.callback(querier.peers.close)
    incidents = incidents_grpc(Incidents(db))

    def register(server) -> None:
        register_grpc(querier)(server)
        incidents(server)

    rules = _rules(stack, querier, rules_file, record) if rules_file else None
    return Assembly(routers(querier), register, reload=rules.reload if rules else None,
                    parts={"querier": querier, **({"rules": rules} if rules else {})})


def _rules(stack: contextlib.AsyncExitStack, querier: Querier, path: str, record):
    from prometheus_client import REGISTRY

    from flamewatch.querier.rules import Rules, load_rules

    rules = Rules(querier, lambda: load_rules(path), record)  # a bad file fails the start, with its YAML path
    rules.start()
    stack.push_async_callback(rules.stop)
    REGISTRY.register(rules)
    stack.callback(REGISTRY.unregister, rules)
    return rules


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
