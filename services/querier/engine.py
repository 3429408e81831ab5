"""Answer queries from the index and the blocks; plain functions that know nothing of HTTP or gRPC.

Merging follows DESIGN's query path: selector → series ids → profile rows grouped by block → blocks
fetched in parallel through the cache → per block, values summed per stack node with numpy → one call
tree keyed by function path. Gauges (in-use memory, goroutines) are averaged over time per series and
summed across series; everything else is summed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from flamewatch.config import QuerierConfig
from flamewatch.labels.selector import Query, parse_query, parse_selector
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.calltree import CallTree
from flamewatch.rpc.errors import NotFoundError
from flamewatch.storage import index
from flamewatch.storage.index import ProfileRows, Series
from flamewatch.storage.postgres import Database

log = logging.getLogger(__name__)

_ALL_TIME = (0, 2**63 - 1)


@dataclass(frozen=True, eq=False)
class Merged:
    profile_type: ProfileType
    tree: CallTree
    profiles: int


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
    def __init__(self, db: Database, blocks: BlockCache, config: QuerierConfig):
        self.db, self.blocks, self.config = db, blocks, config

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
        return sorted({name for s in self.series(tenant, selectors, start, end) for name in s.labels})

    def label_values(self, tenant: str, name: str, selectors: Sequence[str], start: int, end: int) -> list[str]:
        series = self.series(tenant, selectors, start, end)
        return sorted({s.labels[name] for s in series if name in s.labels})

    # ------------------------------------------------------------------------------------ totals

    def query_range(self, tenant: str, query: str, start: int, end: int, step: int,
                    group_by: Sequence[str]) -> Totals:
        ptype, series = self._select(tenant, query, start, end)
        return Totals(self._points(ptype, series, start, end, step, group_by), _absent_labels(series, group_by))

    def _points(self, ptype: ProfileType, series: list[Series], start: int, end: int, step: int,
                group_by: Sequence[str]) -> list[Points]:
        rows = index.profile_rows(self.db, [s.id for s in series], start, end)
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

    # ------------------------------------------------------------------------------------ merges

    def merge(self, tenant: str, query: str, start: int, end: int) -> Merged:
        ptype, series = self._select(tenant, query, start, end)
        rows = index.profile_rows(self.db, [s.id for s in series], start, end)
        return Merged(ptype, self._merge_rows(rows, _gauge_weights(rows) if ptype.is_gauge else None), len(rows))

    def nearest(self, tenant: str, query: str, time_ns: int) -> Merged:
        ptype, series = self._select(tenant, query, *_ALL_TIME)
        rows = index.nearest_profile(self.db, [s.id for s in series], time_ns)
        return Merged(ptype, self._merge_rows(rows, None), len(rows))

    def _select(self, tenant: str, query: str, start: int, end: int) -> tuple[ProfileType, list[Series]]:
        q = parse_query(query)
        ptype = self._known_type(tenant, q)
        return ptype, index.find_series(self.db, tenant, q.matchers, start, end, profile_type=ptype.id)

    def _known_type(self, tenant: str, q: Query) -> ProfileType:
        if q.profile_type is None:
            raise ValueError("the query names no profile type: write it before the selector, e.g. "
                             'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="demo"}')
        known = index.profile_types(self.db, tenant, *_ALL_TIME)
        if q.profile_type not in known:
            listing = ", ".join(known) if known else "none yet"
            raise NotFoundError(f'unknown profile type "{q.profile_type}"; stored types are: {listing}')
        return ProfileType.parse(q.profile_type)

    def _merge_rows(self, rows: ProfileRows, weights: np.ndarray | None) -> CallTree:
        keys = index.block_keys(self.db, sorted(set(rows.block_id.tolist())))
        return merge_blocks(self.blocks, keys, rows.block_id, rows.row, weights)


def merge_blocks(blocks: BlockCache, keys: Mapping[str, str], block_id: np.ndarray, row: np.ndarray,
                 weights: np.ndarray | None) -> CallTree:
    """The call tree of profiles stored in blocks: profile i is row `row[i]` of block `block_id[i]`,
    whose object key is `keys[block_id[i]]`, weighted by `weights[i]` (None: summed as they are)."""
    loaded = blocks.get_many(keys.values())
    merged = np.zeros(len(blocks.paths), np.int64 if weights is None else np.float64)
    order = np.argsort(block_id, kind="stable")
    starts = np.flatnonzero(np.r_[True, block_id[order][1:] != block_id[order][:-1]])
    for pick in np.split(order, starts[1:]) if len(order) else []:
        block = loaded[keys[block_id[pick[0]]]]
        nodes, values = block.reader.entries(row[pick], None if weights is None else weights[pick])
        np.add.at(merged, block.node_paths[nodes], values)
    return blocks.paths.tree(merged)


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
    """A warning per group_by label that none of the matching series has."""
    present = {name for s in series for name in s.labels}
    return [f'group_by: no matching series has the label "{name}", so it does not split them'
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
