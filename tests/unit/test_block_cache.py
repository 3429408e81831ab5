"""The querier's block cache counts what queries decode against its budget."""

import ctypes
import ctypes.util
import gc

import numpy as np
import pyarrow as pa
from test_block_v2 import _many_profiles

from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.paths import PathIndex
from flamewatch.storage.block import write_block
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
