"""Pre-merged trees as a tree source, and the engine's choice of the rows they answer.

A compacted block holds, per series and hour of its profiles, their values summed per stack node (the
block's trees section, `blockformat`). Where a query takes a series' hour whole and keeps every sample
of it, the sum of that hour's profiles is the tree: reading it costs one entry per stack node instead
of one per profile and node. The nodes are the block's own, so function names, lines and symbolized
frames come out exactly as from the profiles, and the values are integer sums, so weights (or, for
gauges, divisors: see `shares`) apply to them as to the profiles' values.

Whole index rows go further (`series_tree`): a (series, block) row of the index whose every profile lies
in whole hours of the range, in a block with trees, is answered by that series' trees in the block (and
the profiles of its hours too thin for a tree) without the index listing its profiles at all
(`mergeplan.merge_plan`, `whole_span`): the rows hold the series' fingerprints instead of profile rows.

`whole_hours` is the engine's choice for listed rows; `PreMergedTrees` checks it again per block, whatever it is
handed: a tree is read only when the rows given for it are every profile the block holds of that
series and hour and no sample filter applies, and the profiles otherwise. So a wrong choice costs
time, never a wrong answer.
"""

from __future__ import annotations

import numpy as np
from prometheus_client import Counter

from flamewatch.pprof.wire import expand_ranges
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.formats.pprof import Header, Named
from flamewatch.querier.merging import Group, GroupEntries, Rows, gather_rows, path_sums, profile_entries
from flamewatch.querier.sources import PartialTree
from flamewatch.querier.symbolization import QuerySymbols
from flamewatch.storage.blockformat import TREE_SPAN_NS
from flamewatch.storage.blockread import StoredTrees
from flamewatch.storage.frames import run_firsts
from flamewatch.storage.gather import Gathered
from flamewatch.storage.index import ProfileRows

TREE_PROFILES = Counter("flamewatch_querier_tree_profiles", "Profiles merges took from pre-merged trees, not read")


def whole_hours(rows: ProfileRows, row_filter: np.ndarray | None, with_trees: np.ndarray, start: int,
                end: int) -> np.ndarray:
    """Per row of a merge over [start, end]: whether a pre-merged tree may answer it. Its block holds
    trees (`with_trees`), its series keeps every sample (filter 0), and its hour lies wholly in the range,
    so the query takes every profile of that series and hour the block holds."""
    hour = rows.time - rows.time % TREE_SPAN_NS
    last_start = end - (TREE_SPAN_NS - 1)  # the last hour start whose hour ends by `end`
    whole = (hour >= start) & (hour <= last_start) if last_start >= start else np.zeros(len(rows), bool)
    unfiltered = np.ones(len(rows), bool) if row_filter is None else row_filter == 0
    return whole & unfiltered & with_trees


def whole_span(start: int, end: int) -> tuple[int, int] | None:
    """The whole hours of [start, end] (both ends included); None when it holds none."""
    lo = -(-start // TREE_SPAN_NS) * TREE_SPAN_NS
    hi = (end + 1) // TREE_SPAN_NS * TREE_SPAN_NS - 1
    return (lo, hi) if lo < hi else None


class PreMergedTrees:
    """The blocks' pre-merged trees where they answer the rows, their profiles elsewhere."""

    def __init__(self, blocks: BlockCache) -> None:
        self.blocks = blocks

    def tree(self, rows: Rows, granularity: str, symbols: QuerySymbols | None) -> PartialTree:
        sums, unnamed = path_sums(self.blocks, rows, granularity, symbols, read=tree_entries)
        return PartialTree(self.blocks.paths, sums, unnamed)

    def series_tree(self, rows: Rows, granularity: str, symbols: QuerySymbols | None) -> PartialTree:
        """Whole index rows (`mergeplan.WholeRows`), each a series' every profile in a block: `rows.row` holds
        the series' fingerprints, read from the block's trees of those series (`series_entries`)."""
        sums, unnamed = path_sums(self.blocks, rows, granularity, symbols, read=series_entries)
        return PartialTree(self.blocks.paths, sums, unnamed)

    def profile(self, rows: Rows, symbols: QuerySymbols | None) -> tuple[Gathered, Header, Named]:
        """pprof keeps what trees drop (label sets, each profile's own entries): from the profiles."""
        return gather_rows(self.blocks, rows, symbols)


def tree_entries(g: Group, owners: bool) -> GroupEntries:
    """The group's entries from the trees that its rows take whole (each tree once, owned by the first of
    its rows), and from the profiles of the other rows."""
    reader = g.block.reader
    if g.set_mask is not None or not reader.has_trees:
        yield from profile_entries(g, owners)
        return
    trees = reader.trees
    mine = trees.profile_tree[g.rows]
    given = np.bincount(mine[mine >= 0], minlength=len(trees.fingerprint))
    # a row given twice counts twice in a merge, never in a tree
    repeated = np.bincount(mine[(mine >= 0) & ~_distinct(g.rows)], minlength=len(trees.fingerprint))
    usable = (given == trees.profiles) & (repeated == 0)
    whole = (mine >= 0) & usable[np.maximum(mine, 0)]
    TREE_PROFILES.inc(int(whole.sum()))
    used, first = run_firsts(mine[whole])  # a tree's rows are a run of its block's rows
    counts = trees.offsets[used + 1] - trees.offsets[used]
    picked = expand_ranges(trees.offsets[used], counts)
    yield np.repeat(np.flatnonzero(whole)[first], counts) if owners else None, trees.node[picked], trees.values(picked)
    rest = np.flatnonzero(~whole)
    if len(rest):
        for owner, nodes, _, values in reader.entry_parts(g.rows[rest], None, owners=True, label_sets=False):
            yield rest[owner], nodes, values


def _distinct(rows: np.ndarray) -> np.ndarray:
    """Per row (of a block: fewer than its profiles): whether it is given once."""
    return np.bincount(rows)[rows] == 1 if len(rows) else np.zeros(0, bool)


def series_entries(g: Group, owners: bool) -> GroupEntries:
    """The entries of every profile the group's series (by fingerprint, `g.rows`) have in its block: their
    trees, and the profiles of the hours too thin for a tree (or all of them, in a block without trees)."""
    reader = g.block.reader
    fingerprints = g.rows
    if reader.has_trees:
        trees = reader.trees
        first, count = trees.of_series(fingerprints)
        tree = trees.by_series[expand_ranges(first, count)]
        order = np.argsort(tree, kind="stable")  # in stored order: runs of trees are runs of entries
        tree, owner = tree[order], np.repeat(np.arange(len(fingerprints)), count)[order]
        TREE_PROFILES.inc(int(trees.profiles[tree].sum()))
        yield from _tree_runs(trees, tree, owner if owners else None)
    untreed, untreed_fingerprint = reader.untreed
    if not len(untreed):
        return
    rows = np.flatnonzero(np.isin(untreed_fingerprint, fingerprints))
    if len(rows):
        order = np.argsort(fingerprints, kind="stable")
        owner_of = order[np.searchsorted(fingerprints[order], untreed_fingerprint[rows])]
        for owner, nodes, _, values in reader.entry_parts(untreed[rows], None, owners=True, label_sets=False):
            yield owner_of[owner], nodes, values


_RUNS_AS_SLICES = 16  # at most this many runs of trees are read as slices of the entries, no copy


def _tree_runs(trees: StoredTrees, tree: np.ndarray, owner: np.ndarray | None) -> GroupEntries:
    """The entries of the trees (ascending ids), with each entry's owner when given: slices of the stored
    entries for each run of consecutive trees when they are few (a query of one profile type or service
    over a compacted block takes a run of them), else gathered."""
    if not len(tree):
        return
    breaks = np.flatnonzero(tree[1:] != tree[:-1] + 1) + 1
    if len(breaks) < _RUNS_AS_SLICES:
        for lo, hi in zip(np.r_[0, breaks].tolist(), np.r_[breaks, len(tree)].tolist()):
            a, b = int(trees.offsets[tree[lo]]), int(trees.offsets[tree[hi - 1] + 1])
            sizes = trees.offsets[tree[lo:hi] + 1] - trees.offsets[tree[lo:hi]]
            yield None if owner is None else np.repeat(owner[lo:hi], sizes), trees.node[a:b], trees.values(slice(a, b))
        return
    sizes = trees.offsets[tree + 1] - trees.offsets[tree]
    picked = expand_ranges(trees.offsets[tree], sizes)
    yield None if owner is None else np.repeat(owner, sizes), trees.node[picked], trees.values(picked)
