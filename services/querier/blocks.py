"""Blocks fetched from the object store in parallel and kept, parsed, in a bounded LRU cache.

Blocks never change once written, so a cached block is always valid.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from flamewatch.storage.block import BlockReader

# Parsed columns take several times the compressed size; count that against the budget.
_EXPANSION = 4


class BlockSource(Protocol):
    """All the querier needs from storage: the bytes of an object."""

    def get(self, key: str) -> bytes: ...


class BlockCache:
    def __init__(self, source: BlockSource, max_bytes: int, concurrency: int):
        self._source = source
        self._max_bytes = max_bytes
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="block-fetch")
        self._lru: OrderedDict[str, BlockReader] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get_many(self, keys: Iterable[str]) -> dict[str, BlockReader]:
        keys = list(dict.fromkeys(keys))
        found = {k: b for k in keys if (b := self._cached(k)) is not None}
        missing = [k for k in keys if k not in found]
        for key, reader in zip(missing, self._pool.map(self._load, missing)):
            found[key] = reader
        return found

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _cached(self, key: str) -> BlockReader | None:
        with self._lock:
            reader = self._lru.get(key)
            if reader is not None:
                self._lru.move_to_end(key)
            return reader

    def _load(self, key: str) -> BlockReader:
        reader = BlockReader(self._source.get(key))
        with self._lock:
            if key not in self._lru:
                self._lru[key] = reader
                self._bytes += reader.nbytes * _EXPANSION
            while self._bytes > self._max_bytes and len(self._lru) > 1:
                _, old = self._lru.popitem(last=False)
                self._bytes -= old.nbytes * _EXPANSION
        return reader
