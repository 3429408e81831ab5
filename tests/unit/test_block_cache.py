"""The querier's block cache counts what queries decode against its budget."""

import numpy as np
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
