"""Blocks fetched from the object store in parallel and kept, parsed, in a bounded LRU cache.

A block is read in the byte ranges of the columns its queries take (`ranged.RangedObject`), and keeps
what it fetched: one that only ever answered from its pre-merged trees holds its footer, symbols, trees
and profile columns, a fifth of a fleet hour block, not its profiles' entries. Fetched whole, a week of
a 100-series fleet needed three times `flamewatch all`'s cache and was fetched again by every query.

Blocks never change once written, so a cached block is always valid. Each cached block carries the
path id of every node of its stack tree (see `paths`), computed once when it is loaded. A block the
index lists but the object store lacks fails the query with `BlocksMissing`, naming every such key:
a merge without it would look complete and be wrong.

A query reads its blocks as a stream (`stream`), a few fetches ahead, and lets go of each block once it
has folded it: a range of more blocks than the cache holds then keeps only the cache and the fetches
ahead in memory, not every block of the range. Holding them all made each query's memory grow with its
range (the soak's 30-minute label values read every block of 30 minutes, 1,100 flush blocks, on top of a
full cache), and the arenas those peaks left fragmented kept the resident size climbing.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

import numpy as np
from prometheus_client import Gauge

from flamewatch.querier.paths import PathIndex
from flamewatch.querier.symbolization import QuerySymbols
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.errors import BlocksMissing, ObjectNotFound
from flamewatch.storage.keys import tenant_of
from flamewatch.storage.ranged import RangedObject

# A block's symbols and stack tree, parsed, take a few times their compressed size; the bytes fetched,
# the profile entries decoded for queries and the parsed parquet footer (for a small flush block the
# largest part) are counted as they are (see `LoadedBlock.memory_bytes`).
_EXPANSION = 3
# What a loaded block holds besides: its reader's and file's objects, dicts and array headers (a flush block
# of 30 profiles, 6 KB stored, held 94 KB in all with its footer: counted without this, 93 KB)
_OVERHEAD = 8 << 10
# Blocks a stream fetches ahead of the one being read, per fetch thread: enough to keep every thread busy
# while a block is folded, few enough that they cost next to nothing beside the cache.
_AHEAD_PER_THREAD = 2

CACHED_BYTES = Gauge("flamewatch_querier_block_cache_bytes", "Memory the cached blocks hold, as the cache counts it")
CACHED_BLOCKS = Gauge("flamewatch_querier_block_cache_blocks", "Blocks in the cache")
PATHS = Gauge("flamewatch_querier_paths", "Function paths numbered so far (see paths.py)")


class BlockSource(Protocol):
    """All the querier needs from storage: ranges of an object's bytes (`objstore.ObjectStore`)."""

    def get_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]: ...

    def get_tail(self, key: str, length: int) -> tuple[bytes, int]: ...


class LoadedBlock:
    """A parsed block of one tenant and the path id of each of its stack nodes, by function name and
    (computed on first use) by function, file and line."""

    def __init__(self, reader: BlockReader, paths: PathIndex, tenant: str = ""):
        self.reader, self._paths = reader, paths
        self.tenant = tenant  # whose debug information names its frames (`QuerySymbols.owner`)
        self.node_paths = self._map(reader.location_names)
        self._line_paths: np.ndarray | None = None
        self._symbolized: dict[str, tuple[int, np.ndarray]] = {}  # granularity -> (generation, paths)
        self._lock = threading.Lock()

    def _map(self, names: np.ndarray) -> np.ndarray:
        r = self.reader
        return self._paths.map_tree(r.node_parent, r.node_depth, r.node_location, names, r.location_binaries)

    def memory_bytes(self) -> int:
        """What the block holds in memory now: it grows as queries fetch and decode more of it."""
        r = self.reader
        return _OVERHEAD + r.nbytes + r.symbol_bytes * _EXPANSION + r.decoded_bytes + r.footer_bytes

    def paths(self, granularity: str, symbols: QuerySymbols | None = None) -> np.ndarray:
        """Path id per stack node at "functions" or "lines" granularity; with `symbols`, frames stored as
        addresses are named by what the symbolizer answered (kept per answer generation)."""
        if symbols is not None and symbols.has_addresses(self.reader, self.tenant):
            return self._symbolized_paths(granularity, symbols)
        if granularity == "functions":
            return self.node_paths
        with self._lock:
            if self._line_paths is None:
                self._line_paths = self._map(self.reader.location_line_names)
            return self._line_paths


    def _symbolized_paths(self, granularity: str, symbols: QuerySymbols) -> np.ndarray:
        generation = symbols.generation  # read first: an answer learnt meanwhile only makes the entry stale
        with self._lock:
            cached = self._symbolized.get(granularity)
            if cached is not None and cached[0] == generation:
                return cached[1]
        chains = symbols.chains(self.reader, self.tenant)
        r = self.reader
        names = chains.names if granularity == "functions" else chains.line_names
        frames = np.where(r.node_location >= 0, r.node_location, 0)
        binaries = np.repeat(r.location_binaries, np.diff(chains.offsets))  # a frame's inlined names share it
        paths = self._paths.map_tree_runs(r.node_parent, r.node_depth, frames, chains.offsets, names, binaries)
        with self._lock:
            self._symbolized[granularity] = (generation, paths)
        return paths


class BlockCache:
    def __init__(self, source: BlockSource, max_bytes: int, concurrency: int, paths: PathIndex):
        self._source = source
        self.paths = paths
        self._max_bytes = max_bytes
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="block-fetch")
        self._ahead = max(concurrency, 1) * _AHEAD_PER_THREAD
        self._lru: OrderedDict[str, LoadedBlock] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, keys: Iterable[str]) -> dict[str, LoadedBlock]:
        """Every block of `keys` at once (all held by the answer: for a few blocks; a query uses `stream`)."""
        return {key: block for key, block in self.stream(keys) if block is not None}

    def stream(self, keys: Iterable[str]) -> Iterator[tuple[str, LoadedBlock | None]]:
        """(key, block) for each distinct key in order, fetched in parallel a few blocks ahead; the block is
        None where the object store lacks it, and after the last one `BlocksMissing` names every such key.
        Besides the cache, only the blocks fetched ahead stay alive while the caller holds none."""
        with self._lock:
            self._evict()  # what the last queries decoded counts now
        todo = iter(dict.fromkeys(keys))
        ahead: deque[tuple[str, Future]] = deque()
        lost = []
        while True:
            ahead.extend((key, self._pool.submit(self._get_if_stored, key))
                         for key in itertools.islice(todo, self._ahead - len(ahead)))
            if not ahead:
                break
            key, fetch = ahead.popleft()
            block = fetch.result()
            del fetch  # the future holds its result: the block must go when the caller lets go of it
            if block is None:
                lost.append(key)
            yield key, block
            del block
        if lost:
            raise BlocksMissing(lost)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _cached(self, key: str) -> LoadedBlock | None:
        with self._lock:
            reader = self._lru.get(key)
            if reader is not None:
                self._lru.move_to_end(key)
            return reader

    def _get_if_stored(self, key: str) -> LoadedBlock | None:
        try:
            return self._cached(key) or self._load(key)
        except ObjectNotFound:
            return None

    def _load(self, key: str) -> LoadedBlock:
        reader = BlockReader(RangedObject(self._source, key), key)
        block = LoadedBlock(reader, self.paths, tenant_of(key))
        with self._lock:
            if key not in self._lru:
                self._lru[key] = block
            self._evict()
        return block

    def _evict(self) -> None:
        """Drop the least recently used blocks until the rest fit the budget (the newest always stays)."""
        sizes = {k: b.memory_bytes() for k, b in self._lru.items()}
        total = sum(sizes.values())
        while total > self._max_bytes and len(self._lru) > 1:
            key, _ = self._lru.popitem(last=False)
            total -= sizes[key]
        CACHED_BYTES.set(total)
        CACHED_BLOCKS.set(len(self._lru))
        PATHS.set(len(self.paths))
