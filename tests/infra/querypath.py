"""The querier's merge path without the Postgres index, for tests that compare it with references.

Pushed pprof bytes go through the ingester's `prepare` (decode, validate, split), are written as
blocks into a real filesystem object store, and are merged by the querier's own `merge_blocks`
through its block cache and path index. Only the selection of rows, which the index does, is done
here: every stored profile of the asked profile type is merged.
"""

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.calltree import CallTree
from flamewatch.querier.engine import merge_blocks
from flamewatch.querier.paths import PathIndex
from flamewatch.storage.blockwrite import write_block
from flamewatch.storage.filesystem import FilesystemObjectStore


class QueryPath:
    def __init__(self, directory: Path) -> None:
        self.store = FilesystemObjectStore(directory)
        self.cache = BlockCache(self.store, max_bytes=1 << 30, concurrency=2, paths=PathIndex())
        self._rows: list[tuple[str, int, str]] = []  # (block key, row, profile type id)

    def push_block(self, profiles: Sequence[bytes], labels: dict[str, str] | None = None) -> None:
        """Store one block holding every profile (each pprof split into one profile per sample type). The
        server's clock is the real one: the profiles captured from the Go program are dated now, and the
        ingester refuses times past its clock."""
        entries = [e for data in profiles
                   for e in prepare(labels or {"service_name": "test"}, data, IngestLimits(),
                                   time.time_ns()).entries]
        key = f"test/blocks/{len({k for k, _, _ in self._rows})}.parquet"
        self.store.put(key, write_block(entries))
        self._rows += [(key, row, e.profile.profile_type.id) for row, e in enumerate(entries)]

    def profile_types(self) -> list[str]:
        return sorted({t for _, _, t in self._rows})

    def merge(self, profile_type: str) -> CallTree:
        picked = [(key, row) for key, row, t in self._rows if t == profile_type]
        block_id = np.array([key for key, _ in picked], object)
        rows = np.array([row for _, row in picked], np.int64)
        return merge_blocks(self.cache, {key: key for key, _ in picked}, block_id, rows, None)

    def close(self) -> None:
        self.cache.close()
        self.store.close()

    def __enter__(self) -> "QueryPath":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
