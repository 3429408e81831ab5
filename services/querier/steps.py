"""A range cut into steps: which step each profile falls in, each step's value per group (sums, or the
time-weighted mean of gauges), the profile with the largest total per step (exemplars), and the answer as
one `Points` per group; the arithmetic behind `Querier.query_range`, vectorised over the index's rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flamewatch.storage.frames import row_codes
from flamewatch.storage.index import ProfileRows


@dataclass(frozen=True, eq=False)
class Exemplars:
    """Per point of a Points, the profile with the largest total in its step."""

    series_id: np.ndarray  # int64
    time: np.ndarray  # int64 ns, the profile's own time
    value: np.ndarray  # int64, the profile's total
    labels: list[dict[str, str]]  # of each profile's series


@dataclass(frozen=True, eq=False)
class Points:
    labels: dict[str, str]
    timestamps: np.ndarray  # int64 ns, start of each step
    values: np.ndarray  # float64
    exemplars: Exemplars | None = None  # only when asked for, and only from the index


# A range may span all of int64 (from 1677 to 2262), so time - start does not fit in int64: it is taken
# modulo 2**64 in uint64, exact because time >= start; the bucket starts are mapped back the same way.
def buckets(times: np.ndarray, start: int, step: int) -> np.ndarray:
    """The step each time falls in, counted from `start` (every time is at or after it)."""
    offset = times.view(np.uint64) - np.uint64(start % 2**64)
    return (offset // np.uint64(step)).astype(np.int64)


def bucket_starts(buckets: np.ndarray, start: int, step: int) -> np.ndarray:
    return (buckets.astype(np.uint64) * np.uint64(step) + np.uint64(start % 2**64)).view(np.int64)


def bucket_totals(rows: ProfileRows, group: np.ndarray, bucket: np.ndarray, n_groups: int, gauge: bool,
                   average: bool = False):
    """Per group, the steps that have data and their value: sums, or for gauges the per-series
    mean within the step summed across series, or with `average` the mean over the step's profiles."""
    values = rows.total.astype(np.float64)
    if gauge:
        code, first = row_codes([group, bucket, rows.series_id])
        values = np.bincount(code, weights=values) / np.bincount(code)
        group, bucket = group[first], bucket[first]
    code, first = row_codes([group, bucket])
    sums = np.bincount(code, weights=values, minlength=len(first))
    if average:
        sums = sums / np.maximum(np.bincount(code, minlength=len(first)), 1)
    groups, buckets = group[first], bucket[first]  # ascending by group, then step
    bounds = np.searchsorted(groups, np.arange(n_groups + 1))
    return [(buckets[lo:hi], sums[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]


def largest_per_step(rows: ProfileRows, group: np.ndarray, bucket: np.ndarray,
                      n_groups: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per group, per step with data (in the order of `bucket_totals`), the series id, time and total
    of the profile with the largest total."""
    if not len(group):
        return [(np.zeros(0, np.int64),) * 3 for _ in range(n_groups)]
    inverse, first_rows = row_codes([group, bucket])
    uniq = np.stack([group, bucket], axis=1)[first_rows]
    order = np.lexsort((rows.time, -rows.total, inverse))  # largest first; ties to the earliest
    first = order[np.r_[True, inverse[order][1:] != inverse[order][:-1]]]
    picks = [first[uniq[:, 0] == g] for g in range(n_groups)]
    return [(rows.series_id[p], rows.time[p], rows.total[p]) for p in picks]


def step_gauge_weights(rows: ProfileRows, bucket: np.ndarray) -> np.ndarray:
    """Average over time within each step of each series: 1 / (profiles of the series in the step)."""
    if not len(rows):
        return np.zeros(0, np.float64)
    code, _ = row_codes([rows.series_id, bucket])
    return 1.0 / np.bincount(code)[code]


def grouped_points(names: Sequence[str], columns: Sequence[np.ndarray], bucket: np.ndarray, values: np.ndarray,
                    start: int, step: int, group_by: Sequence[str]) -> list[Points]:
    """Sums per (label values, step), one Points per distinct label values, labels in `group_by` order."""
    tables, codes = [], []
    for column in columns:
        table, code = np.unique(np.asarray(column, object).astype(str), return_inverse=True)
        tables.append(table)
        codes.append(code.reshape(-1))
    if not len(bucket):
        return []
    inverse, first = row_codes([*codes, bucket])
    unique = np.stack([*codes, bucket], axis=1).astype(np.int64)[first]
    sums = np.bincount(inverse, weights=values.astype(np.float64), minlength=len(unique))
    starts = np.flatnonzero(np.r_[True, (unique[1:, :-1] != unique[:-1, :-1]).any(axis=1)])
    points = []
    for lo, hi in zip(starts, np.append(starts[1:], len(unique))):  # one step per output series
        labels = {name: str(tables[i][unique[lo, i]]) for i, name in enumerate(names)}
        points.append(Points({k: labels[k] for k in group_by}, bucket_starts(unique[lo:hi, -1], start, step),
                             sums[lo:hi]))
    return sorted(points, key=lambda p: sorted(p.labels.items()))
