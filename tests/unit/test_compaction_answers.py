"""A merge over a compacted block answers exactly as the merge over the blocks it was made from, in
every output format, for any selection of rows."""

import numpy as np
import pytest
from test_block_v2 import three_block_bytes

from flamewatch.pprof import decode
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.engine import merge_blocks
from flamewatch.querier.formats import RENDERERS
from flamewatch.querier.formats.pprof import render_pprof
from flamewatch.querier.merging import Rows, gather_rows
from flamewatch.querier.paths import PathIndex
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.blockwrite import compact
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


def pprof_view(data: bytes) -> dict[tuple, int]:
    """(stack of (address, mapping, lines), labels) -> value of a pprof, whatever its ids."""
    p = decode(data)
    s = lambda i: str(p.strings[i])  # noqa: E731
    mappings = {int(m): (s(p.mappings.filename[i]), s(p.mappings.build_id[i]), int(p.mappings.memory_start[i]))
                for i, m in enumerate(p.mappings.id)}
    functions = {int(f): (s(p.functions.name[i]), s(p.functions.filename[i])) for i, f in enumerate(p.functions.id)}
    loc = p.locations
    locations = {}
    for i, lid in enumerate(loc.id.tolist()):
        lines = tuple((functions[int(loc.line_function_id[j])], int(loc.line_line[j]))
                      for j in range(loc.line_offsets[i], loc.line_offsets[i + 1]))
        locations[lid] = (int(loc.address[i]), mappings.get(int(loc.mapping_id[i])), lines)
    out: dict[tuple, int] = {}
    for i in range(len(p.samples)):
        stack = tuple(locations[int(x)] for x in p.samples.locations[p.samples.offsets[i]:p.samples.offsets[i + 1]])
        mine = p.samples.label_sample == i
        labels = frozenset(zip([s(k) for k in p.samples.label_key[mine]], [s(v) for v in p.samples.label_str[mine]],
                               p.samples.label_num[mine].tolist(), strict=True))
        out[(stack, labels)] = out.get((stack, labels), 0) + int(p.samples.values[i, 0])
    return out


@pytest.mark.parametrize("selection", sorted(SELECTIONS))
def test_compacted_block_renders_the_same_pprof(store, selection):
    picked = SELECTIONS[selection]
    keys = {f"in/{b}": f"in/{b}" for b in range(3)} | {"out": "out"}
    cache = BlockCache(store, max_bytes=1 << 30, concurrency=2, paths=PathIndex())
    ptype = ProfileType.parse("process_cpu:cpu:nanoseconds:cpu:nanoseconds")
    try:
        before = gather_rows(cache, Rows(keys, np.array([f"in/{INPUT_ROWS[i][0]}" for i in picked], object),
                                         np.array([INPUT_ROWS[i][1] for i in picked], np.int64)))
        after = gather_rows(cache, Rows(keys, np.array(["out"] * len(picked), object), np.array(picked, np.int64)))
    finally:
        cache.close()
    assert after[1] == before[1]
    view = pprof_view(render_pprof(after[0], ptype, after[1]))
    assert view == pprof_view(render_pprof(before[0], ptype, before[1]))
    assert bool(view) == bool(picked)
