"""Merges split between queriers: how rows are cut into shares, and the share's round trip through the
wire (rows out, a compact tree back into another path index) answering to the bit what one querier
reading every row answers, gauges and pre-merged trees included."""

import numpy as np
import pytest
from test_premerged_source import PROFILES, blocks, divisors_of, hours_of, reader  # noqa: F401 (a fixture)

from flamewatch.api.flamewatch.v1 import partial_pb2
from flamewatch.labels.selector import parse_selector
from flamewatch.querier import deadline
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.fanout import TREE_COST, response_tree, share_request, share_rows, split, tree_response
from flamewatch.querier.merging import Rows
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.premerged import PreMergedTrees
from flamewatch.querier.sources import LocalBlocks, PartialTree, combine
from flamewatch.storage.blockformat import TREE_SPAN_NS
from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.frames import run_codes

KEY = "acme/blocks/1/2026/11/26/trees.parquet"


def rows_of(n_blocks: int, per_block: int, rng: np.random.Generator):
    block = np.repeat(np.array([f"b{i}" for i in range(n_blocks)], object), per_block)
    r = Rows({f"b{i}": f"acme/blocks/0/b{i}" for i in range(n_blocks)}, block, rng.permutation(len(block)) % 997)
    series = rng.integers(0, 5, len(block))
    hour = rng.integers(0, 3, len(block)) * TREE_SPAN_NS + 7 * TREE_SPAN_NS
    return r, series, hour


@pytest.mark.parametrize("parts", [2, 3, 5])
def test_shares_hold_every_row_once_and_never_cut_a_series_hour_of_a_block(parts):
    rng = np.random.default_rng(parts)
    r, series, hour = rows_of(7, 300, rng)
    by_tree = (series + hour) % 2 == 0
    shares = split(run_codes(r.block_id)[1], by_tree, series, hour, parts)
    assert len(shares) == parts
    assert np.sort(np.concatenate(shares)).tolist() == list(range(len(r.row)))
    owner = np.empty(len(r.row), np.int64)
    for i, share in enumerate(shares):
        owner[share] = i
    groups = {}
    for i in range(len(r.row)):
        groups.setdefault((r.block_id[i], series[i], hour[i]), set()).add(int(owner[i]))
    assert all(len(o) == 1 for o in groups.values())
    # equal cost, within one group's cost: a tree's group costs TREE_COST, a profile row 1
    cost = [sum(1 for i in s if not by_tree[i]) + TREE_COST * len({(r.block_id[i], series[i], hour[i])
                                                                   for i in s if by_tree[i]}) for s in shares]
    biggest = max(len([i for i in range(len(r.row)) if (r.block_id[i], series[i], hour[i]) == g])
                  for g in groups)
    assert max(cost) - min(cost) <= 2 * max(biggest, TREE_COST)


def test_each_share_reads_a_contiguous_run_of_blocks():
    rng = np.random.default_rng(1)
    r, series, hour = rows_of(10, 100, rng)
    shares = split(run_codes(r.block_id)[1], None, series, hour, 3)
    firsts = [sorted({int(b[1:]) for b in r.block_id[s]}) for s in shares]
    for a, b in zip(firsts, firsts[1:]):
        assert a[-1] <= b[0]  # at most one block read by two shares
    assert all(f == list(range(f[0], f[-1] + 1)) for f in firsts)


def test_one_share_or_one_row_is_not_split():
    rng = np.random.default_rng(2)
    r, series, hour = rows_of(1, 1, rng)
    assert [s.tolist() for s in split(run_codes(r.block_id)[1], None, series, hour, 3)] == [[0]]
    r, series, hour = rows_of(3, 10, rng)
    assert [s.tolist() for s in split(run_codes(r.block_id)[1], None, series, hour, 1)] == [list(range(30))]


def wire(message):
    """A message as the other side reads it."""
    return type(message).FromString(message.SerializeToString())


@pytest.mark.parametrize("gauge", [False, True])
@pytest.mark.parametrize("granularity", ["functions", "lines"])
def test_a_share_read_by_another_querier_adds_up_to_the_bit(blocks, gauge, granularity, tmp_path):  # noqa: F811
    picked = np.arange(2 * PROFILES)
    divisors = divisors_of(blocks, picked) if gauge else None
    rows = Rows({"trees": "trees"}, np.full(len(picked), "trees", object), picked,
                None if divisors is None else 1.0 / divisors, divisors=divisors)
    whole = LocalBlocks(blocks).tree(rows, granularity, None)
    fingerprint, hour = hours_of(reader(blocks, "trees"))
    by_tree = hour == hour[0]
    # the peer: the block under its tenant's key, behind a cache and path index of its own, as another process
    store = FilesystemObjectStore(tmp_path)
    store.put(KEY, blocks._source.get("trees"))
    peer = BlockCache(store, 1 << 30, 1, PathIndex())
    try:
        shares = split(run_codes(rows.block_id)[1], by_tree, fingerprint, hour, 2)
        assert len(shares) == 2 and by_tree[shares[0]].any()
        for share in shares:
            sent = rows.take(share)
            request = wire(share_request(Rows({"trees": KEY}, sent.block_id, sent.row, sent.weights, sent.filters,
                                              sent.row_filter, sent.divisors), by_tree[share], granularity, False))
            got, got_trees = share_rows(request, "acme")
            assert got.row.tolist() == share.tolist() and got_trees.tolist() == by_tree[share].tolist()
            theirs = combine([PreMergedTrees(peer).tree(got.take(np.flatnonzero(got_trees)), granularity, None),
                              LocalBlocks(peer).tree(got.take(np.flatnonzero(~got_trees)), granularity, None)])
            back = response_tree(wire(tree_response(theirs, ["a warning"])), blocks.paths)
            mine = LocalBlocks(blocks).tree(rows.take(np.setdiff1d(picked, share)), granularity, None)
            total = combine([mine, back])
            assert total.values.dtype == whole.values.dtype
            assert total.values[: len(whole.values)].tobytes() == whole.values.tobytes()
            assert not total.values[len(whole.values):].any()
            assert total.tree().names.tolist() == whole.tree().names.tolist()
    finally:
        peer.close()
        store.close()


def test_rows_survive_the_wire_with_filters_weights_and_divisors():
    r = Rows({"x": KEY, "y": KEY.replace("trees", "more")}, np.array(["y", "x", "y"], object), np.array([4, 0, 9]),
             np.array([0.5, 1.0, 0.25]), (parse_selector("{}"), parse_selector('{handler="/a"}')),
             np.array([0, 1, 1], np.int32), np.array([2, 1, 4]))
    got, by_tree = share_rows(wire(share_request(r, np.array([True, False, True]), "lines", True)), "acme")
    assert got.block_id.tolist() == ["y", "x", "y"] and got.keys == r.keys and got.row.tolist() == [4, 0, 9]
    assert got.weights.tolist() == [0.5, 1.0, 0.25] and got.divisors.tolist() == [2, 1, 4]
    assert got.filters == r.filters and got.row_filter.tolist() == [0, 1, 1] and by_tree.tolist() == [1, 0, 1]


@pytest.mark.parametrize(("change", "message"), [
    (lambda m: m.block_keys.__setitem__(0, "other/blocks/0/x.parquet"), 'only the blocks of its tenant "acme"'),
    (lambda m: m.block_keys.__setitem__(0, "acme/blocks/../../other/x"), 'only the blocks of its tenant "acme"'),
    (lambda m: setattr(m, "row", m.row[:8]), "row arrays differ in length"),
    (lambda m: setattr(m, "block", np.array([0, 5], "<i4").tobytes()), "names a block it does not list"),
    (lambda m: setattr(m, "row_filter", np.array([0, 3], "<i4").tobytes()), "sample filter it does not list"),
    (lambda m: setattr(m, "granularity", "bytes"), 'unknown granularity "bytes"'),
    (lambda m: m.block_keys.append("acme/blocks/extra"), "one key per block"),
])
def test_a_broken_or_foreign_share_is_refused(change, message):
    r = Rows({"x": KEY}, np.array(["x", "x"], object), np.array([1, 2]))
    request = share_request(r, None, "functions", False)
    change(request)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        share_rows(request, "acme")


def test_an_empty_share_answers_an_empty_tree():
    empty = PartialTree(PathIndex(), np.zeros(1, np.int64))
    back = response_tree(wire(tree_response(empty, [])), PathIndex())
    assert back.values.tolist() == [0]


def test_a_query_whose_caller_went_away_stops_at_its_next_check():
    import threading

    gone = threading.Event()
    with deadline.bounded(None, gone):
        deadline.check()
        assert deadline.remaining() is None
        gone.set()
        with pytest.raises(deadline.QueryCancelled, match="went away"):
            deadline.check()
    with deadline.bounded(5.0):
        assert 4.0 < deadline.remaining() <= 5.0


def test_a_partial_request_is_a_message_of_arrays():
    r = Rows({"x": KEY}, np.full(1000, "x", object), np.arange(1000))
    request = share_request(r, None, "functions", False)
    assert isinstance(request, partial_pb2.MergePartialRequest)
    assert len(request.SerializeToString()) < 1000 * 13  # int32 block + int64 row per row, little more
