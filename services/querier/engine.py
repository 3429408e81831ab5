"""Answer queries from the index and the blocks; plain functions that know nothing of HTTP or gRPC.

Merging follows DESIGN's query path: selector → series ids → profile rows grouped by block → blocks
fetched in parallel through the cache → per block, values summed per stack node with numpy → one call
tree keyed by function path. Gauges (in-use memory, goroutines) are averaged over time per series and
summed across series; everything else is summed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flamewatch.config import QuerierConfig
from flamewatch.labels.selector import Query, parse_query, parse_selector
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier import selection
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.calltree import CallTree
from flamewatch.querier.formats.pprof import render_pprof
from flamewatch.querier.merging import (
    Rows,
    gather_rows,
    merge_blocks,
    rows_with_samples,
    sample_values,
    used_sample_labels,
)
from flamewatch.querier.selection import Selection
from flamewatch.querier.symbolization import Symbolization
from flamewatch.rpc.errors import NotFoundError
from flamewatch.storage import index
from flamewatch.storage.index import ProfileRows, Series
from flamewatch.storage.postgres import Database

log = logging.getLogger(__name__)

_ALL_TIME = (0, 2**63 - 1)


@dataclass(frozen=True, eq=False)
class Merged:
    profile_type: ProfileType
    tree: CallTree | None  # None when rendered straight from the blocks (pprof)
    profiles: int
    warnings: tuple[str, ...] = ()  # why the answer is partial, e.g. the symbolizer was unavailable

    @property
    def partial(self) -> bool:
        return bool(self.warnings)


@dataclass(frozen=True, eq=False)
class Points:
    labels: dict[str, str]
    timestamps: np.ndarray  # int64 ns, start of each step
    values: np.ndarray  # float64


@dataclass(frozen=True, eq=False)
class Totals:
    series: list[Points]
    warnings: list[str]  # what the answer may hide, e.g. a group_by label no series has


class Querier:
    def __init__(self, db: Database, blocks: BlockCache, config: QuerierConfig,
                 symbolization: Symbolization | None = None):
        self.db, self.blocks, self.config = db, blocks, config
        self.symbolization = symbolization  # None: frames stored as addresses stay addresses

    # ------------------------------------------------------------------------------------ labels

    def profile_types(self, tenant: str, start: int, end: int) -> list[ProfileType]:
        return _parsed_types(index.profile_types(self.db, tenant, start, end))

    def series(self, tenant: str, selectors: Sequence[str], start: int, end: int) -> list[Series]:
        matcher_sets = [parse_selector(s) for s in selectors] or [()]
        found: dict[int, Series] = {}
        for matchers in matcher_sets:
            for s in index.find_series(self.db, tenant, matchers, start, end):
                found[s.id] = s
        return [found[i] for i in sorted(found)]

    def label_names(self, tenant: str, selectors: Sequence[str], start: int, end: int) -> list[str]:
        """Series label names and the sample label names of the matching series' profiles in range.

        Sample labels come from the blocks holding those profiles (read through the cache), so this
        costs what a merge of the same selection over the range costs."""
        names: set[str] = set()
        for sel, rows in self._label_selections(tenant, selectors, start, end):
            names.update(name for s in sel.series for name in s.labels)
            names.update(used_sample_labels(self.blocks, rows, None))
        return sorted(names)

    def label_values(self, tenant: str, name: str, selectors: Sequence[str], start: int, end: int) -> list[str]:
        """Values of `name` among the matching series' labels and their profiles' sample labels."""
        values: set[str] = set()
        for sel, rows in self._label_selections(tenant, selectors, start, end):
            values.update(s.labels[name] for s in sel.series if name in s.labels)
            values.update(used_sample_labels(self.blocks, rows, name))
        return sorted(values)

    def _label_selections(self, tenant: str, selectors: Sequence[str], start: int,
                          end: int) -> list[tuple[Selection, Rows]]:
        """Per selector, the series it selects and their rows in range. A series whose own labels leave
        matchers for its samples counts only if some sample passes them."""
        out = []
        for matchers in [parse_selector(s) for s in selectors] or [()]:
            candidates = index.find_series(self.db, tenant, selection.index_matchers(matchers), start, end)
            sel = selection.split(candidates, matchers, None)
            rows = index.profile_rows(self.db, [s.id for s in sel.series], start, end)
            r = self._rows(rows, sel, None)
            if sel.by_samples:
                kept = set(rows.series_id[rows_with_samples(self.blocks, r)].tolist())
                sel = Selection(None, [s for s in sel.series if sel.series_filter[s.id] == 0 or s.id in kept],
                                sel.filters, sel.series_filter)
            out.append((sel, r))
        return out

    def _rows(self, rows: ProfileRows, sel: Selection, weights: np.ndarray | None) -> Rows:
        keys = index.block_keys(self.db, sorted(set(rows.block_id.tolist())))
        return Rows(keys, rows.block_id, rows.row, weights, sel.filters, sel.row_filters(rows))

    # ------------------------------------------------------------------------------------ totals

    def query_range(self, tenant: str, query: str, start: int, end: int, step: int,
                    group_by: Sequence[str]) -> Totals:
        sel = self._select(tenant, query, start, end)
        present = {name for s in sel.series for name in s.labels}
        by_sample = [g for g in group_by if g not in present]
        if sel.by_samples or (by_sample and sel.series):
            points = self._sample_points(sel, start, end, step, group_by, by_sample)
            seen = {name for p in points for name in by_sample if p.labels[name]}
            return Totals(points, _absent_labels(sel.series, [g for g in group_by if g not in seen]))
        return Totals(self._points(sel.profile_type, sel.series, start, end, step, group_by),
                      _absent_labels(sel.series, group_by))

    def _points(self, ptype: ProfileType, series: list[Series], start: int, end: int, step: int,
                group_by: Sequence[str]) -> list[Points]:
        rows = index.profile_totals(self.db, [s.id for s in series], start, end)
        labels_of = {s.id: {k: s.labels.get(k, "") for k in group_by} for s in series}
        groups = sorted({tuple(sorted(v.items())) for v in labels_of.values()})
        group_index = {g: i for i, g in enumerate(groups)}
        series_ids = np.array(sorted(labels_of), np.int64)
        series_group = np.array([group_index[tuple(sorted(labels_of[i].items()))] for i in series_ids.tolist()],
                                np.int64)
        row_group = series_group[np.searchsorted(series_ids, rows.series_id)]
        bucket = _buckets(rows.time, start, step)
        return [Points(dict(g), _bucket_starts(b, start, step), v)
                for g, (b, v) in zip(groups, _bucket_totals(rows, row_group, bucket, len(groups), ptype.is_gauge))]

    def _sample_points(self, sel: Selection, start: int, end: int, step: int, group_by: Sequence[str],
                       by_sample: Sequence[str]) -> list[Points]:
        """Totals read from the blocks: some samples are filtered out, or groups split by sample labels."""
        rows = index.profile_rows(self.db, [s.id for s in sel.series], start, end)
        bucket = _buckets(rows.time, start, step)
        weights = _step_gauge_weights(rows, bucket) if sel.profile_type.is_gauge else None
        owner, sample_labels, values = sample_values(self.blocks, self._rows(rows, sel, weights), by_sample)
        by_series = [g for g in group_by if g not in by_sample]
        ids = np.array([s.id for s in sel.series], np.int64)
        order = np.argsort(ids)
        table = np.array([[s.labels.get(g, "") for g in by_series] for s in sel.series], object) \
            .reshape(len(ids), len(by_series))
        row_series = order[np.searchsorted(ids[order], rows.series_id)][owner]
        columns = [table[row_series, j] for j in range(len(by_series))] + list(sample_labels)
        names = list(by_series) + list(by_sample)
        return _grouped_points(names, columns, bucket[owner], values, start, step, group_by)

    # ------------------------------------------------------------------------------------ merges

    def merge(self, tenant: str, query: str, start: int, end: int, granularity: str = "functions") -> Merged:
        sel = self._select(tenant, query, start, end)
        rows = index.profile_rows(self.db, [s.id for s in sel.series], start, end)
        weights = _gauge_weights(rows) if sel.profile_type.is_gauge else None
        return self._merged(rows, sel, weights, granularity)

    def nearest(self, tenant: str, query: str, time_ns: int, granularity: str = "functions") -> Merged:
        sel = self._select(tenant, query, *_ALL_TIME)
        rows = index.nearest_profile(self.db, [s.id for s in sel.series], time_ns)
        return self._merged(rows, sel, None, granularity)

    def pprof(self, tenant: str, query: str, start: int, end: int, time_ns: int | None) -> tuple[Merged, bytes]:
        """The merge (or the profile nearest `time_ns`) as pprof, with everything the profiles stored."""
        if time_ns is not None:
            sel = self._select(tenant, query, *_ALL_TIME)
            rows = index.nearest_profile(self.db, [s.id for s in sel.series], time_ns)
        else:
            sel = self._select(tenant, query, start, end)
            rows = index.profile_rows(self.db, [s.id for s in sel.series], start, end)
        weights = _gauge_weights(rows) if sel.profile_type.is_gauge and time_ns is None else None
        gathered, header = gather_rows(self.blocks, self._rows(rows, sel, weights))
        body = render_pprof(gathered, sel.profile_type, header)
        return Merged(sel.profile_type, None, len(rows)), body

    def _select(self, tenant: str, query: str, start: int, end: int) -> Selection:
        q = parse_query(query)
        ptype = self._known_type(tenant, q)
        candidates = index.find_series(self.db, tenant, selection.index_matchers(q.matchers), start, end,
                                       profile_type=ptype.id)
        return selection.split(candidates, q.matchers, ptype)

    def _known_type(self, tenant: str, q: Query) -> ProfileType:
        if q.profile_type is None:
            raise ValueError("the query names no profile type: write it before the selector, e.g. "
                             'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="demo"}')
        known = index.profile_types(self.db, tenant, *_ALL_TIME)
        if q.profile_type not in known:
            listing = ", ".join(known) if known else "none yet"
            raise NotFoundError(f'unknown profile type "{q.profile_type}"; stored types are: {listing}')
        return ProfileType.parse(q.profile_type)

    def _merged(self, rows: ProfileRows, sel: Selection, weights: np.ndarray | None, granularity: str) -> Merged:
        r = self._rows(rows, sel, weights)
        symbols = self.symbolization.for_query() if self.symbolization is not None else None
        tree = merge_blocks(self.blocks, r.keys, r.block_id, r.row, r.weights, r.filters, r.row_filter, granularity,
                            symbols)
        return Merged(sel.profile_type, tree, len(rows), tuple(symbols.state.warnings) if symbols else ())


# A range may span all of int64 (from 1677 to 2262), so time - start does not fit in int64: it is taken
# modulo 2**64 in uint64, exact because time >= start; the bucket starts are mapped back the same way.
def _buckets(times: np.ndarray, start: int, step: int) -> np.ndarray:
    """The step each time falls in, counted from `start` (every time is at or after it)."""
    offset = times.view(np.uint64) - np.uint64(start % 2**64)
    return (offset // np.uint64(step)).astype(np.int64)


def _bucket_starts(buckets: np.ndarray, start: int, step: int) -> np.ndarray:
    return (buckets.astype(np.uint64) * np.uint64(step) + np.uint64(start % 2**64)).view(np.int64)


_logged_bad_types: set[str] = set()


def _parsed_types(ids: Sequence[str]) -> list[ProfileType]:
    """The stored profile types that parse. A bad one (stored before names were checked at ingest)
    is skipped, and logged once per process, so it cannot break listing the rest."""
    parsed = []
    for text in ids:
        try:
            parsed.append(ProfileType.parse(text))
        except ValueError as exc:
            if text not in _logged_bad_types:
                _logged_bad_types.add(text)
                log.warning("skipping a stored profile type that cannot be parsed: %s", exc)
    return parsed


def _absent_labels(series: list[Series], group_by: Sequence[str]) -> list[str]:
    """A warning per group_by label that none of the matching series has, nor their samples (the
    caller leaves out names found in samples)."""
    present = {name for s in series for name in s.labels}
    return [f'group_by: no matching series or sample has the label "{name}", so it does not split them'
            for name in group_by if series and name not in present]


def _gauge_weights(rows: ProfileRows) -> np.ndarray:
    """Average over time within each series: each profile weighs 1 / (profiles of its series)."""
    _, inverse, counts = np.unique(rows.series_id, return_inverse=True, return_counts=True)
    return 1.0 / counts[inverse]


def _bucket_totals(rows: ProfileRows, group: np.ndarray, bucket: np.ndarray, n_groups: int, gauge: bool):
    """Per group, the steps that have data and their value: sums, or for gauges the per-series
    mean within the step summed across series."""
    values = rows.total.astype(np.float64)
    if gauge:
        keys = np.stack([group, bucket, rows.series_id], axis=1)
        uniq, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
        values = np.bincount(inverse.reshape(-1), weights=values) / counts
        group, bucket = uniq[:, 0], uniq[:, 1]
    keys = np.stack([group, bucket], axis=1)
    # No rows: an empty int index, since bincount refuses the float array np.asarray([]) would be.
    uniq, inverse = (np.unique(keys, axis=0, return_inverse=True) if len(keys)
                     else (np.zeros((0, 2), np.int64), np.zeros(0, np.int64)))
    sums = np.bincount(np.asarray(inverse).reshape(-1), weights=values, minlength=len(uniq))
    return [(uniq[uniq[:, 0] == g, 1], sums[uniq[:, 0] == g]) for g in range(n_groups)]


def _step_gauge_weights(rows: ProfileRows, bucket: np.ndarray) -> np.ndarray:
    """Average over time within each step of each series: 1 / (profiles of the series in the step)."""
    keys = np.stack([rows.series_id, bucket], axis=1)
    if not len(keys):
        return np.zeros(0, np.float64)
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    return 1.0 / counts[inverse.reshape(-1)]


def _grouped_points(names: Sequence[str], columns: Sequence[np.ndarray], bucket: np.ndarray, values: np.ndarray,
                    start: int, step: int, group_by: Sequence[str]) -> list[Points]:
    """Sums per (label values, step), one Points per distinct label values, labels in `group_by` order."""
    tables, codes = [], []
    for column in columns:
        table, code = np.unique(np.asarray(column, object).astype(str), return_inverse=True)
        tables.append(table)
        codes.append(code.reshape(-1))
    keys = np.stack([*codes, bucket], axis=1).astype(np.int64)
    if not len(keys):
        return []
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=values.astype(np.float64), minlength=len(unique))
    starts = np.flatnonzero(np.r_[True, (unique[1:, :-1] != unique[:-1, :-1]).any(axis=1)])
    points = []
    for lo, hi in zip(starts, np.append(starts[1:], len(unique))):  # one step per output series
        labels = {name: str(tables[i][unique[lo, i]]) for i, name in enumerate(names)}
        points.append(Points({k: labels[k] for k in group_by}, _bucket_starts(unique[lo:hi, -1], start, step),
                             sums[lo:hi]))
    return sorted(points, key=lambda p: sorted(p.labels.items()))
