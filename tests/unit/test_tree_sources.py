"""Partial trees and the one function that combines them: partials of a query's rows, however split
between sources, add up to the merge of all its rows, gauges (weighted per series over the whole
range) included."""

import numpy as np
import pytest
from test_block_v2 import _many_profiles

from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.calltree import totals
from flamewatch.querier.engine import _joined
from flamewatch.querier.gauges import gauge_weights
from flamewatch.querier.merging import Rows, merge_blocks
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.sources import LocalBlocks, PartialTree, TreeSource, combine
from flamewatch.storage.blockwrite import write_block
from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.index import ProfileRows

PROFILES = 12  # per block


@pytest.fixture
def cache(tmp_path):
    store = FilesystemObjectStore(tmp_path)
    for key in ("a", "b", "c"):
        store.put(key, write_block(_many_profiles(PROFILES)))
    blocks = BlockCache(store, max_bytes=1 << 30, concurrency=1, paths=PathIndex())
    yield blocks
    blocks.close()
    store.close()


def every_row(series_of_row=lambda i: i % 4) -> tuple[Rows, np.ndarray]:
    """Every profile of the three blocks, and the series of each (as the index would give them)."""
    block_id = np.repeat(np.array(["a", "b", "c"], object), PROFILES)
    row = np.tile(np.arange(PROFILES), 3)
    series = np.array([series_of_row(i) for i in range(len(row))], np.int64)
    return Rows({k: k for k in "abc"}, block_id, row), series


def part(rows: Rows, keep: np.ndarray, weights: np.ndarray | None) -> Rows:
    return Rows({k: k for k in set(rows.block_id[keep].tolist())}, rows.block_id[keep], rows.row[keep],
                None if weights is None else weights[keep])


def as_dict(tree) -> dict[tuple[str, ...], float]:
    """Total per function path."""
    names = np.asarray(tree.names, object)[tree.name]
    total = totals(tree)
    out = {}
    for node in range(len(tree)):
        path, at = [], node
        while at >= 0:
            path.append(names[at])
            at = tree.parent[at]
        out[tuple(reversed(path))] = float(total[node])
    return out


def test_local_blocks_are_a_tree_source(cache):
    source: TreeSource = LocalBlocks(cache)
    rows, _ = every_row()
    whole = merge_blocks(cache, rows.keys, rows.block_id, rows.row, None)
    assert as_dict(source.tree(rows, "functions", None).tree()) == as_dict(whole)


def test_one_partial_is_the_answer_as_it_is(cache):
    rows, _ = every_row()
    partial = LocalBlocks(cache).tree(rows, "functions", None)
    assert combine([partial]) is partial


def test_partials_of_the_blocks_sum_to_the_merge_of_all_of_them_exactly(cache):
    source = LocalBlocks(cache)
    rows, _ = every_row()
    whole = merge_blocks(cache, rows.keys, rows.block_id, rows.row, None)
    partials = [source.tree(part(rows, rows.block_id == key, None), "functions", None) for key in "abc"]
    combined = combine(partials)
    assert combined.values.dtype == np.int64
    assert as_dict(combined.tree()) == as_dict(whole)
    # Split any other way (here by row, across blocks), the sum is the same.
    odd = rows.row % 2 == 1
    halves = combine([source.tree(part(rows, keep, None), "functions", None) for keep in (odd, ~odd)])
    assert as_dict(halves.tree()) == as_dict(whole)


def test_gauge_partials_weighted_over_the_whole_range_combine_to_the_per_series_mean(cache):
    """A gauge's merge is, per series, the mean over its profiles in the range, summed across series:
    weights come from every row of the query, so a partial holding part of a series' profiles adds
    its share of that mean."""
    source = LocalBlocks(cache)
    rows, series = every_row()
    index_rows = ProfileRows.of(series, np.arange(len(series)), rows.block_id.astype(str), rows.row,
                             np.zeros(len(series), np.int64), np.zeros(len(series), np.int64))
    weights = gauge_weights(index_rows)
    assert np.allclose(np.bincount(series, weights=weights), 1.0)  # each series' weights: one mean
    whole = merge_blocks(cache, rows.keys, rows.block_id, rows.row, weights)
    partials = [source.tree(part(rows, rows.block_id == key, weights), "functions", None) for key in "abc"]
    combined = combine(partials)
    assert combined.values.dtype == np.float64
    expected, got = as_dict(whole), as_dict(combined.tree())
    assert expected.keys() == got.keys()
    assert np.allclose([got[k] for k in expected], [expected[k] for k in expected], rtol=1e-12)
    # The root is the sum over series of each series' mean profile total.
    per_profile = {k: v for k, v in as_dict(merge_blocks(cache, rows.keys, rows.block_id, rows.row, None)).items()}
    assert got[("total",)] == pytest.approx(per_profile[("total",)] / (3 * PROFILES / 4))


def test_partials_grow_with_the_path_index_and_keep_the_frames_left_unnamed(cache):
    paths = cache.paths
    small = PartialTree(paths, np.array([0, 5], np.int64), {"[a.so] 0x1": "a.so"})
    large = PartialTree(paths, np.array([0, 1, 2], np.int64), {"[b.so] 0x2": "b.so"})
    combined = combine([small, large])
    assert combined.values.tolist() == [0, 6, 2]
    assert combined.unnamed == {"[a.so] 0x1": "a.so", "[b.so] 0x2": "b.so"}


def test_combine_refuses_nothing_and_partials_of_different_path_indexes(cache):
    with pytest.raises(ValueError, match="at least one"):
        combine([])
    with pytest.raises(ValueError, match="one path index"):
        combine([PartialTree(cache.paths, np.zeros(1)), PartialTree(PathIndex(), np.zeros(1))])


def test_rows_may_name_blocks_by_codes_and_two_sides_keep_their_own_codes(cache):
    """The engine hands sources the index's block codes (`ProfileRows.block`), each query side its own:
    the same blocks read by code or by id merge alike, and joined sides do not mistake one side's code 0
    for the other's."""
    rows, _ = every_row()
    codes = Rows({0: "a", 1: "b", 2: "c"}, np.repeat(np.arange(3), PROFILES), rows.row)
    assert as_dict(merge_blocks(cache, codes.keys, codes.block_id, codes.row, None)) == \
        as_dict(merge_blocks(cache, rows.keys, rows.block_id, rows.row, None))
    a = Rows({0: "a", 1: "b"}, np.repeat(np.arange(2), PROFILES), np.tile(np.arange(PROFILES), 2))
    b = Rows({0: "c"}, np.zeros(PROFILES, np.int64), np.arange(PROFILES))
    joined = _joined(a, b)
    assert [joined.keys[code] for code in joined.block_id.tolist()] == list(np.repeat(["a", "b", "c"], PROFILES))
    assert as_dict(merge_blocks(cache, joined.keys, joined.block_id, joined.row, None)) == \
        as_dict(merge_blocks(cache, rows.keys, rows.block_id, rows.row, None))
