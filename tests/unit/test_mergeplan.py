"""A merge plan cut to a piece of its range (`MergePlan.within`), as a split merge reads its own piece."""

import numpy as np

from flamewatch.storage.index import ProfileRows
from flamewatch.storage.mergeplan import MergePlan, WholeRows

H = 3600 * 10**9


def plan() -> MergePlan:
    # whole rows: series 1 in the hour blocks a (hour 0) and b (hour 1), series 2 in b
    whole = WholeRows(np.array([1, 1, 2]), np.array([11, 11, 22]), np.array([0, 1, 1], np.int32),
                      np.array([6, 6, 3]), np.array([0, H, H + 5]), np.array([H - 1, 2 * H - 1, 2 * H - 9]),
                      np.array(["a", "b"]))
    # listed profiles of series 3 (no trees), one in each of hours 0, 1, 2
    times = np.array([10, H + 10, 2 * H + 10])
    rows = ProfileRows.of(np.array([3, 3, 3]), times, np.array(["a", "b", "c"]), np.arange(3), np.ones(3, np.int64),
                          np.zeros(3, np.int64))
    return MergePlan(whole, rows)


def test_a_piece_keeps_the_whole_rows_inside_it_and_the_listed_profiles_in_its_range():
    piece = plan().within(H, 3 * H - 1)
    assert piece is not None
    assert piece.whole.series_id.tolist() == [1, 2]
    assert piece.whole.blocks[piece.whole.block].tolist() == ["b", "b"]
    assert piece.whole.count.tolist() == [6, 3]
    assert piece.rows.time.tolist() == [H + 10, 2 * H + 10]
    assert piece.rows.block_id.tolist() == ["b", "c"]


def test_the_pieces_of_a_range_count_what_the_plan_counts():
    whole_plan = plan()
    pieces = [whole_plan.within(0, H - 1), whole_plan.within(H, 3 * H - 1)]
    counted = [c for p in pieces for c in zip(p.counts().series_id.tolist(), p.counts().block_id.tolist(),
                                              p.counts().count.tolist())]
    everything = whole_plan.counts()
    assert sorted(counted) == sorted(zip(everything.series_id.tolist(), everything.block_id.tolist(),
                                         everything.count.tolist()))


def test_a_whole_row_across_a_cut_leaves_the_piece_to_be_planned_again():
    # a day block's whole row: its profiles were never listed, so a piece cutting it cannot be read from it
    day = WholeRows(np.array([1]), np.array([11]), np.array([0], np.int32), np.array([24]), np.array([0]),
                    np.array([24 * H - 1]), np.array(["day"]))
    empty = ProfileRows.of(*(np.zeros(0, np.int64),) * 2, np.zeros(0, str), *(np.zeros(0, np.int64),) * 3)
    assert MergePlan(day, empty).within(0, 12 * H - 1) is None
    assert MergePlan(day, empty).within(24 * H, 48 * H - 1).whole.series_id.tolist() == []
