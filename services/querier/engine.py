"""Answer queries from the index and the blocks; plain functions that know nothing of HTTP or gRPC.

Merging follows DESIGN's query path: selector → series ids → profile rows grouped by block → blocks
fetched in parallel through the cache → per block, values summed per stack node with numpy → one call
tree keyed by function path. The rows go to tree sources (`sources`): a series' hours that a merge
takes whole, in blocks compacted with pre-merged trees, to those trees (`premerged`; a series' whole
row of a block in whole hours is never even listed per profile, `mergeplan.merge_plan`), the other rows to
the blocks' profiles; one function combines their partial trees, and every read of blocks is first
held to the tenant's cost limit (`cost`). Gauges (in-use memory, goroutines) are averaged over time
per series and summed across series; everything else is summed.
A read takes its tenant or the several X-Scope-OrgID `a|b` names (`Tenants`): one query over the union of
their series, as only the index, the cost limit and symbolization look at tenants (README: several tenants).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flamewatch.changes.stats import Changes, Settings, compare
from flamewatch.labels.selector import Query, parse_query, parse_selector
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier import cost, deadline, fanout, selection, steps
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.calltree import CallTree
from flamewatch.querier.changes import function_shares
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.cost import QueryCost
from flamewatch.querier.fanout import Peers, Piece
from flamewatch.querier.formats.pprof import render_pprof
from flamewatch.querier.gauges import (
    divisors_of,
    filled,
    gauge_divisors,
    gauge_weights,
    series_divisors,
    series_profiles,
)
from flamewatch.querier.heatmap import ProfileValues, Samples
from flamewatch.querier.merging import (
    Rows,
    merge_blocks,  # noqa: F401  (the merge of blocks as tools and tests call it, without an index)
    rows_with_samples,
    sample_values,
    used_sample_labels,
)
from flamewatch.querier.premerged import PreMergedTrees, whole_hours, whole_span
from flamewatch.querier.selection import Selection
from flamewatch.querier.sources import LocalBlocks, PartialTree, TreeSource, combine
from flamewatch.querier.symbolization import QuerySymbols, Symbolization
from flamewatch.rpc.disconnect import caller_gone
from flamewatch.rpc.errors import NotFoundError
from flamewatch.rpc.tenant import Tenants
from flamewatch.storage import index, mergeplan
from flamewatch.storage.index import ProfileRows, Series
from flamewatch.storage.postgres import Database

log = logging.getLogger(__name__)

_ALL_TIME = (0, 2**63 - 1)
DEFAULT_SETTINGS = Settings()


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
class Totals:
    series: list[steps.Points]
    warnings: list[str]  # what the answer may hide, e.g. a group_by label no series has


def _joined(a: Rows, b: Rows) -> Rows:
    """Two sides' rows as one, each row keeping its own side's filter."""
    filter_a = np.zeros(len(a.row), np.int64) if a.row_filter is None else a.row_filter
    filter_b = np.zeros(len(b.row), np.int64) if b.row_filter is None else b.row_filter
    # blocks are codes into each side's own index rows (`_rows`): b's follow a's
    shift = max(int(a.block_id.max(initial=-1)), max(a.keys, default=-1)) + 1
    return Rows({**a.keys, **{code + shift: key for code, key in b.keys.items()}},
                np.concatenate([a.block_id, b.block_id + shift]), np.concatenate([a.row, b.row]),
                None, (*a.filters, *b.filters), np.concatenate([filter_a, filter_b + len(a.filters)]))


def _bounded(method):
    """Run an engine call within `--query.timeout`, and until its HTTP caller goes away (see `deadline`)."""
    @functools.wraps(method)
    def run(self: Querier, *args, **kwargs):
        with deadline.bounded(self.config.query_timeout_s, caller_gone()):
            return method(self, *args, **kwargs)
    return run


class Querier:
    def __init__(self, db: Database, blocks: BlockCache, config: QuerierConfig,
                 symbolization: Symbolization | None = None):
        self.db, self.blocks, self.config = deadline.TimedDatabase(db), blocks, config
        self.source: TreeSource = LocalBlocks(blocks)  # where merges read their partial trees
        self.trees: TreeSource | None = PreMergedTrees(blocks)  # where they read whole hours (None: never)
        self.symbolization = symbolization  # None: frames stored as addresses stay addresses
        self.peers: Peers | None = None  # other queriers that take shares of long merges (`fanout`)

    # ------------------------------------------------------------------------------------ labels

    @_bounded
    def profile_types(self, tenant: Tenants, start: int, end: int) -> list[ProfileType]:
        return _parsed_types(index.profile_types(self.db, tenant, start, end))

    @_bounded
    def tenant_series(self, tenants: Sequence[str] | None = None) -> dict[str, int]:
        """Series per tenant with data, of `tenants` or of all."""
        return index.tenant_series(self.db, tenants)

    @_bounded
    def series(self, tenant: Tenants, selectors: Sequence[str], start: int, end: int) -> list[Series]:
        matcher_sets = self._selectors(selectors)
        found: dict[int, Series] = {}
        for matchers in matcher_sets:
            for s in index.find_series(self.db, tenant, matchers, start, end):
                found[s.id] = s
        unique: dict[tuple, Series] = {}  # a label set several tenants have is one, as Pyroscope's answer has it
        for i in sorted(found):
            unique.setdefault(tuple(sorted(found[i].labels.items())), found[i])
        return list(unique.values())

    @_bounded
    def label_names(self, tenant: Tenants, selectors: Sequence[str], start: int, end: int) -> list[str]:
        """Series label names and the sample label names of the matching series' profiles in range.

        Sample labels come from the blocks holding those profiles (read through the cache), so this
        costs what a merge of the same selection over the range costs."""
        names: set[str] = set()
        for sel, rows in self._label_selections(tenant, selectors, start, end):
            names.update(name for s in sel.series for name in s.labels)
            names.update(used_sample_labels(self.blocks, rows, None))
        return sorted(names)

    @_bounded
    def label_values(self, tenant: Tenants, name: str, selectors: Sequence[str], start: int, end: int) -> list[str]:
        """Values of `name` among the matching series' labels and their profiles' sample labels."""
        values: set[str] = set()
        for sel, rows in self._label_selections(tenant, selectors, start, end):
            values.update(s.labels[name] for s in sel.series if name in s.labels)
            values.update(used_sample_labels(self.blocks, rows, name))
        return sorted(values)

    def _label_selections(self, tenant: Tenants, selectors: Sequence[str], start: int,
                          end: int) -> list[tuple[Selection, Rows]]:
        """Per selector, the series it selects and their rows in range. A series whose own labels leave
        matchers for its samples counts only if some sample passes them."""
        out = []
        for matchers in self._selectors(selectors):
            candidates = index.find_series(self.db, tenant, selection.index_matchers(matchers), start, end)
            sel = selection.split(candidates, matchers, None)
            rows = index.profile_rows(self.db, [s.id for s in sel.series], start, end)
            r = self._rows(tenant, rows, sel, None)
            if sel.by_samples:
                kept = set(rows.series_id[rows_with_samples(self.blocks, r)].tolist())
                sel = Selection(None, [s for s in sel.series if sel.series_filter[s.id] == 0 or s.id in kept],
                                sel.filters, sel.series_filter)
            out.append((sel, r))
        return out

    def _selectors(self, selectors: Sequence[str]) -> list[tuple]:
        """The matchers of each selector (one empty selector when none is given), within the limit."""
        parsed = [parse_selector(s) for s in selectors] or [()]
        for matchers in parsed:
            selection.check_matcher_count(matchers, self.config.max_matchers)
        return parsed

    def _rows(self, tenant: Tenants, rows: ProfileRows, sel: Selection, weights: np.ndarray | None) -> Rows:
        """The rows as a source reads them, once their cost is within the tenant's limit (`cost`)."""
        return self._rows_and_objects(tenant, rows, sel, weights)[0]

    def _rows_and_objects(self, tenant: Tenants, rows: ProfileRows, sel: Selection, weights: np.ndarray | None,
                          divisors: np.ndarray | None = None, whole: mergeplan.WholeRows | None = None
                          ) -> tuple[Rows, dict[str, index.StoredObject]]:
        """`_rows`, and what the index says of their blocks (and of those of the index rows a merge takes
        `whole`, whose cost is checked with theirs)."""
        found, objects = self._cost(rows, whole)
        cost.check(found, self.config.max_bytes_of(tenant), tenant)
        # keyed by the rows' block codes (`ProfileRows.blocks`): a million int32s, not a million ids
        keys = {code: objects[b].key for code, b in enumerate(rows.blocks.tolist()) if b in objects}
        row_filter = sel.row_filters(rows) if sel.by_samples else None  # None: every row's filter is the first
        return Rows(keys, rows.block, rows.row, weights, sel.filters, row_filter, divisors), objects

    def _cost(self, rows: ProfileRows, whole: mergeplan.WholeRows | None = None
              ) -> tuple[QueryCost, dict[str, index.StoredObject]]:
        """What reading the rows (and the `whole` index rows) costs, and what the index says of their blocks:
        one statement of it."""
        blocks = rows.used_blocks()[0] if whole is None else np.union1d(rows.used_blocks()[0], whole.blocks)
        objects = index.block_objects(self.db, blocks.tolist())
        return cost.cost_of(rows, {b: o.bytes for b, o in objects.items()}, whole), objects

    # ------------------------------------------------------------------------------------ totals

    @_bounded
    def query_range(self, tenant: Tenants, query: str, start: int, end: int, step: int,
                    group_by: Sequence[str], average: bool = False, exemplars: bool = False) -> Totals:
        """Totals per step. `average` gives the mean total of the profiles in each step of each group
        (Pyroscope's average aggregation) instead of their sum (their per-series mean for gauges);
        `exemplars` names the largest profile of each point (not when samples are filtered or grouped)."""
        sel = self._select(tenant, query, start, end)
        present = {name for s in sel.series for name in s.labels}
        by_sample = [g for g in group_by if g not in present]
        if sel.by_samples or (by_sample and sel.series):
            if average:
                raise ValueError("the average aggregation needs whole profiles: it cannot be combined with "
                                 "matchers or group_by on sample labels")
            points = self._sample_points(tenant, sel, start, end, step, group_by, by_sample)
            seen = {name for p in points for name in by_sample if p.labels[name]}
            return Totals(points, _absent_labels(sel.series, [g for g in group_by if g not in seen]))
        return Totals(self._points(sel.profile_type, sel.series, start, end, step, group_by, average, exemplars),
                      _absent_labels(sel.series, group_by))

    @_bounded
    def time_bounds(self, tenant: Tenants) -> tuple[int, int] | None:
        """The first and last times the tenant's series were seen; None before any profile was stored."""
        return index.time_bounds(self.db, tenant)

    def _points(self, ptype: ProfileType, series: list[Series], start: int, end: int, step: int,
                group_by: Sequence[str], average: bool = False, exemplars: bool = False) -> list[steps.Points]:
        rows = index.profile_totals(self.db, [s.id for s in series], start, end)
        labels_of = {s.id: {k: s.labels.get(k, "") for k in group_by} for s in series}
        groups = sorted({tuple(sorted(v.items())) for v in labels_of.values()})
        group_index = {g: i for i, g in enumerate(groups)}
        series_ids = np.array(sorted(labels_of), np.int64)
        series_group = np.array([group_index[tuple(sorted(labels_of[i].items()))] for i in series_ids.tolist()],
                                np.int64)
        row_group = series_group[np.searchsorted(series_ids, rows.series_id)]
        bucket = steps.buckets(rows.time, start, step)
        largest: list[steps.Exemplars | None] = [None] * len(groups)
        if exemplars:
            labels = {s.id: s.labels for s in series}
            largest = [steps.Exemplars(i, t, v, [labels[k] for k in i.tolist()])
                       for i, t, v in steps.largest_per_step(rows, row_group, bucket, len(groups))]
        return [steps.Points(dict(g), steps.bucket_starts(b, start, step), v, e)
                for g, (b, v), e in zip(groups, steps.bucket_totals(rows, row_group, bucket, len(groups),
                                                               ptype.is_gauge and not average, average), largest)]

    def _sample_points(self, tenant: Tenants, sel: Selection, start: int, end: int, step: int, group_by: Sequence[str],
                       by_sample: Sequence[str]) -> list[steps.Points]:
        """Totals read from the blocks: some samples are filtered out, or groups split by sample labels."""
        rows = index.profile_rows(self.db, [s.id for s in sel.series], start, end)
        bucket = steps.buckets(rows.time, start, step)
        weights = steps.step_gauge_weights(rows, bucket) if sel.profile_type.is_gauge else None
        owner, sample_labels, values = sample_values(self.blocks, self._rows(tenant, rows, sel, weights), by_sample)
        by_series = [g for g in group_by if g not in by_sample]
        ids = np.array([s.id for s in sel.series], np.int64)
        order = np.argsort(ids)
        table = np.array([[s.labels.get(g, "") for g in by_series] for s in sel.series], object) \
            .reshape(len(ids), len(by_series))
        row_series = order[np.searchsorted(ids[order], rows.series_id)][owner]
        columns = [table[row_series, j] for j in range(len(by_series))] + list(sample_labels)
        names = list(by_series) + list(by_sample)
        return steps.grouped_points(names, columns, bucket[owner], values, start, step, group_by)

    @_bounded
    def profile_values(self, tenant: Tenants, query: str, start: int, end: int,
                       sample_labels: Sequence[str] = ()) -> ProfileValues:
        """The matching profiles in range with their totals, from the index; when matchers apply to samples
        or `sample_labels` are asked for (a span heatmap's), with their kept samples' values and those
        labels too, read from the blocks within the tenant's cost limit (`heatmap`)."""
        sel = self._select(tenant, query, start, end)
        ids = [s.id for s in sel.series]
        if not (sel.by_samples or sample_labels):
            return ProfileValues(sel.series, index.profile_totals(self.db, ids, start, end))
        rows = index.profile_rows(self.db, ids, start, end)
        owner, labels, values = sample_values(self.blocks, self._rows(tenant, rows, sel, None), sample_labels)
        return ProfileValues(sel.series, rows, Samples(owner, values, dict(zip(sample_labels, labels, strict=True))),
                             sel.row_filters(rows) != 0)

    # ------------------------------------------------------------------------------------ merges

    @_bounded
    def merge(self, tenant: Tenants, query: str, start: int, end: int, granularity: str = "functions",
              profiles: Sequence[tuple[int, int]] | None = None) -> Merged:
        """The merge of the matching profiles; with `profiles`, of only those (series id, time) pairs."""
        sel = self._select(tenant, query, start, end)
        if profiles is None and self.peers is not None:
            # the plan weighs the merge for the split; one not split is read from it, with no second look
            plan = self._plan(sel, start, end)
            split = self._split(tenant, query, sel, start, end, granularity, plan)
            if split is not None:
                return split
            symbols = self._symbols(tenant)
            return self._answer(sel, [self._planned(tenant, sel, start, end, None, granularity, symbols, plan)],
                                symbols)
        symbols = self._symbols(tenant)
        return self._answer(sel, [self._selected(tenant, sel, start, end, granularity, profiles, symbols)], symbols)

    @_bounded
    def merge_any(self, tenant: Tenants, queries: Sequence[str], start: int, end: int, granularity: str = "functions",
                  profiles: Sequence[tuple[int, int]] | None = None) -> Merged:
        """The merge of the samples any of `queries` selects, which must select disjoint samples (one of
        each pair's sample matchers excludes the other's): Pyroscope's span selections, whose samples carry
        the span in `span_id` or, from older clients, in `profile_id`. The answer's `profiles` counts a
        profile once for each query that holds some of its samples."""
        if not queries:
            raise ValueError("merge_any needs at least one query")
        symbols = self._symbols(tenant)
        selections = [self._select(tenant, query, start, end) for query in queries]
        return self._answer(selections[-1], [self._selected(tenant, sel, start, end, granularity, profiles, symbols)
                                             for sel in selections], symbols)

    def _selected(self, tenant: Tenants, sel: Selection, start: int, end: int, granularity: str,
                  profiles: Sequence[tuple[int, int]] | None, symbols: QuerySymbols | None) -> Piece:
        """The selection merged here over the range; with `profiles`, only those (series id, time) pairs."""
        if profiles is None:
            return self._planned(tenant, sel, start, end, None, granularity, symbols)
        # in block order: a merge adds exactly (integers, gauges' exact shares), so any set order will do
        rows = index.merge_rows(self.db, [s.id for s in sel.series], start, end)
        rows = rows.take(np.flatnonzero(_is_one_of(rows, profiles)))
        divisors = gauge_divisors(rows) if sel.profile_type.is_gauge else None
        return self._read(tenant, rows, sel, divisors, granularity, None, symbols)

    @_bounded
    def changes(self, tenant: Tenants, a: tuple[str, int, int], b: tuple[str, int, int],
                settings: Settings = DEFAULT_SETTINGS, order: str = "self", granularity: str = "functions") -> Changes:
        """What changed from selection `a` (query, start, end) to `b`, function by function, each stored
        profile one observation (`flamewatch.changes.stats`)."""
        sides = [self._select(tenant, *side) for side in (a, b)]
        if sides[0].profile_type != sides[1].profile_type:
            raise ValueError(f"cannot compare {sides[0].profile_type.id} with {sides[1].profile_type.id}: both "
                             "sides need the same profile type")
        parts = [self._rows(tenant, index.profile_rows(self.db, [s.id for s in sel.series], start, end), sel, None)
                 for sel, (_, start, end) in zip(sides, (a, b))]
        symbols = self._symbols(tenant)
        names, self_share, total_share = function_shares(self.blocks, _joined(*parts), granularity, symbols)
        split = len(parts[0].row)
        observed = self_share.sum(axis=1) > 0  # a profile whose kept samples sum to nothing says nothing
        at = [np.flatnonzero(observed[:split]), split + np.flatnonzero(observed[split:])]
        return compare(names, self_share[at[0]], total_share[at[0]], self_share[at[1]], total_share[at[1]],
                       settings, order)

    @_bounded
    def analyze(self, tenant: Tenants, query: str, start: int, end: int) -> tuple[QueryCost, int]:
        """What merging the query over the range would read (blocks, series, profiles, bytes), from the
        index alone, and the tenant's `--query.max-bytes` (0: none)."""
        sel = self._select(tenant, query, start, end)
        counts = index.profile_counts(self.db, [s.id for s in sel.series], start, end)
        objects = index.block_objects(self.db, np.unique(counts.block_id).tolist())
        return cost.cost_of_counts(counts, {b: o.bytes for b, o in objects.items()}), self.config.max_bytes_of(tenant)

    @_bounded
    def nearest(self, tenant: Tenants, query: str, time_ns: int, granularity: str = "functions") -> Merged:
        sel = self._select(tenant, query, *_ALL_TIME)
        rows = index.nearest_profile(self.db, [s.id for s in sel.series], time_ns)
        symbols = self._symbols(tenant)
        return self._answer(sel, [self._read(tenant, rows, sel, None, granularity, None, symbols)], symbols)

    @_bounded
    def pprof(self, tenant: Tenants, query: str, start: int, end: int, time_ns: int | None) -> tuple[Merged, bytes]:
        """The merge (or the profile nearest `time_ns`) as pprof, with everything the profiles stored."""
        if time_ns is not None:
            sel = self._select(tenant, query, *_ALL_TIME)
            rows = index.nearest_profile(self.db, [s.id for s in sel.series], time_ns)
        else:
            sel = self._select(tenant, query, start, end)
            rows = index.profile_rows(self.db, [s.id for s in sel.series], start, end)
        weights = gauge_weights(rows) if sel.profile_type.is_gauge and time_ns is None else None
        r = self._rows(tenant, rows, sel, weights)
        symbols = self._symbols(tenant)
        gathered, header, named = self.source.profile(r, symbols)
        body = render_pprof(gathered, sel.profile_type, header, named)
        return Merged(sel.profile_type, None, self._profiles(r), tuple(symbols.state.warnings) if symbols else ()), body

    def _select(self, tenant: Tenants, query: str, start: int, end: int) -> Selection:
        q = parse_query(query)
        selection.check_matcher_count(q.matchers, self.config.max_matchers)
        if q.profile_type is None:
            raise ValueError("the query names no profile type: write it before the selector, e.g. "
                             'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="demo"}')
        candidates = index.find_series(self.db, tenant, selection.index_matchers(q.matchers), start, end,
                                       profile_type=q.profile_type)
        # A type some series has is known; only an empty answer needs the list of types, to tell an
        # unknown type (an error) from a known one without data in the range.
        ptype = ProfileType.parse(q.profile_type) if candidates else self._known_type(tenant, q)
        return selection.split(candidates, q.matchers, ptype)

    def _known_type(self, tenant: Tenants, q: Query) -> ProfileType:
        known = index.profile_types(self.db, tenant, *_ALL_TIME)
        if q.profile_type not in known:
            listing = ", ".join(known) if known else "none yet"
            raise NotFoundError(f'unknown profile type "{q.profile_type}"; stored types are: {listing}')
        return ProfileType.parse(q.profile_type)

    def _symbols(self, tenant: Tenants) -> QuerySymbols | None:
        return self.symbolization.for_query(tenant) if self.symbolization is not None else None

    def _answer(self, sel: Selection, pieces: list[Piece], symbols: QuerySymbols | None) -> Merged:
        """The merged pieces as one answer, with what symbolizing any of them warned of."""
        merged = combine([p.tree for p in pieces])
        tree = merged.tree()
        if symbols is None:
            return Merged(sel.profile_type, tree, sum(p.profiles for p in pieces))
        symbols.state.warnings.extend(w for p in pieces for w in p.warnings if w not in symbols.state.warnings)
        symbols.note_unnamed(merged.unnamed, tree.names)
        return Merged(sel.profile_type, tree, sum(p.profiles for p in pieces), tuple(symbols.state.warnings))

    def _read(self, tenant: Tenants, rows: ProfileRows, sel: Selection, divisors: np.ndarray | None, granularity: str,
              span: tuple[int, int] | None, symbols: QuerySymbols | None) -> Piece:
        """The rows merged here, each divided by its divisor (None: none is), within the tenant's cost limit;
        with `span`, the range they are every profile of, the whole hours in it are read from pre-merged
        trees where blocks have them."""
        weights = None if divisors is None else 1.0 / divisors
        r, objects = self._rows_and_objects(tenant, rows, sel, weights, divisors)
        by_tree = self._by_tree(rows, r.row_filter, objects, span)
        return Piece(combine(self.read_partials(r, by_tree, granularity, symbols)), self._profiles(r))

    def _plan(self, sel: Selection, start: int, end: int) -> mergeplan.MergePlan:
        """What merging the selection over [start, end] reads (`mergeplan.merge_plan`): every profile listed
        when no pre-merged tree can answer (no trees source, or no whole hour in the range)."""
        ids = [s.id for s in sel.series]
        span = whole_span(start, end)
        if self.trees is None or span is None:
            return mergeplan.MergePlan(mergeplan.WholeRows.empty(), index.merge_rows(self.db, ids, start, end))
        tree_series = [s.id for s in sel.series if sel.series_filter[s.id] == 0] if sel.by_samples else None
        return mergeplan.merge_plan(self.db, ids, start, end, span, tree_series)

    def _planned(self, tenant: Tenants, sel: Selection, start: int, end: int,
                 divisors: tuple[np.ndarray, np.ndarray] | None, granularity: str,
                 symbols: QuerySymbols | None, plan: mergeplan.MergePlan | None = None) -> Piece:
        """The selection merged over [start, end] by its plan (`_plan`, made here when not given): the
        index rows that lie in its whole hours in blocks with pre-merged trees from those trees, never
        sending a row per profile, the profiles of the other rows from their blocks (their whole hours
        from trees too); a gauge's values divided by `divisors` (series ids, ascending, and their profiles
        over a whole range that was split) or else by its series' profiles here."""
        plan = plan if plan is not None else self._plan(sel, start, end)
        rows, whole = plan.rows, plan.whole
        if sel.profile_type.is_gauge:  # a series the asker did not count (stored since) is counted here
            here = series_profiles(rows, whole)
            divisors = here if divisors is None else filled(divisors, here)
        row_divisors = None if divisors is None else divisors_of(rows, *divisors)
        whole_divisors = None if divisors is None else series_divisors(whole.series_id, *divisors)
        r, objects = self._rows_and_objects(tenant, rows, sel, None if row_divisors is None else 1.0 / row_divisors,
                                            row_divisors, whole)
        partials = self.read_partials(r, self._by_tree(rows, r.row_filter, objects, (start, end)), granularity,
                                      symbols) if len(rows) else []
        if len(whole):
            w = Rows({code: objects[b].key for code, b in enumerate(whole.blocks.tolist()) if b in objects},
                     whole.block, whole.fingerprint, None if whole_divisors is None else 1.0 / whole_divisors,
                     divisors=whole_divisors)
            partials.append(self.trees.series_tree(w, granularity, symbols))
        if not partials:
            partials = [self.source.tree(r, granularity, symbols)]
        return Piece(combine(partials), self._profiles(r) + int(whole.count.sum()))

    def _split(self, tenant: Tenants, query: str, sel: Selection, start: int, end: int,
               granularity: str, plan: mergeplan.MergePlan) -> Merged | None:
        """The merge cut in time with the peers (`fanout`), once its plan's counts hold it within the
        tenant's cost limit; None when it would read too little to split or no peer is live."""
        assert self.peers is not None
        w = plan.whole  # an upper bound of the work first, from the plan alone: the listed profiles as profiles
        upper = fanout.entry_work(w.first, w.last, w.count, np.ones(len(w), bool)).sum() + len(plan.rows)
        if int(upper) < self.peers.min_profiles:
            return None
        counts = plan.counts()
        blocks, block_of = np.unique(counts.block_id, return_inverse=True)
        objects = index.block_objects(self.db, blocks.tolist())
        cost.check(cost.cost_of_counts(counts, {b: o.bytes for b, o in objects.items()}),
                   self.config.max_bytes_of(tenant), tenant)
        with_trees = np.array([self.trees is not None and b in objects and objects[b].trees
                               for b in blocks.tolist()], bool)[block_of.reshape(-1)]
        work = fanout.entry_work(counts.first, counts.last, counts.count, with_trees)
        if int(work.sum()) < self.peers.min_profiles:
            return None
        peers = self.peers.live()  # asked only now: `flamewatch all` starts its workers when first asked
        pieces = fanout.cut_times(counts.first, work, start, end, len(peers) + 1) if peers else []
        if len(pieces) < 2:
            return None
        divisors = None
        if sel.profile_type.is_gauge:
            series, at = np.unique(counts.series_id, return_inverse=True)
            divisors = series, np.bincount(at.reshape(-1), weights=counts.count).astype(np.int64)
        symbols = self._symbols(tenant)
        return self._answer(sel, self.peers.pieces(
            tenant, pieces, peers,
            lambda piece: fanout.range_request(query, piece, granularity, symbols is not None, divisors),
            lambda lo, hi: self._piece(tenant, sel, lo, hi, divisors, granularity, symbols, plan.within(lo, hi)),
            self.blocks.paths), symbols)

    def _piece(self, tenant: Tenants, sel: Selection, start: int, end: int,
               divisors: tuple[np.ndarray, np.ndarray] | None, granularity: str, symbols: QuerySymbols | None,
               plan: mergeplan.MergePlan | None = None) -> Piece:
        """The selection merged over [start, end], a piece of a split merge's range, by `plan` when the
        asker's plan of the whole range gives the piece's; a gauge's values divided by `divisors` (series
        ids, ascending, and their profiles over the whole range)."""
        return self._planned(tenant, sel, start, end, divisors, granularity, symbols, plan)

    def _by_tree(self, rows: ProfileRows, row_filter: np.ndarray | None, objects: dict[str, index.StoredObject],
                 span: tuple[int, int] | None) -> np.ndarray | None:
        """Per row, whether a pre-merged tree may answer it (`premerged.whole_hours`); None: for none."""
        if span is None or self.trees is None or not len(rows):
            return None
        with_trees = np.array([b in objects and objects[b].trees for b in rows.blocks.tolist()], bool)[rows.block]
        by_tree = whole_hours(rows, row_filter, with_trees, *span)
        return by_tree if by_tree.any() else None

    def read_partials(self, r: Rows, by_tree: np.ndarray | None, granularity: str,
                      symbols: QuerySymbols | None) -> list[PartialTree]:
        """The partial trees of the rows read here: those `by_tree` marks from `self.trees`, the rest from
        `self.source` (one source alone when it answers every row)."""
        if by_tree is None or self.trees is None or not by_tree.any():
            return [self.source.tree(r, granularity, symbols)]
        if by_tree.all():
            return [self.trees.tree(r, granularity, symbols)]
        return [self.trees.tree(r.take(np.flatnonzero(by_tree)), granularity, symbols),
                self.source.tree(r.take(np.flatnonzero(~by_tree)), granularity, symbols)]

    def partial(self, tenant: Tenants, query: str, piece: tuple[int, int],
                divisors: tuple[np.ndarray, np.ndarray] | None, granularity: str,
                symbolize: bool) -> tuple[Piece, list[str]]:
        """A piece of another querier's split merge (`fanout`), and the warnings symbolizing it gave."""
        sel = self._select(tenant, query, *piece)
        if sel.profile_type.is_gauge and divisors is None:
            raise ValueError(f"a partial merge of the gauge {sel.profile_type.id} needs each series' divisor")
        symbols = self._symbols(tenant) if symbolize else None
        merged = self._piece(tenant, sel, *piece, divisors if sel.profile_type.is_gauge else None, granularity, symbols)
        return merged, list(symbols.state.warnings) if symbols is not None else []

    def _profiles(self, r: Rows) -> int:
        """How many of the rows the answer holds: a row whose samples all fail its filter holds nothing,
        so `{exp="nope"}` over series without `exp` (whose samples lack it too) counts none."""
        if r.row_filter is None or not r.row_filter.any():
            return len(r.row)
        filtered = np.flatnonzero(r.row_filter)
        some = Rows(r.keys, r.block_id[filtered], r.row[filtered], None, r.filters, r.row_filter[filtered])
        return len(r.row) - len(filtered) + int(rows_with_samples(self.blocks, some).sum())


def _is_one_of(rows: ProfileRows, profiles: Sequence[tuple[int, int]]) -> np.ndarray:
    """Whether each row is one of the (series id, time) pairs; one pass per pair a request names."""
    keep = np.zeros(len(rows), bool)
    for series_id, time_ns in profiles:
        keep |= (rows.series_id == series_id) & (rows.time == time_ns)
    return keep


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
