"""Merges split between queriers: how a range is cut into pieces, and a piece's round trip through the
wire (the query and its range out, a compact tree back into another path index) adding up to the bit
with what one querier reading everything answers, gauges and pre-merged trees included."""

import numpy as np
import pytest
from test_premerged_source import PROFILES, blocks, divisors_of, hours_of, reader  # noqa: F401 (a fixture)

from flamewatch.api.flamewatch.v1 import partial_pb2
from flamewatch.querier import deadline
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.fanout import (
    TREE_COST,
    Piece,
    cut_times,
    entry_work,
    range_request,
    request_range,
    response_tree,
    tree_response,
)
from flamewatch.querier.merging import Rows
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.premerged import PreMergedTrees
from flamewatch.querier.sources import LocalBlocks, PartialTree, combine
from flamewatch.storage.blockformat import TREE_SPAN_NS
from flamewatch.storage.filesystem import FilesystemObjectStore

H = TREE_SPAN_NS
KEY = "acme/blocks/1/2026/11/26/trees.parquet"
DAY0 = 20_000 * 24 * H  # a day's start, in ns


def covers(pieces, start, end):
    """The pieces are [start, end] cut into contiguous, disjoint ranges, in order."""
    assert pieces[0][0] == start and pieces[-1][1] == end
    assert all(lo <= hi for lo, hi in pieces)
    assert all(a[1] + 1 == b[0] for a, b in zip(pieces, pieces[1:]))


@pytest.mark.parametrize("parts", [2, 3, 5])
def test_a_range_is_cut_at_whole_hours_into_pieces_of_equal_work(parts):
    rng = np.random.default_rng(parts)
    hours = 48
    first = DAY0 + np.repeat(np.arange(hours), 10) * H + rng.integers(0, H, 10 * hours)  # 10 series an hour
    work = rng.integers(50, 70, len(first))
    start, end = DAY0 + 7 * 10**9, DAY0 + hours * H - 1
    pieces = cut_times(first, work, start, end, parts)
    assert len(pieces) == parts
    covers(pieces, start, end)
    assert all(lo % H == 0 for lo, _ in pieces[1:])  # no series' hour read by two
    done = [int(work[(first >= lo) & (first <= hi)].sum()) for lo, hi in pieces]
    assert max(done) - min(done) <= 2 * 10 * 70  # within two hours' work of each other


def test_work_in_fewer_hours_than_parts_gives_fewer_pieces_and_one_part_one_piece():
    first = np.array([DAY0 + 5 * H + 1, DAY0 + 5 * H + 2, DAY0 + 6 * H])
    work = np.array([10, 10, 10])
    pieces = cut_times(first, work, DAY0, DAY0 + 24 * H - 1, 4)
    assert pieces == [(DAY0, DAY0 + 6 * H - 1), (DAY0 + 6 * H, DAY0 + 24 * H - 1)]
    assert cut_times(first, work, DAY0, DAY0 + 24 * H - 1, 1) == [(DAY0, DAY0 + 24 * H - 1)]
    assert cut_times(first[:0], work[:0], DAY0, DAY0 + H, 3) == [(DAY0, DAY0 + H)]
    assert cut_times(first[:1], work[:1], DAY0 + 5 * H, DAY0 + 5 * H + 9, 3) == [(DAY0 + 5 * H, DAY0 + 5 * H + 9)]


def test_a_row_in_a_block_with_trees_costs_a_tree_per_hour_it_spans():
    first = np.array([DAY0, DAY0, DAY0 + 30 * 60 * 10**9])
    last = np.array([DAY0 + 24 * H - 1, DAY0 + 24 * H - 1, DAY0 + 40 * 60 * 10**9])
    count = np.array([8640, 8640, 3])
    assert entry_work(first, last, count, np.array([True, False, True])).tolist() == [24 * TREE_COST, 8640, 3]


def wire(message):
    """A message as the other side reads it."""
    return type(message).FromString(message.SerializeToString())


@pytest.mark.parametrize("gauge", [False, True])
@pytest.mark.parametrize("granularity", ["functions", "lines"])
def test_a_piece_merged_by_another_querier_adds_up_to_the_bit(blocks, gauge, granularity, tmp_path):  # noqa: F811
    picked = np.arange(2 * PROFILES)
    divisors = divisors_of(blocks, picked) if gauge else None
    rows = Rows({"trees": "trees"}, np.full(len(picked), "trees", object), picked,
                None if divisors is None else 1.0 / divisors, divisors=divisors)
    whole = LocalBlocks(blocks).tree(rows, granularity, None)
    _, hour = hours_of(reader(blocks, "trees"))
    theirs_rows = np.flatnonzero(hour == hour[0])  # the peer's piece: the first hour, from its trees
    # the peer: the block under its tenant's key, behind a cache and path index of its own, as another process
    store = FilesystemObjectStore(tmp_path)
    store.put(KEY, blocks._source.get("trees"))
    peer = BlockCache(store, 1 << 30, 1, PathIndex())
    try:
        sent = rows.take(theirs_rows)
        theirs = PreMergedTrees(peer).tree(Rows({"trees": KEY}, sent.block_id, sent.row, sent.weights,
                                                divisors=sent.divisors), granularity, None)
        back = response_tree(wire(tree_response(Piece(theirs, len(theirs_rows)), ["a warning"])), blocks.paths)
        assert back.profiles == len(theirs_rows) and back.warnings == ("a warning",)
        mine = LocalBlocks(blocks).tree(rows.take(np.setdiff1d(picked, theirs_rows)), granularity, None)
        total = combine([mine, back.tree])
        assert total.values.dtype == whole.values.dtype
        assert total.values[: len(whole.values)].tobytes() == whole.values.tobytes()
        assert not total.values[len(whole.values):].any()
        assert total.tree().names.tolist() == whole.tree().names.tolist()
    finally:
        peer.close()
        store.close()


def test_a_piece_and_a_gauges_divisors_survive_the_wire():
    divisors = (np.array([3, 9, 12]), np.array([100, 1, 7]))
    request = wire(range_request('memory:inuse_space:bytes:space:bytes{service_name="api"}', (10, 20), "lines", True,
                                 divisors))
    query, piece, got = request_range(request)
    assert query == 'memory:inuse_space:bytes:space:bytes{service_name="api"}' and piece == (10, 20)
    assert request.symbolize and request.granularity == "lines"
    assert [a.tolist() for a in got] == [[3, 9, 12], [100, 1, 7]]
    assert request_range(wire(range_request("cpu{}", (5, 5), "functions", False, None)))[2] is None


@pytest.mark.parametrize(("change", "message"), [
    (lambda m: setattr(m, "query", ""), "names no query"),
    (lambda m: setattr(m, "end", 1), "ends .1. before it starts .10."),
    (lambda m: setattr(m, "granularity", "bytes"), 'unknown granularity "bytes"'),
    (lambda m: setattr(m, "divisor_series", np.array([1], "<i8").tobytes()), "differ in length"),
    (lambda m: setattr(m, "divisor_profiles", np.array([0, 2], "<i8").tobytes()), "at least 1"),
])
def test_a_broken_piece_is_refused(change, message):
    request = range_request("cpu{}", (10, 20), "functions", False, (np.array([1, 2]), np.array([3, 4])))
    change(request)
    with pytest.raises(ValueError, match=message):
        request_range(request)


def test_an_answer_from_a_querier_that_reads_shares_by_row_is_not_used():
    answer = tree_response(Piece(PartialTree(PathIndex(), np.zeros(1, np.int64)), 0), [])
    answer.by_range = False
    with pytest.raises(ValueError, match="another version"):
        response_tree(wire(answer), PathIndex())


def test_an_empty_piece_answers_an_empty_tree():
    empty = PartialTree(PathIndex(), np.zeros(1, np.int64))
    back = response_tree(wire(tree_response(Piece(empty, 0), [])), PathIndex())
    assert back.tree.values.tolist() == [0] and back.profiles == 0


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


def test_a_piece_request_is_small():
    request = range_request("cpu{}", (0, 1), "functions", False, None)
    assert isinstance(request, partial_pb2.MergePartialRequest) and len(request.SerializeToString()) < 64
