"""The symbols, stack tree and per-profile (stack node, label set) values of chosen profiles, gathered
from pprof sources (to write a block) or from stored blocks (to compact them or render a merge).

Either way the result is one `Gathered`: symbols de-duplicated across all inputs (see `symbols`), one
parent-pointer stack tree over global frames, and one row per distinct (profile, node, label set) with
its summed value, ordered by profile. Everything is vectorised; loops run once per input.

Compaction stages its blocks instead (`stage_blocks`): the same symbols and tree, merged a batch of
blocks at a time, and the entries in a spill file, read back a few profiles at a time in any order
(`Staged.entries`), so that what it holds does not grow with the entries of the job.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from flamewatch.pprof.model import Profile
from flamewatch.pprof.wire import expand_ranges
from flamewatch.storage.frames import build_stack_tree, forest_depths, merge_forests, row_codes
from flamewatch.storage.symbols import (
    SymbolPart,
    Symbols,
    merge_symbols,
    merge_symbols_in_batches,
    profiles_part,
    samples_stacks,
)


@dataclass(frozen=True, eq=False)
class Gathered:
    symbols: Symbols
    node_parent: np.ndarray  # int64, node 0 is the root
    node_frame: np.ndarray  # int64 global frame, -1 for the root
    owner: np.ndarray  # int64 output profile of each entry, ascending
    node: np.ndarray  # int64
    label_set: np.ndarray  # int64, 0 = no labels
    value: np.ndarray  # int64, or float64 when weighted
    n_profiles: int


class StoredProfiles(Protocol):
    """What gathering needs from a block reader."""

    @property
    def symbol_part(self) -> SymbolPart: ...
    @property
    def node_parent(self) -> np.ndarray: ...
    @property
    def node_location(self) -> np.ndarray: ...
    @property
    def node_depth(self) -> np.ndarray: ...
    def sample_entries(self, rows: np.ndarray, weights: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
    def entry_parts(self, rows: np.ndarray, weights: np.ndarray | None = None, *, owners: bool = True,
                    label_sets: bool = True) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]: ...
    def release_entries(self) -> None: ...
    def release_symbols(self) -> None: ...
    def release_stacks(self) -> None: ...


def from_profiles(sources: Sequence[Profile], owners: Sequence[Sequence[int]],
                  values: Sequence[Sequence[np.ndarray]]) -> Gathered:
    """Source i's samples carry `values[i][j]` for output profile `owners[i][j]`."""
    symbols = merge_symbols([profiles_part(sources)])  # all sources as one part: one pass, not one each
    stacks = samples_stacks(sources)  # walked location by location: the frames are never expanded
    tree = build_stack_tree(stacks.offsets, stacks.locations, len(symbols.frames["function"]),
                            runs=(symbols.frame_maps[0][stacks.frame_first], stacks.frame_count))
    n_samples = np.array([len(p.samples) for p in sources], np.int64)
    entry_source = np.repeat(np.arange(len(sources)), [len(o) for o in owners])
    entry_owner = np.array([o for src in owners for o in src], np.int64)
    samples = expand_ranges((np.cumsum(n_samples) - n_samples)[entry_source], n_samples[entry_source])
    value = np.concatenate([np.asarray(v) for src in values for v in src]) if len(entry_owner) else \
        np.zeros(0, np.int64)
    entries = (np.repeat(entry_owner, n_samples[entry_source]), tree.leaf[samples],
               symbols.label_set_maps[0][1:][samples], value)
    return _aggregate(symbols, tree.parent, tree.frame, [entries], 1 + int(entry_owner.max(initial=-1)))


def from_blocks(parts: Sequence[tuple[StoredProfiles, np.ndarray]],
                weights: Sequence[np.ndarray | None] | None = None, one_profile: bool = False,
                set_masks: Sequence[np.ndarray | None] | None = None) -> Gathered:
    """The given rows of the given blocks, as consecutive output profiles in the order given (or, with
    `one_profile`, all summed into profile 0); `weights[i]` scales the values of part i's rows, and
    `set_masks[i]`, when given, keeps only the values of part i under label sets it marks True. Compaction
    uses `stage_blocks` instead, which holds less at once."""
    readers = [r for r, _ in parts]
    symbols = merge_symbols([r.symbol_part for r in readers])
    picked, used = [], []
    start = 0
    for i, (reader, rows) in enumerate(parts):
        rows = np.asarray(rows, np.int64)
        owner, nodes, sets, values = reader.sample_entries(rows, None if weights is None else weights[i])
        owner = np.zeros(len(nodes), np.int64) if one_profile else start + owner
        if set_masks is not None and set_masks[i] is not None:
            keep = set_masks[i][sets]
            owner, nodes, sets, values = owner[keep], nodes[keep], sets[keep], values[keep]
        picked.append((owner, nodes, symbols.label_set_maps[i][sets], values))
        mask = np.zeros(len(reader.node_parent), bool)
        mask[nodes] = True
        used.append(mask)
        start += len(rows)
    frames = [np.where(r.node_location >= 0, m[np.maximum(r.node_location, 0)] if len(m) else -1, -1)
              for r, m in zip(readers, symbols.frame_maps)]
    tree, node_maps = merge_forests([r.node_parent for r in readers], frames, [r.node_depth for r in readers], used)
    entries = [(o, m[n], s, v) for (o, n, s, v), m in zip(picked, node_maps)]
    del picked  # `_aggregate` frees the entries as it concatenates them
    return _aggregate(symbols, tree.parent, tree.frame, entries, 1 if one_profile else start)


def _aggregate(symbols: Symbols, parent: np.ndarray, frame: np.ndarray, parts: list, n_profiles: int) -> Gathered:
    """One row per distinct (owner, node, label set) with its summed value; zero values are dropped.
    `parts` is emptied: its arrays are let go of once concatenated."""
    cols = [np.concatenate([np.asarray(p[c]) for p in parts]) if parts else np.zeros(0, np.int64) for c in range(4)]
    parts.clear()
    owner, node, label_set, value = _summed(*cols)
    return Gathered(symbols, parent.astype(np.int64), frame.astype(np.int64), owner, node, label_set, value, n_profiles)


def _summed(owner: np.ndarray, node: np.ndarray, label_set: np.ndarray, value: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(owner, node, label set, summed value) of each distinct (owner, node, label set), in that order;
    zero values are dropped first."""
    dtype = np.result_type(np.int64, value.dtype)
    if not (keep := value != 0).all():  # no copies when, as usual, no value is zero
        owner, node, label_set, value = owner[keep], node[keep], label_set[keep], value[keep]
    del keep
    # codes in lexicographic order of (owner, node, label set): one 1-D sort of packed keys, and the
    # distinct rows come out ordered by profile as they must
    inverse, first = row_codes([owner, node, label_set])
    sums = np.zeros(len(first), dtype)
    np.add.at(sums, inverse, value.astype(dtype, copy=False))
    return owner[first].astype(np.int64), node[first].astype(np.int64), label_set[first].astype(np.int64), sums


# ------------------------------------------------------------------------------------------ staging

# Blocks whose symbols, and then stack trees, are merged at once in `stage_blocks`: fewer means less
# held (a flush block's decoded symbols are ~0.2 MiB), more means less merging again of what the
# batches before made.
STAGE_BATCH = 32


class _Spill:
    """Entries appended block by block to an unnamed temporary file and read back a few profiles at a time,
    so that the entries of a whole compaction job wait on disk (20 bytes each) and not in memory."""

    _RECORD = np.dtype([("node", "<i8"), ("label_set", "<i4"), ("value", "<i8")])

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="flamewatch-entries-")  # noqa: SIM115 - closed by `close`
        self.size = 0

    def append(self, node: np.ndarray, label_set: np.ndarray, value: np.ndarray) -> None:
        records = np.empty(len(node), self._RECORD)
        records["node"], records["label_set"], records["value"] = node, label_set, value
        records.tofile(self._file)
        self.size += len(records)

    def take(self, starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(node, label set, value) of `counts[i]` entries from `starts[i]`, one run after another. Read,
        not mapped: a mapping counts every page it touches (and the kernel maps 64 KiB around each) as
        the process's memory, and a few profiles' entries from hundreds of blocks touched 60 MiB."""
        records = np.empty(int(counts.sum()), self._RECORD)
        self._file.flush()
        out, size, at = memoryview(records).cast("B"), self._RECORD.itemsize, 0
        for start, count in zip(starts.tolist(), counts.tolist()):  # one step per profile, not per entry
            if count:
                if os.preadv(self._file.fileno(), [out[at: at + count * size]], start * size) != count * size:
                    raise OSError("the entry spill file ended early")
                at += count * size
        return records["node"], records["label_set"].astype(np.int64), records["value"]

    def close(self) -> None:
        self._file.close()


@dataclass(frozen=True, eq=False)
class Staged:
    """Chosen rows of stored blocks ready to be written a few profiles at a time: their merged symbols and
    stack tree in memory, their entries in a spill file (`entries`). Close it when done."""

    symbols: Symbols
    node_parent: np.ndarray  # int64, node 0 is the root
    node_frame: np.ndarray  # int64 global frame, -1 for the root
    row_entries: np.ndarray  # int64 per input row (the parts' rows one after another): its entries stored
    _row_start: np.ndarray  # int64 per input row: its first entry in the spill
    _node_map: np.ndarray  # int64 global node of each input node (the parts' nodes one after another)
    _spill: _Spill

    def entries(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(entries per row, node, label set, value) of the given input rows as consecutive profiles:
        one entry per distinct (node, label set) of a row, zero values dropped, in row order."""
        rows = np.asarray(rows, np.int64)
        counts = self.row_entries[rows]
        node, label_set, value = self._spill.take(self._row_start[rows], counts)
        owner, node, label_set, value = _summed(np.repeat(np.arange(len(rows)), counts), self._node_map[node],
                                                label_set, value)
        return np.bincount(owner, minlength=len(rows)), node, label_set, value

    def close(self) -> None:
        self._spill.close()


def stage_blocks(parts: Sequence[tuple[StoredProfiles, np.ndarray]]) -> Staged:
    """`from_blocks` for compaction, with the same symbols, tree and entries, holding less at once: blocks
    are taken `STAGE_BATCH` at a time, their symbols, then their stack trees, merged with what the batches
    before made and let go of; their entries, decoded one block at a time, go to a spill file until
    `Staged.entries` asks for a few profiles' worth."""
    readers = [r for r, _ in parts]
    symbols = merge_symbols_in_batches(_symbol_parts(readers), STAGE_BATCH)
    spill = _Spill()
    try:
        forest, counts, starts, used, node_base = _Forest(), [], [], [], 0
        for i, (reader, rows) in enumerate(parts):
            used.append(_spill_entries(spill, reader, rows, symbols.label_set_maps[i], node_base, counts, starts))
            node_base += len(used[-1])
            if len(used) == STAGE_BATCH or i == len(parts) - 1:
                batch = range(i + 1 - len(used), i + 1)
                forest.add([readers[j] for j in batch], [symbols.frame_maps[j] for j in batch], used)
                used = []
        return Staged(symbols, forest.parent, forest.frame, _cat(counts), _cat(starts), forest.node_map(), spill)
    except BaseException:
        spill.close()
        raise


def _spill_entries(spill: _Spill, reader: StoredProfiles, rows: np.ndarray, set_map: np.ndarray, node_base: int,
                   counts: list[np.ndarray], starts: list[np.ndarray]) -> np.ndarray:
    """Put the rows' entries in the spill, a row group at a time, their nodes counted from `node_base` and
    their label sets global; append each row's entry count and first entry to `counts` and `starts`.
    Returns which of the block's nodes the entries use."""
    rows = np.asarray(rows, np.int64)
    count, start = np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64)
    used = np.zeros(len(reader.node_parent), bool)
    for owner, nodes, sets, values in reader.entry_parts(rows):
        reader.release_entries()  # re-merging an hour block peaked at 435 MiB with all its groups decoded; 208
        count += np.bincount(owner, minlength=len(rows))
        first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if len(owner) else np.zeros(0, np.int64)
        start[owner[first]] = spill.size + first  # each row's entries are consecutive
        spill.append(nodes.astype(np.int64) + node_base, set_map[sets], values)
        used[nodes] = True
    counts.append(count)
    starts.append(start)
    return used


class _Forest:
    """Blocks' stack trees merged a batch at a time into one, each batch with the tree the ones before made
    (all of whose nodes are kept): the same tree as one `merge_forests` of them all, since a node's id is
    the rank of (its parent's id, its frame) among its level's, while holding one batch's trees."""

    def __init__(self) -> None:
        self.parent = np.array([-1], np.int64)  # the tree so far, at first a root alone
        self.frame = np.array([-1], np.int64)
        self._steps: list[np.ndarray] = []  # per batch: where the tree before it went in the tree after it
        self._maps: list[list[np.ndarray]] = []  # per batch, per block: its nodes in the tree after the batch

    def add(self, readers: Sequence[StoredProfiles], frame_maps: Sequence[np.ndarray],
            used: list[np.ndarray]) -> None:
        frames = [np.where(r.node_location >= 0, m[np.maximum(r.node_location, 0)] if len(m) else -1, -1)
                  for r, m in zip(readers, frame_maps)]
        tree, maps = merge_forests([self.parent, *(r.node_parent for r in readers)], [self.frame, *frames],
                                   [forest_depths(self.parent), *(r.node_depth for r in readers)],
                                   [np.ones(len(self.parent), bool), *used])
        for r in readers:
            r.release_stacks()
        self._steps.append(maps[0])
        self._maps.append(maps[1:])
        self.parent, self.frame = tree.parent.astype(np.int64), tree.frame.astype(np.int64)

    def node_map(self) -> np.ndarray:
        """The final tree's node of every block node (-1: unused), the blocks' nodes one after another."""
        chain = np.arange(len(self.parent))  # from the tree after a batch to the final tree
        out: list[np.ndarray] = []
        for step, maps in zip(reversed(self._steps), reversed(self._maps)):
            out = [np.where(m >= 0, chain[np.maximum(m, 0)], -1) for m in maps] + out
            chain = chain[step]
        return _cat(out)


def _symbol_parts(readers: Sequence[StoredProfiles]) -> Iterator[SymbolPart]:
    """Each block's symbols, which the block lets go of once they are taken."""
    for r in readers:
        part = r.symbol_part
        r.release_symbols()
        yield part


def _cat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, np.int64)
