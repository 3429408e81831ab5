"""What the querier computes from stored blocks: merged call trees, gathered profiles for pprof,
per-sample-label totals and the sample labels in use.

Every function takes profile rows (row `row[i]` of block `block_id[i]`, whose object key is
`keys[block_id[i]]`: a block's id, or any code for it, such as the index's `ProfileRows.block`) and,
optionally, a sample filter per row (see `selection`). Rows are processed
in groups of one block and one filter, each group vectorised with numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from flamewatch.querier import deadline
from flamewatch.querier.blocks import BlockCache, LoadedBlock
from flamewatch.querier.calltree import CallTree
from flamewatch.querier.formats.pprof import NO_NAMES, Header, Named
from flamewatch.querier.selection import Filter
from flamewatch.querier.shares import Shares, SharesSum
from flamewatch.querier.symbolization import QuerySymbols, gathered_chains
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.frames import run_codes, sums_by
from flamewatch.storage.gather import Gathered, from_blocks

GRANULARITIES = ("functions", "lines")


@dataclass(frozen=True, eq=False)
class Rows:
    """Profile rows to read, with what applies to each."""

    keys: Mapping  # block (id or code) -> object key
    block_id: np.ndarray  # per row, its block: ids or codes, as `keys` has them
    row: np.ndarray
    weights: np.ndarray | None = None
    filters: Sequence[Filter] = ((),)
    row_filter: np.ndarray | None = None  # index into filters per row; None: all filters[0]
    # Per row, what its values are divided by (a gauge: the profiles of its series in the range), its
    # weights then being 1 / divisors: merged trees keep such values exact until the end (`shares`)
    divisors: np.ndarray | None = None

    def take(self, index: np.ndarray) -> Rows:
        """The rows at `index`, with only the keys of their blocks (every key given is read)."""
        def pick(column: np.ndarray | None) -> np.ndarray | None:
            return None if column is None else column[index]
        block_id = self.block_id[index]
        return Rows({b: self.keys[b] for b in run_codes(block_id)[0].tolist()}, block_id, self.row[index],
                    pick(self.weights), self.filters, pick(self.row_filter), pick(self.divisors))


@dataclass(frozen=True, eq=False)
class Group:
    """Rows of one block and one sample filter, as a merge reads them."""

    block: LoadedBlock
    pick: np.ndarray  # indices into the rows
    rows: np.ndarray  # rows within the block
    weights: np.ndarray | None
    set_mask: np.ndarray | None  # per label set of the block: kept; None keeps all


def set_mask(reader: BlockReader, matchers: Filter) -> np.ndarray | None:
    """Per label set of the block: whether its labels pass every matcher (None: no matcher)."""
    if not matchers:
        return None
    keep = np.ones(reader.n_label_sets, bool)
    for m in matchers:
        deadline.check()
        keep &= m.matches_many(reader.sample_label_values(m.name))
    return keep


def _groups(blocks: BlockCache, r: Rows) -> Iterator[Group]:
    """The rows in groups of one block and one filter, block after block as the cache streams them: a
    group's block is let go of when the caller moves past it (see `blocks.BlockCache.stream`)."""
    row_filter = np.zeros(len(r.row), np.int64) if r.row_filter is None else r.row_filter
    block_index = run_codes(r.block_id)[1]  # rows come in runs of one block: no sort of every block id
    # ordered as (block, filter)
    group = block_index if r.row_filter is None else block_index * (int(row_filter.max(initial=0)) + 1) + row_filter
    order = _group_row_order(group, r.row)  # rows in block order: read as runs
    key = group[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(order) else []
    picks = np.split(order, starts[1:]) if len(order) else []
    keys = [r.keys[r.block_id[pick[0]]] for pick in picks]  # a block's groups are consecutive
    stream = blocks.stream([*keys, *r.keys.values()])  # every key listed, so every missing one is named
    at, block = None, None
    for pick, wanted in zip(picks, keys):
        deadline.check()
        while at != wanted:
            at, block = next(stream)
        if block is not None:
            yield Group(block, pick, r.row[pick], None if r.weights is None else r.weights[pick],
                         set_mask(block.reader, r.filters[row_filter[pick[0]]]))
    del block
    for _ in stream:  # the keys without rows; raises BlocksMissing when any block was missing
        pass


def _group_row_order(group: np.ndarray, row: np.ndarray) -> np.ndarray:
    """The order by group, then row: one int64 key where it fits (a stable sort of one key costs less than
    half of sorting by two), else both keys."""
    if not len(row):
        return np.zeros(0, np.int64)
    span = int(row.max()) + 1
    if int(group.max()) * span + span < 2**62 and int(row.min()) >= 0:
        return np.argsort(group * span + row, kind="stable")
    return np.lexsort((row, group))


def _entries(g: Group, owners: bool = True, weighted: bool = True
             ) -> Iterator[tuple[np.ndarray | None, np.ndarray, np.ndarray | None, np.ndarray]]:
    """(row index within the group, node, label set, value) of the group's kept entries, one row group
    of the block at a time; without `owners`, the row indices (and label sets, when no filter needs
    them) are None; without `weighted`, values are as stored."""
    for owner, nodes, sets, values in g.block.reader.entry_parts(g.rows, g.weights if weighted else None,
                                                                 owners=owners,
                                                                 label_sets=owners or g.set_mask is not None):
        deadline.check()
        if g.set_mask is None:
            yield owner, nodes, sets, values
        else:
            keep = g.set_mask[sets]
            yield None if owner is None else owner[keep], nodes[keep], sets[keep], values[keep]


def merge_blocks(blocks: BlockCache, keys: Mapping[str, str], block_id: np.ndarray, row: np.ndarray,
                 weights: np.ndarray | None, filters: Sequence[Filter] = ((),), row_filter: np.ndarray | None = None,
                 granularity: str = "functions", symbols: QuerySymbols | None = None) -> CallTree:
    """The call tree of the rows' kept samples, weighted by `weights[i]` (None: summed as they are),
    keyed by function names or, with granularity "lines", by function, file and line (`path_sums`
    read into a tree)."""
    sums, unnamed = path_sums(blocks, Rows(keys, block_id, row, weights, filters, row_filter), granularity, symbols)
    tree = blocks.paths.tree(sums)
    if symbols is not None:
        symbols.note_unnamed(unnamed, tree.names)
    return tree


def path_sums(blocks: BlockCache, r: Rows, granularity: str = "functions", symbols: QuerySymbols | None = None,
              read: GroupReader | None = None) -> tuple[np.ndarray | Shares, dict[str, str]]:
    """The rows' kept samples summed per function path of `blocks.paths` (weighted as `merge_blocks`
    says; with `r.divisors`, as exact `Shares`), and the frames no debug information named (see
    `QuerySymbols.unnamed`). `read` gives a group's entries (default: its profiles', `profile_entries`).
    With `symbols`, frames stored as bare addresses are symbolized first, `_SYMBOLIZE_BATCH` blocks' at
    once. Blocks are read as the cache streams them and entries folded one row group at a time, so memory
    stays bounded by the cache and a batch of blocks, not the range."""
    sums = _PathSums(r)
    unnamed: dict[str, str] = {}
    for batch in _batches(_groups(blocks, r), _SYMBOLIZE_BATCH if symbols is not None else 1):
        if symbols is not None:
            symbols.prepare([g.block.reader for g in batch], [g.block.tenant for g in batch])
        for g in batch:
            node_paths = g.block.paths(granularity, symbols)  # may add paths, so the sum grows after it
            sums.add(g, node_paths, (read or profile_entries)(g, sums.owned), len(blocks.paths))
            if symbols is not None:
                unnamed.update(symbols.unnamed(g.block.reader, g.block.tenant))
        del batch  # its blocks go before the next batch is fetched
    return sums.result(len(blocks.paths)), unnamed


# What a tree source reads of a group: (row index within the group or None, node, value as stored) parts
GroupEntries = Iterator[tuple[np.ndarray | None, np.ndarray, np.ndarray]]
GroupReader = Callable[[Group, bool], GroupEntries]


def profile_entries(g: Group, owners: bool) -> GroupEntries:
    """The group's kept entries as its profiles stored them (row indices only when `owners`)."""
    for owner, nodes, _, values in _entries(g, owners=owners, weighted=False):
        yield owner, nodes, values


class _PathSums:
    """Entries folded per function path: summed as stored, weighted by their row's weight (float64), or,
    with divisors, summed exactly per (path, divisor) (`shares`)."""

    def __init__(self, r: Rows):
        self.divisors, self.weights = r.divisors, (r.weights if r.divisors is None else None)
        self.owned = self.divisors is not None or self.weights is not None  # entries must name their row
        self.merged = np.zeros(0, np.int64 if self.weights is None else np.float64)
        self.shares = SharesSum()

    def add(self, g: Group, node_paths: np.ndarray, entries: GroupEntries, n_paths: int) -> None:
        if self.divisors is not None:
            self._add_shares(self.divisors[g.pick], node_paths, entries)
            return
        self.merged = _grown(self.merged, n_paths)
        sums = np.zeros(len(node_paths), self.merged.dtype)
        weights = None if self.weights is None else np.asarray(self.weights, np.float64)[g.pick]
        for owner, nodes, values in entries:
            _fold(sums, nodes, values if weights is None else values * weights[owner])
        np.add.at(self.merged, node_paths, sums)

    def _add_shares(self, divisors: np.ndarray, node_paths: np.ndarray, entries: GroupEntries) -> None:
        """Integer sums per (divisor, node) of the group, as `Shares` of paths: dense (one pass, as
        `_fold`) while the group's distinct divisors times its block's nodes stay small, else sorted."""
        distinct, which = np.unique(divisors, return_inverse=True)
        which = which.reshape(-1)
        n = len(node_paths)
        if len(distinct) * n > _DENSE_SHARES:
            for owner, nodes, values in entries:
                first, sums = sums_by([node_paths[nodes], divisors[owner]], values)
                self.shares.add(Shares(node_paths[nodes][first], divisors[owner][first], sums))
            return
        sums = np.zeros(len(distinct) * n, np.int64)
        for owner, nodes, values in entries:
            _fold(sums, which[owner] * n + nodes, values)
        used = np.flatnonzero(sums)
        self.shares.add(Shares(node_paths[used % n], distinct[used // n], sums[used]))

    def result(self, n_paths: int) -> np.ndarray | Shares:
        return self.shares.result() if self.divisors is not None else _grown(self.merged, n_paths)


# Sums a gauge's group may keep densely, one per (distinct divisor, stack node of its block): 32 MiB.
_DENSE_SHARES = 1 << 22

# Blocks whose unsymbolized frames are asked of the symbolizer in one call (one call per query up to it).
_SYMBOLIZE_BATCH = 64


def _batches(groups: Iterator[Group], blocks: int) -> Iterator[list[Group]]:
    """The groups in lists of at most `blocks` blocks, a block's groups never split."""
    batch: list[Group] = []
    count = 0
    for g in groups:
        if not batch or g.block is not batch[-1].block:
            if count == blocks:
                yield batch
                batch, count = [], 0
            count += 1
        batch.append(g)
    if batch:
        yield batch


# Integer sums through float64 are exact while every partial sum stays below 2**53.
_EXACT_IN_FLOAT = 2**53


def _fold(sums: np.ndarray, nodes: np.ndarray, values: np.ndarray) -> None:
    """Add values to their stack nodes' sums: np.add.at for a few entries, a bincount over all nodes
    (one pass, through float64) for many, where integer sums cannot pass what float64 holds exactly."""
    many = 4 * len(nodes) >= len(sums)
    exact = sums.dtype.kind == "f" or (  # the largest magnitude found without a float copy of the values
        len(values) > 0 and max(int(values.max()), -int(values.min())) * len(values) < _EXACT_IN_FLOAT)
    if many and exact:
        sums += np.bincount(nodes, weights=values, minlength=len(sums)).astype(sums.dtype)
    else:
        np.add.at(sums, nodes, values)


def _grown(values: np.ndarray, size: int) -> np.ndarray:
    return np.concatenate([values, np.zeros(size - len(values), values.dtype)]) if len(values) < size else values


def gather_rows(blocks: BlockCache, r: Rows, symbols: QuerySymbols | None = None) -> tuple[Gathered, Header, Named]:
    """All kept samples of the rows summed into one profile, with symbols, labels and header; with
    `symbols`, the names the symbolizer gives its frames stored as bare addresses."""
    groups = list(_groups(blocks, r))
    gathered = from_blocks([(g.block.reader, g.rows) for g in groups], [g.weights for g in groups],
                           one_profile=True, set_masks=[g.set_mask for g in groups])
    named = NO_NAMES
    if symbols is not None:
        symbols.prepare([g.block.reader for g in groups], [g.block.tenant for g in groups])
        named = Named(*gathered_chains(symbols, gathered.symbols))
    return gathered, _header([(g.block.reader, g.rows) for g in groups]), named


def _header(parts: list[tuple[BlockReader, np.ndarray]]) -> Header:
    if not parts:
        return Header(0, 0, 0)
    names = ("period", "time_ns", "duration_ns")
    read = [(r.profile_columns(*names), rows) for r, rows in parts]
    cols = {c: np.concatenate([columns[i][rows] for columns, rows in read]) for i, c in enumerate(names)}
    if not len(cols["time_ns"]):
        return Header(0, 0, 0)
    start = int(cols["time_ns"].min())
    end = int((cols["time_ns"] + cols["duration_ns"]).max())
    return Header(int(cols["period"].max()), start, end - start)


def sample_values(blocks: BlockCache, r: Rows, names: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray],
                                                                             np.ndarray]:
    """Per kept entry: its row index (into the rows), the value of each sample label in `names` ("" when
    absent) and its value (weighted when weights are given)."""
    owners, labels, values = [], [[] for _ in names], []
    for g in _groups(blocks, r):
        for owner, _, sets, vals in _entries(g):
            owners.append(g.pick[owner])
            values.append(vals)
            for out, name in zip(labels, names):
                out.append(g.block.reader.sample_label_values(name)[sets])
    empty = np.zeros(0, np.int64)
    return (np.concatenate(owners) if owners else empty,
            [np.concatenate(v) if v else np.zeros(0, object) for v in labels],
            np.concatenate(values) if values else empty)


def used_sample_labels(blocks: BlockCache, r: Rows, name: str | None) -> set[str]:
    """The sample label names the rows' kept samples carry or, given `name`, that label's values."""
    found: set[str] = set()
    for g in _groups(blocks, r):
        sets = np.unique(np.concatenate([s for _, _, s, _ in _entries(g)] or [np.zeros(0, np.int64)]))
        if name is None:
            found.update(g.block.reader.sample_label_names(sets).tolist())
        else:
            found.update(v for v in np.unique(g.block.reader.sample_label_values(name)[sets].astype(str)).tolist()
                         if v)
    return found


def rows_with_samples(blocks: BlockCache, r: Rows) -> np.ndarray:
    """Per row: whether any of its samples is kept by its filter."""
    found = np.zeros(len(r.row), bool)
    for g in _groups(blocks, r):
        for owner, _, _, _ in _entries(g):
            found[g.pick[np.unique(owner)]] = True
    return found
