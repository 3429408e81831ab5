"""What the querier computes from stored blocks: merged call trees, gathered profiles for pprof,
per-sample-label totals and the sample labels in use.

Every function takes profile rows (row `row[i]` of block `block_id[i]`, whose object key is
`keys[block_id[i]]`) and, optionally, a sample filter per row (see `selection`). Rows are processed
in groups of one block and one filter, each group vectorised with numpy.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from flamewatch.querier import deadline
from flamewatch.querier.blocks import BlockCache, LoadedBlock
from flamewatch.querier.calltree import CallTree
from flamewatch.querier.formats.pprof import NO_NAMES, Header, Named
from flamewatch.querier.selection import Filter
from flamewatch.querier.symbolization import QuerySymbols, gathered_chains
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.frames import run_codes
from flamewatch.storage.gather import Gathered, from_blocks

GRANULARITIES = ("functions", "lines")


@dataclass(frozen=True, eq=False)
class Rows:
    """Profile rows to read, with what applies to each."""

    keys: Mapping[str, str]
    block_id: np.ndarray
    row: np.ndarray
    weights: np.ndarray | None = None
    filters: Sequence[Filter] = ((),)
    row_filter: np.ndarray | None = None  # index into filters per row; None: all filters[0]


@dataclass(frozen=True, eq=False)
class _Group:
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


def _groups(blocks: BlockCache, r: Rows) -> Iterator[_Group]:
    """The rows in groups of one block and one filter, block after block as the cache streams them: a
    group's block is let go of when the caller moves past it (see `blocks.BlockCache.stream`)."""
    row_filter = np.zeros(len(r.row), np.int64) if r.row_filter is None else r.row_filter
    block_index = run_codes(r.block_id)[1]  # rows come in runs of one block: no sort of every block id
    order = np.lexsort((r.row, row_filter, block_index))  # rows in block order: read as runs
    key = np.stack([block_index, row_filter], axis=1)[order]
    starts = np.flatnonzero(np.r_[True, (key[1:] != key[:-1]).any(axis=1)]) if len(order) else []
    picks = np.split(order, starts[1:]) if len(order) else []
    keys = [r.keys[r.block_id[pick[0]]] for pick in picks]  # a block's groups are consecutive
    stream = blocks.stream([*keys, *r.keys.values()])  # every key listed, so every missing one is named
    at, block = None, None
    for pick, wanted in zip(picks, keys):
        deadline.check()
        while at != wanted:
            at, block = next(stream)
        if block is not None:
            yield _Group(block, pick, r.row[pick], None if r.weights is None else r.weights[pick],
                         set_mask(block.reader, r.filters[row_filter[pick[0]]]))
    del block
    for _ in stream:  # the keys without rows; raises BlocksMissing when any block was missing
        pass


def _entries(g: _Group, owners: bool = True) -> Iterator[tuple[np.ndarray | None, np.ndarray, np.ndarray | None,
                                                               np.ndarray]]:
    """(row index within the group, node, label set, value) of the group's kept entries, one row group
    of the block at a time; without `owners`, the row indices (and label sets, when no filter needs
    them) are None."""
    for owner, nodes, sets, values in g.block.reader.entry_parts(g.rows, g.weights, owners=owners,
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


def path_sums(blocks: BlockCache, r: Rows, granularity: str = "functions",
              symbols: QuerySymbols | None = None) -> tuple[np.ndarray, dict[str, str]]:
    """The rows' kept samples summed per function path of `blocks.paths` (weighted as `merge_blocks`
    says), and the frames no debug information named (see `QuerySymbols.unnamed`). With `symbols`,
    frames stored as bare addresses are symbolized first, `_SYMBOLIZE_BATCH` blocks' at once. Blocks are
    read as the cache streams them and entries folded one row group at a time, so memory stays bounded by
    the cache and a batch of blocks, not the range."""
    merged = np.zeros(0, np.int64 if r.weights is None else np.float64)
    unnamed: dict[str, str] = {}
    for batch in _batches(_groups(blocks, r), _SYMBOLIZE_BATCH if symbols is not None else 1):
        if symbols is not None:
            symbols.prepare([g.block.reader for g in batch])
        for g in batch:
            node_paths = g.block.paths(granularity, symbols)  # may add paths, so the sum grows after it
            merged = _grown(merged, len(blocks.paths))
            sums = np.zeros(len(node_paths), merged.dtype)
            for _, nodes, _, values in _entries(g, owners=False):
                _fold(sums, nodes, values)
            np.add.at(merged, node_paths, sums)
            if symbols is not None:
                unnamed.update(symbols.unnamed(g.block.reader))
        del batch  # its blocks go before the next batch is fetched
    return _grown(merged, len(blocks.paths)), unnamed


# Blocks whose unsymbolized frames are asked of the symbolizer in one call (one call per query up to it).
_SYMBOLIZE_BATCH = 64


def _batches(groups: Iterator[_Group], blocks: int) -> Iterator[list[_Group]]:
    """The groups in lists of at most `blocks` blocks, a block's groups never split."""
    batch: list[_Group] = []
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
    exact = sums.dtype.kind == "f" or (
        len(values) > 0 and float(np.abs(values.astype(np.float64)).max()) * len(values) < _EXACT_IN_FLOAT)
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
        symbols.prepare([g.block.reader for g in groups])
        named = Named(*gathered_chains(symbols, gathered.symbols))
    return gathered, _header([(g.block.reader, g.rows) for g in groups]), named


def _header(parts: list[tuple[BlockReader, np.ndarray]]) -> Header:
    if not parts:
        return Header(0, 0, 0)
    cols = {c: np.concatenate([r.profiles.column(c).to_numpy()[rows] for r, rows in parts])
            for c in ("period", "time_ns", "duration_ns")}
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
