"""The symbolizer in a process: `flamewatch symbolizer` and `flamewatch all` both build it here."""

from __future__ import annotations

import contextlib

from flamewatch.rpc.assembly import Assembly
from flamewatch.storage.objstore import ObjectStore
from flamewatch.symbolizer.config import SymbolizerConfig


def assemble(stack: contextlib.AsyncExitStack, store: ObjectStore, config: SymbolizerConfig) -> Assembly:
    """The symbolizer over an open object store (it keeps nothing in Postgres); gRPC only."""
    from flamewatch.symbolizer.debuginfod import DebuginfodClient
    from flamewatch.symbolizer.service import register_grpc
    from flamewatch.symbolizer.store import DebuginfoStore
    from flamewatch.symbolizer.symbolizer import Symbolizer

    client = DebuginfodClient(config.debuginfod_urls, config.debuginfod_timeout_s, config.negative_cache_s)
    stack.callback(client.close)
    symbolizer = Symbolizer(DebuginfoStore(store), client, config)
    return Assembly((), register_grpc(symbolizer, config.max_upload_bytes), parts={"symbolizer": symbolizer})
