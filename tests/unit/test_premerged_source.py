"""Pre-merged trees: a compacted block's tree of each series and hour is the sum of that hour's profiles,
and the source reading them answers any rows it is handed exactly as the profiles do (gauges to the bit),
reading a tree only where the rows take it whole."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_block import build, entry, typed

from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.merging import Rows
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.premerged import PreMergedTrees, whole_hours
from flamewatch.querier.sources import LocalBlocks, combine
from flamewatch.storage.blockformat import TREE_SPAN_NS
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.blockwrite import compact, write_block
from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.index import ProfileRows

HOUR = TREE_SPAN_NS
PROFILES = 30  # per flushed block


def profiles(first: int) -> list:
    """Profiles of four series over three hours, with stacks that differ from profile to profile."""
    out = []
    for i in range(first, first + PROFILES):
        stacks = [[f"leaf{i % 7}", "mid", "main"], [f"b{i % 3}", "main"], ["main"]]
        profile = typed(build(stacks, [[i + 1], [2 * i + 1], [3]]))[0]
        out.append(entry(profile, 5 * HOUR + (i % 3) * HOUR + i, pod=f"p{i % 4}"))
    return out


@pytest.fixture(scope="module")
def blocks(tmp_path_factory):
    """Two flushed blocks compacted into one with trees ("trees") and one without ("plain")."""
    store = FilesystemObjectStore(tmp_path_factory.mktemp("blocks"))
    readers = [BlockReader(write_block(profiles(first))) for first in (0, PROFILES)]
    parts = [(r, np.arange(PROFILES)) for r in readers]
    store.put("trees", compact(parts, trees=True))
    store.put("plain", compact(parts))
    # pod p0's first hour left with one profile (rows 12 and 24 dropped): too thin for a tree
    store.put("thin", compact([(readers[0], np.setdiff1d(np.arange(PROFILES), [12, 24]))], trees=True))
    cache = BlockCache(store, max_bytes=1 << 30, concurrency=1, paths=PathIndex())
    yield cache
    cache.close()
    store.close()


def reader(cache: BlockCache, key: str) -> BlockReader:
    return cache.get_many([key])[key].reader


def hours_of(r: BlockReader) -> tuple[np.ndarray, np.ndarray]:
    time = r.profiles.column("time_ns").to_numpy()
    return r.profiles.column("series_fingerprint").to_numpy(), time - time % HOUR


def test_each_tree_is_the_sum_of_its_series_profiles_of_that_hour(blocks):
    r = reader(blocks, "trees")
    trees = r.trees
    fingerprint, hour = hours_of(r)
    assert len(trees.fingerprint) == len(set(zip(fingerprint.tolist(), hour.tolist()))) == 12  # 4 series x 3 hours
    for t in range(len(trees.fingerprint)):
        rows = np.flatnonzero((fingerprint == trees.fingerprint[t]) & (hour == trees.hour[t]))
        _, nodes, _, values = r.sample_entries(rows)
        expected = np.zeros(len(r.node_parent), np.int64)
        np.add.at(expected, nodes, values)
        got = np.zeros(len(r.node_parent), np.int64)
        at = slice(trees.offsets[t], trees.offsets[t + 1])
        got[trees.node[at]] = trees.values(at)
        assert got.tolist() == expected.tolist()
    assert trees.find(fingerprint, hour).tolist() == [
        int(np.flatnonzero((trees.fingerprint == f) & (trees.hour == h))[0]) for f, h in zip(fingerprint, hour)]
    assert trees.find(np.array([fingerprint[0]]), np.array([hour[0] + 7 * HOUR])).tolist() == [-1]


def test_a_block_without_trees_says_so_and_trees_change_no_answer_of_the_profiles(blocks):
    plain = reader(blocks, "plain")
    assert not plain.has_trees and len(plain.trees.fingerprint) == 0
    assert reader(blocks, "trees").has_trees
    rows = Rows({"trees": "trees"}, np.full(2 * PROFILES, "trees", object), np.arange(2 * PROFILES))
    same = Rows({"plain": "plain"}, np.full(2 * PROFILES, "plain", object), np.arange(2 * PROFILES))
    source = LocalBlocks(blocks)
    expected = source.tree(rows, "functions", None).values.tolist()
    assert source.tree(same, "functions", None).values.tolist() == expected
    assert PreMergedTrees(blocks).tree(same, "functions", None).values.tolist() == expected  # from its profiles


def test_an_hour_of_one_profile_has_no_tree_and_a_block_of_such_hours_no_trees_section(blocks):
    r = reader(blocks, "trees")
    fingerprint, hour = hours_of(r)
    rows = np.array([int(np.flatnonzero((fingerprint == f) & (hour == h))[0])
                     for f, h in sorted(set(zip(fingerprint.tolist(), hour.tolist())))])
    single = BlockReader(compact([(r, rows)], trees=True))  # one profile per series and hour
    assert not single.has_trees
    two = BlockReader(compact([(r, np.r_[rows, rows[:1]])], trees=True))  # but the first twice
    assert two.has_trees and len(two.trees.fingerprint) == 1


def test_trees_of_a_block_of_many_row_groups_are_a_row_group_of_their_own(blocks, monkeypatch, tmp_path):
    monkeypatch.setattr("flamewatch.storage.blockwrite.PROFILE_GROUP_ENTRIES", 8)
    r = reader(blocks, "trees")
    data = compact([(r, np.arange(2 * PROFILES))], trees=True)
    split = BlockReader(data)
    assert len(split._sections["profiles"]) > 3
    assert split._sections["trees"] == [max(split._sections["profiles"]) + 1] and "trees" not in split._rows
    assert split.trees.values(slice(None)).tolist() == r.trees.values(slice(None)).tolist()
    store = FilesystemObjectStore(tmp_path)
    store.put("split", data)
    cache = BlockCache(store, max_bytes=1 << 30, concurrency=1, paths=blocks.paths)
    try:
        rows = Rows({"split": "split"}, np.full(2 * PROFILES, "split", object), np.arange(2 * PROFILES))
        assert (PreMergedTrees(cache).tree(rows, "functions", None).values.tolist()
                == LocalBlocks(blocks).tree(Rows({"trees": "trees"}, np.full(2 * PROFILES, "trees", object),
                                                 np.arange(2 * PROFILES)), "functions", None).values.tolist())
    finally:
        cache.close()
        store.close()


def test_tree_values_are_stored_as_a_dictionary_of_the_few_distinct_sums(blocks, monkeypatch):
    """Sums of sampled values repeat (multiples of a period): a dictionary stores a tree's values in a
    fraction of what plain zstd does, which keeps trees within a fifth of a fleet's blocks."""
    monkeypatch.setattr("flamewatch.storage.blockwrite.PROFILE_GROUP_ENTRIES", 8)
    data = compact([(reader(blocks, "trees"), np.arange(2 * PROFILES))], trees=True)
    metadata = pq.ParquetFile(pa.BufferReader(data)).metadata
    group = metadata.row_group(BlockReader(data)._sections["trees"][0])
    values = next(group.column(c) for c in range(group.num_columns)
                  if group.column(c).path_in_schema == "values.list.element")
    assert "RLE_DICTIONARY" in values.encodings, values.encodings


def selections(cache: BlockCache) -> dict[str, np.ndarray]:
    fingerprint, hour = hours_of(reader(cache, "trees"))
    one_tree = np.flatnonzero((fingerprint == fingerprint[0]) & (hour == hour[0]))
    return {
        "everything": np.arange(2 * PROFILES),
        "one tree": one_tree,
        "one tree but a row": one_tree[1:],
        "a row twice": np.r_[one_tree, one_tree[:1]],
        "one hour of every series": np.flatnonzero(hour == hour[0]),
        "scattered": np.array([0, 5, 7, 11, 12, 13, 40, 59]),
    }


def divisors_of(cache: BlockCache, rows: np.ndarray) -> np.ndarray:
    """A gauge's divisors: the rows of each series among those given."""
    fingerprint = hours_of(reader(cache, "trees"))[0][rows]
    _, inverse, counts = np.unique(fingerprint, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)].astype(np.int64)


@pytest.mark.parametrize("gauge", ["no", "dense sums", "sorted sums"])
@pytest.mark.parametrize("granularity", ["functions", "lines"])
def test_trees_answer_any_rows_to_the_bit_as_the_profiles_do(blocks, gauge, granularity, monkeypatch):
    if gauge == "sorted sums":  # what a group of many divisors and nodes does
        monkeypatch.setattr("flamewatch.querier.merging._DENSE_SHARES", 0)
    gauge = gauge != "no"
    for name, picked in selections(blocks).items():
        divisors = divisors_of(blocks, picked) if gauge else None
        rows = Rows({"trees": "trees"}, np.full(len(picked), "trees", object), picked,
                    None if divisors is None else 1.0 / divisors, divisors=divisors)
        from_trees = PreMergedTrees(blocks).tree(rows, granularity, None).values
        from_profiles = LocalBlocks(blocks).tree(rows, granularity, None).values
        assert from_trees.dtype == from_profiles.dtype == (np.float64 if gauge else np.int64), name
        assert from_trees.tobytes() == from_profiles.tobytes(), name
        assert from_trees.any(), name


def test_rows_that_take_every_tree_whole_read_no_profile(blocks, monkeypatch):
    rows = Rows({"trees": "trees"}, np.full(2 * PROFILES, "trees", object), np.arange(2 * PROFILES))
    expected = LocalBlocks(blocks).tree(rows, "functions", None).values
    monkeypatch.setattr(BlockReader, "entry_parts", lambda *a, **k: pytest.fail("a profile's entries were read"))
    assert PreMergedTrees(blocks).tree(rows, "functions", None).values.tolist() == expected.tolist()


def test_gauge_partials_add_up_to_the_bit_however_the_rows_are_split(blocks):
    picked = np.arange(2 * PROFILES)
    divisors = divisors_of(blocks, picked)
    rows = Rows({"trees": "trees"}, np.full(len(picked), "trees", object), picked, 1.0 / divisors, divisors=divisors)
    whole = LocalBlocks(blocks).tree(rows, "functions", None).values
    for keep in (picked % 2 == 0, picked < 17, hours_of(reader(blocks, "trees"))[1] == 6 * HOUR):
        parts = [PreMergedTrees(blocks).tree(rows.take(np.flatnonzero(keep)), "functions", None),
                 LocalBlocks(blocks).tree(rows.take(np.flatnonzero(~keep)), "functions", None)]
        assert combine(parts).values.tobytes() == whole.tobytes()


def test_trees_lie_in_the_order_of_their_first_profiles(blocks):
    r = reader(blocks, "trees")
    fingerprint, hour = hours_of(r)
    trees = r.trees
    firsts = [int(np.flatnonzero((fingerprint == f) & (hour == h))[0]) for f, h in zip(trees.fingerprint, trees.hour)]
    assert firsts == sorted(firsts) and len(firsts) == 12  # 4 series x 3 hours


@pytest.mark.parametrize("runs_as_slices", [0, 16])  # 0: every selection's trees gathered
@pytest.mark.parametrize("gauge", [False, True])
@pytest.mark.parametrize("key", ["trees", "plain", "thin"])
def test_series_taken_whole_answer_to_the_bit_as_their_profiles_do(blocks, key, gauge, runs_as_slices, monkeypatch):
    monkeypatch.setattr("flamewatch.querier.premerged._RUNS_AS_SLICES", runs_as_slices)
    fingerprint = reader(blocks, key).profiles.column("series_fingerprint").to_numpy().astype(np.int64)
    series, counts = np.unique(fingerprint, return_counts=True)
    for picked in (series[:1], series[1:3], series[::-1], np.r_[series, 12345]):  # 12345: no profile here
        divisors = counts[np.minimum(np.searchsorted(series, picked), len(series) - 1)] if gauge else None
        whole = Rows({key: key}, np.full(len(picked), key, object), picked,
                     None if divisors is None else 1.0 / divisors, divisors=divisors)
        rows = np.flatnonzero(np.isin(fingerprint, picked))
        row_divisors = counts[np.searchsorted(series, fingerprint[rows])] if gauge else None
        expected = LocalBlocks(blocks).tree(Rows({key: key}, np.full(len(rows), key, object), rows,
                                                 None if row_divisors is None else 1.0 / row_divisors,
                                                 divisors=row_divisors), "functions", None).values
        with monkeypatch.context() as m:
            if key == "trees":  # every hour has its tree: no profile is read
                m.setattr(BlockReader, "entry_parts", lambda *a, **k: pytest.fail("a profile's entries were read"))
            got = PreMergedTrees(blocks).series_tree(whole, "functions", None).values
        assert got.tobytes() == expected.tobytes(), (key, picked)
        assert got.any()
    assert len(reader(blocks, "thin").untreed[0]) == 1 and not len(reader(blocks, "trees").untreed[0])


def test_an_hour_is_whole_when_the_range_holds_it_from_its_first_to_its_last_nanosecond():
    times = np.array([5 * HOUR, 5 * HOUR + 10, 6 * HOUR + 1, 7 * HOUR + 5], np.int64)
    rows = ProfileRows.of(np.zeros(4, np.int64), times, np.full(4, "b"), np.arange(4), np.ones(4, np.int64),
                       np.zeros(4, np.int64))
    trees = np.ones(4, bool)
    assert whole_hours(rows, None, trees, 5 * HOUR, 7 * HOUR - 1).tolist() == [True, True, True, False]
    assert whole_hours(rows, None, trees, 5 * HOUR + 1, 7 * HOUR - 1).tolist() == [False, False, True, False]
    assert whole_hours(rows, None, trees, 5 * HOUR, 7 * HOUR - 2).tolist() == [True, True, False, False]
    assert whole_hours(rows, np.array([0, 1, 0, 0]), trees, 0, 8 * HOUR).tolist() == [True, False, True, True]
    assert whole_hours(rows, None, np.array([True, True, False, True]), 0, 8 * HOUR).tolist() == [
        True, True, False, True]
    assert not whole_hours(rows, None, trees, 5 * HOUR, 5 * HOUR + 20).any()


@pytest.mark.parametrize("seed", range(4))
def test_finding_the_tree_of_each_row_agrees_with_a_lookup_by_pair(seed):
    from flamewatch.storage.blockread import StoredTrees

    rng = np.random.default_rng(seed)
    fingerprints = rng.integers(-(2**63), 2**63 - 1, 30, dtype=np.int64)  # hashes: negative ones too
    hours = (np.arange(5) + 400_000) * HOUR
    pairs = sorted({(int(f), int(h)) for f, h in zip(rng.choice(fingerprints, 80), rng.choice(hours, 80))})
    fp, hr = (np.array(c, np.int64) for c in zip(*pairs))
    empty = np.zeros(0, np.int64)
    trees = StoredTrees(fp, hr, np.zeros(len(fp) + 1, np.int64), empty, empty, empty, empty)
    rows_fp = np.r_[rng.choice(fingerprints, 500), rng.integers(-(2**63), 2**63 - 1, 20, dtype=np.int64)]
    rows_hour = np.r_[rng.choice(hours, 500), rng.choice(hours, 20)]
    rows_hour[:7] += 1  # not an hour any tree has
    where = {pair: i for i, pair in enumerate(pairs)}
    expected = [where.get((int(f), int(h)), -1) for f, h in zip(rows_fp, rows_hour)]
    assert trees.find(rows_fp, rows_hour).tolist() == expected
    assert -1 in expected and max(expected) >= 0
    assert trees.find(empty, empty).tolist() == []


@pytest.mark.parametrize("distinct, dtype", [(3, np.uint8), (300, np.uint16), (70_000, np.int64)])
def test_tree_values_are_kept_as_codes_when_few_distinct_and_read_back_exactly(distinct, dtype):
    from flamewatch.storage.blockread import StoredTrees, _coded

    rng = np.random.default_rng(distinct)
    values = rng.permutation(np.resize(np.arange(distinct, dtype=np.int64) * 10_000_019 - 5, 80_000))
    value, _, _, table = _coded(pa.array(values))
    assert value.dtype == dtype and (table is None) == (dtype == np.int64)
    empty = np.zeros(0, np.int64)
    trees = StoredTrees(empty, empty, np.zeros(1, np.int64), np.zeros(len(values), np.int32), value, empty, empty,
                        table)
    assert trees.values(slice(None)).tolist() == values.tolist()
    picked = rng.integers(0, len(values), 500)
    assert trees.values(picked).tolist() == values[picked].tolist()
    assert trees.values(slice(10, 20)).dtype == np.int64


def test_tree_nodes_are_kept_in_two_bytes_when_the_stack_has_fewer_than_65536_nodes():
    from flamewatch.storage.blockread import _narrow

    small, large = np.array([0, 7, 65_535], np.int32), np.array([0, 7, 65_536], np.int32)
    assert _narrow(small).dtype == np.uint16 and _narrow(small).tolist() == small.tolist()
    assert _narrow(large).dtype == np.int32 and _narrow(large).tolist() == large.tolist()
    assert _narrow(np.zeros(0, np.int32)).dtype == np.int32
