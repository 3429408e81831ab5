"""A merge over a compacted block answers exactly as the merge over the blocks it was made from, in
every output format, for any selection of rows."""

import numpy as np
import pytest
from test_block_v2 import three_block_bytes

from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.engine import merge_blocks
from flamewatch.querier.formats import RENDERERS
from flamewatch.querier.paths import PathIndex
from flamewatch.storage.block import BlockReader, compact
from flamewatch.storage.filesystem import FilesystemObjectStore

ALL = [(0, [0, 1]), (1, [0, 1]), (2, [0, 1, 2])]  # (input block, rows): compacted rows 0..6 in this order
INPUT_ROWS = [(b, r) for b, rows in ALL for r in rows]
SELECTIONS = {"everything": [0, 1, 2, 3, 4, 5, 6], "one_per_block": [0, 3, 6], "reordered": [5, 1, 4],
              "repeated": [2, 2, 6], "none": []}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = FilesystemObjectStore(tmp_path_factory.mktemp("blocks"))
    data = three_block_bytes()
    for i, d in enumerate(data):
        store.put(f"in/{i}", d)
    readers = [BlockReader(d) for d in data]
    store.put("out", compact([(readers[b], np.array(rows, np.int64)) for b, rows in ALL]))
    yield store
    store.close()


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
@pytest.mark.parametrize("selection", sorted(SELECTIONS))
def test_compacted_block_renders_as_its_inputs(store, fmt, selection):
    picked = SELECTIONS[selection]
    keys = {f"in/{b}": f"in/{b}" for b in range(3)} | {"out": "out"}
    weights = np.linspace(0.5, 2.0, len(picked)) if selection == "reordered" else None
    with_cache = BlockCache(store, max_bytes=1 << 30, concurrency=2, paths=PathIndex())
    try:
        before = merge_blocks(with_cache, keys, np.array([f"in/{INPUT_ROWS[i][0]}" for i in picked], object),
                              np.array([INPUT_ROWS[i][1] for i in picked], np.int64), weights)
        after = merge_blocks(with_cache, keys, np.array(["out"] * len(picked), object),
                             np.array(picked, np.int64), weights)
    finally:
        with_cache.close()
    body = RENDERERS[fmt](after, 1000)
    assert body == RENDERERS[fmt](before, 1000)
    assert (body["total"] != 0) == bool(picked)
