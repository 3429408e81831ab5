"""The querier's block cache counts what queries decode against its budget, and a query keeps few blocks beyond it."""

import ctypes
import ctypes.util
import gc
import weakref

import numpy as np
import pyarrow as pa
import pytest
from test_block_v2 import _many_profiles

from flamewatch.querier.blocks import BlockCache, LoadedBlock
from flamewatch.querier.merging import Rows, merge_blocks, used_sample_labels
from flamewatch.querier.paths import PathIndex
from flamewatch.storage.blockwrite import write_block
from flamewatch.storage.errors import BlocksMissing
from flamewatch.storage.filesystem import FilesystemObjectStore


def test_decoded_entries_count_against_the_budget(tmp_path):
    store = FilesystemObjectStore(tmp_path)
    for key in ("a", "b"):
        store.put(key, write_block(_many_profiles(30)))
    probe = BlockCache(store, max_bytes=1 << 30, concurrency=1, paths=PathIndex())
    a = probe.get_many(["a"])["a"]
    undecoded = a.memory_bytes()
    a.reader.sample_entries(np.arange(30))
    assert a.reader.decoded_bytes > 0 and a.memory_bytes() == undecoded + a.reader.decoded_bytes
    probe.close()

    # Room for two blocks as loaded, not for one of them decoded as well.
    cache = BlockCache(store, max_bytes=2 * undecoded + a.reader.decoded_bytes // 2, concurrency=1, paths=PathIndex())
    try:
        cache.get_many(["a", "b"])
        assert len(cache._lru) == 2
        cache.get_many(["a"])["a"].reader.sample_entries(np.arange(30))
        cache.get_many(["a"])  # the next query finds the budget exceeded and drops the older block
        assert list(cache._lru) == ["a"]
    finally:
        cache.close()
        store.close()


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


def _malloc_in_use() -> int:
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd  # small chunks and mmapped ones


def test_a_block_counts_at_least_the_memory_loading_it_holds(tmp_path):
    # The parsed parquet footer lives in C++ memory, several times the size of a small block's file: a cache
    # that counted only the file and the arrays held three times its budget (flush blocks, 488 KB resident
    # each against 144 KB counted).
    store = FilesystemObjectStore(tmp_path)
    keys = [f"block-{i}" for i in range(101)]
    data = write_block(_many_profiles(30))
    for key in keys:
        store.put(key, data)
    cache = BlockCache(store, max_bytes=1 << 40, concurrency=1, paths=PathIndex())
    try:
        cache.get_many(keys[:1])  # the path index and the modules' own first allocations
        gc.collect()
        malloc_before, arrow_before = _malloc_in_use(), pa.total_allocated_bytes()
        loaded = cache.get_many(keys[1:])
        gc.collect()
        held = _malloc_in_use() - malloc_before + pa.total_allocated_bytes() - arrow_before
        counted = sum(block.memory_bytes() for block in loaded.values())
        assert counted >= held > 0, (counted, held)
    finally:
        cache.close()
        store.close()


def test_a_query_over_more_blocks_than_the_cache_holds_keeps_only_a_few_beyond_it(tmp_path, monkeypatch):
    # A query held every block of its range until its answer was made: the soak's label values over 30
    # minutes read 1,100 flush blocks on top of a full cache, so a query's memory grew with its range.
    store = FilesystemObjectStore(tmp_path)
    data = write_block(_many_profiles(30))
    keys = [f"block-{i}" for i in range(40)]
    for key in keys:
        store.put(key, data)
    live: weakref.WeakSet = weakref.WeakSet()

    class Counted(LoadedBlock):
        def __init__(self, *args):
            super().__init__(*args)
            live.add(self)

    monkeypatch.setattr("flamewatch.querier.blocks.LoadedBlock", Counted)
    alive_at_fetch = []

    class Watched:
        def get_tail(self, key: str, length: int) -> tuple[bytes, int]:
            # A block's first fetch. No gc.collect(): blocks hold no cycles, so the last reference frees one
            # and the count is exact (a collection per fetch cost a quarter of a second in a full test run).
            alive_at_fetch.append(len(live))
            return store.get_tail(key, length)

        def get_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]:
            return store.get_ranges(key, ranges)

    one = BlockCache(store, max_bytes=1 << 30, concurrency=1, paths=PathIndex()).get_many(keys[:1])[keys[0]]
    cache = BlockCache(Watched(), max_bytes=4 * one.memory_bytes(), concurrency=1, paths=PathIndex())
    try:
        block_id, row = np.repeat(np.arange(len(keys)), 30), np.tile(np.arange(30), len(keys))
        rows = Rows(dict(enumerate(keys)), block_id, row)
        tree = merge_blocks(cache, rows.keys, block_id, row, None)
        assert int(tree.self_value.sum()) == len(keys) * int(one.reader.profiles.column("total").to_numpy().sum())
        assert len(alive_at_fetch) == len(keys)
        assert max(alive_at_fetch) <= 4 + 2 + 2, alive_at_fetch  # the cache, the fetches ahead, the block folded
        alive_at_fetch.clear()
        assert used_sample_labels(cache, rows, None) == set()
        assert max(alive_at_fetch) <= 4 + 2 + 2, alive_at_fetch
    finally:
        cache.close()
        store.close()


def test_a_merge_missing_blocks_names_every_one_after_reading_the_rest(tmp_path):
    store = FilesystemObjectStore(tmp_path)
    store.put("here", write_block(_many_profiles(3)))
    cache = BlockCache(store, max_bytes=1 << 30, concurrency=1, paths=PathIndex())
    try:
        keys = {0: "gone-1", 1: "here", 2: "gone-2"}
        with pytest.raises(BlocksMissing) as lost:
            merge_blocks(cache, keys, np.repeat(np.arange(3), 3), np.tile(np.arange(3), 3), None)
        assert "gone-1" in str(lost.value) and "gone-2" in str(lost.value) and "here" not in str(lost.value)
    finally:
        cache.close()
        store.close()
