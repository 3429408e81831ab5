"""The heatmap of individual profiles that Pyroscope's `SelectHeatmap` answers (Grafana's Profiles
Drilldown draws it): over a range cut in time slots of `step`, how many profiles, or spans of profiles, had
a value in each of 20 value buckets, with the largest value of each bucket as its exemplar. Plain numpy
over what the engine reads (`Querier.profile_values`): a profile's value is its total, from the index, or
the total of the samples its filter keeps, from the blocks; a span's value is the total of the samples of
one profile that carry its id (`span_id`, or `profile_id` from older clients, as span merges read them).

Pyroscope's rules (`pkg/model/heatmap/range.go`, `top.go` and its v2 query frontend), kept here:
- Times are milliseconds. The frontend reads from one step before `start` to `end`; each slot is stamped
  with its right edge `start - step + k·step` and holds the times in (edge - step, edge].
- The value buckets are the same for every series and slot: 20 of equal width from the smallest value to
  the largest (the smallest + 1 when all are equal), edges truncated to integers. A value on an edge is in
  the bucket above it and the largest in the last. When the values span fewer than 20 units several edges
  are equal, and a value goes to the last bucket of its edge (Drilldown adds up buckets of equal edges).
- One series per distinct values of the `group_by` labels (those a series lacks are left out), in the
  order of their labels; with a `limit` below their number, the `limit` with the most counts, most first.
- Only slots where something was counted are sent. With exemplars, each bucket that counts something
  names its largest value (the earliest of equal ones) with its series' labels less the group_by ones. A
  span's exemplar also carries its samples' `trace_id` and, as a label, their `span_name`: Pyroscope's
  ingest makes pprof labels series labels, so its exemplars have them; ours stay on the samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flamewatch.storage.frames import row_codes, sums_by
from flamewatch.storage.index import ProfileRows, Series

Y_BUCKETS = 20  # Pyroscope's DefaultYAxisBuckets
NS_PER_MS = 10**6

SPAN_ID, LEGACY_SPAN_ID, TRACE_ID, SPAN_NAME = "span_id", "profile_id", "trace_id", "span_name"
# The sample labels a span heatmap reads; the legacy id counts only where `span_id` is absent.
SPAN_LABELS = (SPAN_ID, LEGACY_SPAN_ID, TRACE_ID, SPAN_NAME)


@dataclass(frozen=True, eq=False)
class Samples:
    """The kept samples of profile rows, one entry per stack and label set: its row (an index into the
    rows), its value, and the value of each sample label asked for ("" where absent)."""

    row: np.ndarray  # int64
    value: np.ndarray  # int64
    labels: dict[str, np.ndarray]  # name -> str per entry


@dataclass(frozen=True, eq=False)
class ProfileValues:
    """What the engine reads for a heatmap: the selected series, their profiles in range with each one's
    own total and, when some samples are filtered out or sample labels are asked for, their kept samples."""

    series: list[Series]
    rows: ProfileRows
    samples: Samples | None = None
    filtered: np.ndarray | None = None  # bool per row: its filter keeps only some samples


@dataclass(frozen=True, eq=False)
class Points:
    """What a heatmap counts: one value per profile, or per span of a profile (span columns set)."""

    series_id: np.ndarray  # int64
    time: np.ndarray  # int64 ns, the profile's
    value: np.ndarray  # int64
    span_id: np.ndarray | None = None  # str
    trace_id: np.ndarray | None = None  # str
    span_name: np.ndarray | None = None  # str


@dataclass(frozen=True)
class Exemplar:
    series_id: int
    time_ns: int  # the profile's
    value: int
    labels: dict[str, str]
    span_id: str = ""  # "" for a whole profile
    trace_id: str = ""


@dataclass(frozen=True)
class Slot:
    timestamp_ms: int  # its right edge
    counts: list[int]  # per value bucket
    exemplars: list[Exemplar]  # by bucket; empty unless asked for


@dataclass(frozen=True)
class HeatmapSeries:
    labels: dict[str, str]
    slots: list[Slot]  # by time


@dataclass(frozen=True)
class Heatmap:
    y_min: list[float]  # the value buckets' lower edges, the same in every slot
    series: list[HeatmapSeries]


@dataclass(frozen=True)
class Range:
    """The slots of a heatmap, in milliseconds: the first is stamped `start - step`, the last `end` rounded
    up to a whole step from it."""

    start_ms: int
    end_ms: int
    step_ms: int

    @property
    def read_from_ns(self) -> int:
        """Where the profiles to read start (one step before `start`, as Pyroscope reads)."""
        return (self.start_ms - self.step_ms) * NS_PER_MS

    @property
    def read_until_ns(self) -> int:
        """Where they end: the whole last millisecond, as Pyroscope counts time in milliseconds."""
        return (self.end_ms + 1) * NS_PER_MS - 1

    def slots(self, times_ns: np.ndarray) -> np.ndarray:
        """The index of the slot each time is in: slot k holds (first + (k-1)·step, first + k·step]; a
        time before the first slot is in it and one after the last in the last, as Pyroscope clamps."""
        first = self.start_ms - self.step_ms
        last = -((first - self.end_ms) // self.step_ms)  # ceil((end - first) / step)
        return np.clip(-((first - times_ns // NS_PER_MS) // self.step_ms), 0, last)

    def edge(self, slot: int) -> int:
        return self.start_ms - self.step_ms + slot * self.step_ms


def individual(found: ProfileValues) -> Points:
    """One value per profile: its total or, when its filter keeps only some samples, theirs (a profile
    none of whose samples is kept is not selected)."""
    rows, samples = found.rows, found.samples
    if samples is None:
        return Points(rows.series_id, rows.time, rows.total)
    totals = np.zeros(len(rows), np.int64)
    np.add.at(totals, samples.row, samples.value)
    some = np.bincount(samples.row, minlength=len(rows)) > 0
    keep = np.flatnonzero(some | ~found.filtered) if found.filtered is not None else np.flatnonzero(some)
    return Points(rows.series_id[keep], rows.time[keep], totals[keep])


def spans(found: ProfileValues) -> Points:
    """One value per span of a profile (and trace, when samples name one): the total of its kept samples.
    Samples without a span id are not counted."""
    rows, samples = found.rows, found.samples
    assert samples is not None, "a span heatmap reads the samples' span labels"
    labels = {name: samples.labels[name].astype(str) for name in SPAN_LABELS}
    span = np.where(labels[SPAN_ID] != "", labels[SPAN_ID], labels[LEGACY_SPAN_ID])
    kept = np.flatnonzero(span != "")
    codes = [np.unique(column[kept], return_inverse=True)[1].reshape(-1) for column in (span, labels[TRACE_ID])]
    first, sums = sums_by([samples.row[kept], *codes], samples.value[kept])
    entry = kept[first]
    row = samples.row[entry]
    return Points(rows.series_id[row], rows.time[row], sums, span[entry], labels[TRACE_ID][entry],
                  labels[SPAN_NAME][entry])


def value_edges(low: int, high: int) -> np.ndarray:
    """The 21 edges of the value buckets: 20 lower edges from `low` in steps of a twentieth of the span,
    truncated to integers (as Pyroscope computes them in float64), then `high`."""
    high = high if high > low else low + 1
    width = float(high - low) / Y_BUCKETS
    return np.append(low + (np.arange(Y_BUCKETS) * width).astype(np.int64), high)


def value_buckets(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bucket of each value: the last whose lower edge it reaches (edges may repeat)."""
    return np.searchsorted(edges[1:Y_BUCKETS], values, side="right")


def build(points: Points, series: Sequence[Series], span: Range, group_by: Sequence[str], exemplars: bool,
          limit: int | None = None) -> Heatmap:
    """The heatmap of the points (of `series`) over the range, one series per group (module docstring)."""
    if not len(points.value):
        return Heatmap([], [])
    edges = value_edges(int(points.value.min()), int(points.value.max()))
    bucket = value_buckets(points.value, edges)
    group, groups = _groups(points.series_id, series, group_by)
    slot = span.slots(points.time)
    cell_of, firsts = row_codes([group, slot])  # per point, its (group, slot); those ascending
    cell = cell_of * Y_BUCKETS + bucket
    counts = np.bincount(cell, minlength=len(firsts) * Y_BUCKETS).reshape(len(firsts), Y_BUCKETS)
    best = _largest(points, cell, counts.size) if exemplars else np.zeros(0, np.int64)
    picks = np.searchsorted(cell_of[best], np.arange(len(firsts) + 1))  # each cell's exemplars in `best`
    labels = {s.id: {k: v for k, v in s.labels.items() if k not in group_by} for s in series}
    slots = [Slot(span.edge(int(slot[at])), counts[i].tolist(),
                  [_exemplar(points, p, labels) for p in best[picks[i]:picks[i + 1]].tolist()])
             for i, at in enumerate(firsts.tolist())]
    bounds = np.searchsorted(group[firsts], np.arange(len(groups) + 1)).tolist()
    out = [HeatmapSeries(dict(labels_of), slots[lo:hi])
           for labels_of, lo, hi in zip(groups, bounds[:-1], bounds[1:], strict=True) if hi > lo]
    return Heatmap(edges[:Y_BUCKETS].astype(np.float64).tolist(), _top(out, limit))


def _groups(series_id: np.ndarray, series: Sequence[Series], group_by: Sequence[str]
            ) -> tuple[np.ndarray, list[tuple[tuple[str, str], ...]]]:
    """The group of each point, and each group's labels (sorted pairs), groups in the order of their labels
    (a group whose series have no points in range has none, and is left out by `build`)."""
    key_of = {s.id: tuple(sorted((k, s.labels[k]) for k in set(group_by) if k in s.labels)) for s in series}
    groups = sorted(set(key_of.values()))
    index = {g: i for i, g in enumerate(groups)}
    ids = np.array(sorted(key_of), np.int64)
    group_of = np.array([index[key_of[i]] for i in ids.tolist()], np.int64)
    return group_of[np.searchsorted(ids, series_id)], groups


def _largest(points: Points, cell: np.ndarray, cells: int) -> np.ndarray:
    """Per cell with points, ascending, the point with the largest value; the earliest of equal ones. Only
    the points that equal their cell's largest are sorted."""
    top = np.full(cells, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(top, cell, points.value)
    tied = np.flatnonzero(points.value == top[cell])
    order = tied[np.lexsort((points.series_id[tied], points.time[tied], cell[tied]))]
    sorted_cells = cell[order]
    return order[np.r_[True, sorted_cells[1:] != sorted_cells[:-1]]]


def _exemplar(points: Points, i: int, labels: dict[int, dict[str, str]]) -> Exemplar:
    series_id = int(points.series_id[i])
    if points.span_id is None:
        return Exemplar(series_id, int(points.time[i]), int(points.value[i]), labels[series_id])
    name = str(points.span_name[i]) if points.span_name is not None else ""
    own = {**labels[series_id], SPAN_NAME: name} if name else labels[series_id]
    return Exemplar(series_id, int(points.time[i]), int(points.value[i]), own, str(points.span_id[i]),
                    str(points.trace_id[i]) if points.trace_id is not None else "")


def _top(series: list[HeatmapSeries], limit: int | None) -> list[HeatmapSeries]:
    """Pyroscope's TopSeries: with a limit below the number of series, those with the most counts, most
    first (ties by labels); otherwise all, as they are."""
    if not limit or limit >= len(series):
        return series
    ranked = sorted(series, key=lambda s: (-sum(sum(slot.counts) for slot in s.slots), sorted(s.labels.items())))
    return ranked[:limit]
