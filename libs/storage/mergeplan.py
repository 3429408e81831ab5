"""What a merge over a range reads from the profile index: the (series, block) rows it takes whole,
answered by the block's pre-merged trees of that series without a row per profile, and every profile of
the other rows, as `index.merge_rows` lists them (`merge_plan`). A querier weighs a merge by its plan
(`MergePlan.counts`, what `index.profile_counts` would count) and reads it from the same plan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from flamewatch.storage.index import EntryCounts, ProfileRows, range_params, unpack_rows
from flamewatch.storage.postgres import Database


@dataclass(frozen=True)
class WholeRows:
    """Index rows (one series' profiles in one block) that a merge takes whole, each lying in whole hours
    of its range in a block with pre-merged trees: the trees of that series in that block answer it,
    so its profiles' times and rows are never sent (a fleet's week is a million profiles, but only
    16,800 such rows)."""

    series_id: np.ndarray  # int64
    fingerprint: np.ndarray  # int64: the series' fingerprint, by which the block's trees name it
    block: np.ndarray  # int32, index into `blocks`
    count: np.ndarray  # int64: the series' profiles in the block
    first: np.ndarray  # int64 ns: the series' first and last profile times in the block
    last: np.ndarray
    blocks: np.ndarray  # str: block ids, sorted and distinct

    @classmethod
    def empty(cls) -> WholeRows:
        none = np.zeros(0, np.int64)
        return cls(none, none, np.zeros(0, np.int32), none, none, none, np.zeros(0, str))

    def __len__(self) -> int:
        return len(self.series_id)


@dataclass(frozen=True)
class MergePlan:
    """What a merge over a range reads: the index rows it takes whole from pre-merged trees, and every
    profile of the other rows, as `merge_rows` gives them."""

    whole: WholeRows
    rows: ProfileRows

    def within(self, start: int, end: int) -> MergePlan | None:
        """The plan of a piece [start, end] of its range, cut at whole hours; None when a whole row lies
        across a cut (a block longer than the piece's hours: its profiles were never listed)."""
        w = self.whole
        inside = (w.first >= start) & (w.last <= end)
        if ((w.first <= end) & (w.last >= start) & ~inside).any():
            return None
        kept = np.flatnonzero(inside)
        whole = WholeRows(w.series_id[kept], w.fingerprint[kept], w.block[kept], w.count[kept], w.first[kept],
                          w.last[kept], w.blocks)
        r = self.rows
        return MergePlan(whole, r.take(np.flatnonzero((r.time >= start) & (r.time <= end))))

    def counts(self) -> EntryCounts:
        """Per index row, its profiles in the range and their first and last times, as `profile_counts`
        gives them (in no set order): the whole rows as they are, the listed profiles counted per row."""
        r = self.rows
        order = np.lexsort((r.series_id, r.block))
        block, series, time = r.block[order], r.series_id[order], r.time[order]
        starts = np.flatnonzero(np.r_[True, (block[1:] != block[:-1]) | (series[1:] != series[:-1])]) \
            if len(order) else np.zeros(0, np.int64)
        w = self.whole
        return EntryCounts(
            np.concatenate([w.series_id, series[starts]]),
            np.concatenate([w.blocks[w.block], r.blocks[block[starts]]]).astype(str),
            np.concatenate([w.first, np.minimum.reduceat(time, starts) if len(starts) else starts]),
            np.concatenate([w.last, np.maximum.reduceat(time, starts) if len(starts) else starts]),
            np.concatenate([w.count, np.diff(np.r_[starts, len(time)]).astype(np.int64)]))


def merge_plan(db: Database, series_ids: Sequence[int], start: int, end: int, whole_span: tuple[int, int],
               tree_series: Sequence[int] | None = None) -> MergePlan:
    """`merge_rows`, except for the index rows in blocks with pre-merged trees whose every profile lies in
    `whole_span` (the whole hours of [start, end]), of `tree_series` only when given: those come as
    `WholeRows`, without a row per profile."""
    whole = "coalesce(b.trees, false) AND i.min_time >= %(lo)s AND i.max_time <= %(hi)s"
    params = {**range_params(series_ids, start, end), "lo": whole_span[0], "hi": whole_span[1]}
    if tree_series is not None:
        whole += " AND i.series_id = ANY(%(trees)s)"
        params["trees"] = list(tree_series)
    with db.connection() as conn:
        found = conn.execute(
            "SELECT i.series_id, i.block_id, s.fingerprint, i.profiles, w.whole,"
            " CASE WHEN w.whole THEN NULL ELSE i.times END, CASE WHEN w.whole THEN NULL ELSE i.rows END,"
            " i.min_time, i.max_time"
            " FROM index_series i JOIN series s ON s.id = i.series_id LEFT JOIN blocks b ON b.id = i.block_id"
            f" CROSS JOIN LATERAL (SELECT {whole} AS whole) w"
            " WHERE i.series_id = ANY(%(ids)s) AND i.max_time >= %(start)s AND i.min_time <= %(end)s",
            params, binary=True).fetchall()
    taken = [r for r in found if r[4]]
    columns = list(zip(*taken)) or [()] * 9
    blocks, block = np.unique(np.array(columns[1], str), return_inverse=True)
    rows = unpack_rows(sorted(((r[0], r[1], r[5], r[6]) for r in found if not r[4]), key=itemgetter(1, 0)))
    inside = (rows.time >= start) & (rows.time <= end)
    series, fingerprint, count, first, last = (np.array(columns[i], np.int64) for i in (0, 2, 3, 7, 8))
    return MergePlan(WholeRows(series, fingerprint, block.reshape(-1).astype(np.int32), count, first, last, blocks),
                     rows if inside.all() else rows.take(np.flatnonzero(inside)))
