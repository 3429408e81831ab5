"""Blocks fetched from the object store in parallel and kept, parsed, in a bounded LRU cache.

Blocks never change once written, so a cached block is always valid. Each cached block carries the
path id of every node of its stack tree (see `paths`), computed once when it is loaded. A block the
index lists but the object store lacks fails the query with `BlocksMissing`, naming every such key:
a merge without it would look complete and be wrong.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from flamewatch.querier.paths import PathIndex
from flamewatch.storage.block import BlockReader
from flamewatch.storage.errors import BlocksMissing, ObjectNotFound

# Parsed columns take several times the compressed size; count that against the budget.
_EXPANSION = 4


class BlockSource(Protocol):
    """All the querier needs from storage: the bytes of an object."""

    def get(self, key: str) -> bytes: ...


@dataclass(frozen=True, eq=False)
class LoadedBlock:
    reader: BlockReader
    node_paths: np.ndarray  # path id of each stack node


class BlockCache:
    def __init__(self, source: BlockSource, max_bytes: int, concurrency: int, paths: PathIndex):
        self._source = source
        self.paths = paths
        self._max_bytes = max_bytes
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="block-fetch")
        self._lru: OrderedDict[str, LoadedBlock] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get_many(self, keys: Iterable[str]) -> dict[str, LoadedBlock]:
        keys = list(dict.fromkeys(keys))
        found = {k: b for k in keys if (b := self._cached(k)) is not None}
        wanted = [k for k in keys if k not in found]
        for key, block in zip(wanted, self._pool.map(self._load_if_stored, wanted)):
            found[key] = block
        lost = [k for k, block in found.items() if block is None]
        if lost:
            raise BlocksMissing(lost)
        return found

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _cached(self, key: str) -> LoadedBlock | None:
        with self._lock:
            reader = self._lru.get(key)
            if reader is not None:
                self._lru.move_to_end(key)
            return reader

    def _load_if_stored(self, key: str) -> LoadedBlock | None:
        try:
            return self._load(key)
        except ObjectNotFound:
            return None

    def _load(self, key: str) -> LoadedBlock:
        reader = BlockReader(self._source.get(key))
        block = LoadedBlock(reader, self.paths.map_tree(reader.node_parent, reader.node_depth,
                                                        reader.node_location, reader.location_names))
        with self._lock:
            if key not in self._lru:
                self._lru[key] = block
                self._bytes += reader.nbytes * _EXPANSION
            while self._bytes > self._max_bytes and len(self._lru) > 1:
                _, old = self._lru.popitem(last=False)
                self._bytes -= old.reader.nbytes * _EXPANSION
        return block
