"""The symbols, stack tree and per-profile (stack node, label set) values of chosen profiles, gathered
from pprof sources (to write a block) or from stored blocks (to compact them or render a merge).

Either way the result is one `Gathered`: symbols de-duplicated across all inputs (see `symbols`), one
parent-pointer stack tree over global frames, and one row per distinct (profile, node, label set) with
its summed value, ordered by profile. Everything is vectorised; loops run once per input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from flamewatch.pprof.model import Profile
from flamewatch.pprof.wire import expand_ranges
from flamewatch.storage.frames import build_stack_tree, merge_forests, row_codes
from flamewatch.storage.symbols import (
    SymbolPart,
    Symbols,
    merge_symbols,
    profiles_part,
    samples_frames,
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
    def release_entries(self) -> None: ...


def from_profiles(sources: Sequence[Profile], owners: Sequence[Sequence[int]],
                  values: Sequence[Sequence[np.ndarray]]) -> Gathered:
    """Source i's samples carry `values[i][j]` for output profile `owners[i][j]`."""
    symbols = merge_symbols([profiles_part(sources)])  # all sources as one part: one pass, not one each
    offsets, frames = samples_frames(sources)
    tree = build_stack_tree(offsets, symbols.frame_maps[0][frames], len(symbols.frames["function"]))
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
                set_masks: Sequence[np.ndarray | None] | None = None, release: bool = False,
                placement: np.ndarray | None = None) -> Gathered:
    """The given rows of the given blocks, as consecutive output profiles in the order given (or, with
    `one_profile`, all summed into profile 0; with `placement`, input row j, counting the parts' rows one
    after another, becomes output profile `placement[j]`); `weights[i]` scales the values of part i's rows, and
    `set_masks[i]`, when given, keeps only the values of part i under label sets it marks True. With
    `release`, each block lets go of the entries it decoded once they are taken (compaction reads each
    block once, and holding them all doubled its peak memory)."""
    readers = [r for r, _ in parts]
    symbols = merge_symbols([r.symbol_part for r in readers])
    picked, used = [], []
    start = 0
    for i, (reader, rows) in enumerate(parts):
        rows = np.asarray(rows, np.int64)
        owner, nodes, sets, values = reader.sample_entries(rows, None if weights is None else weights[i])
        if release:
            reader.release_entries()
        owner = np.zeros(len(nodes), np.int64) if one_profile else start + owner
        if placement is not None:
            owner = placement[owner]
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
    owner, node, label_set, value = cols
    del cols
    dtype = np.result_type(np.int64, value.dtype)
    if not (keep := value != 0).all():  # no copies when, as usual, no value is zero
        owner, node, label_set, value = owner[keep], node[keep], label_set[keep], value[keep]
    del keep
    # codes in lexicographic order of (owner, node, label set): one 1-D sort of packed keys, and the
    # distinct rows come out ordered by profile as they must
    inverse, first = row_codes([owner, node, label_set])
    sums = np.zeros(len(first), dtype)
    np.add.at(sums, inverse, value.astype(dtype, copy=False))
    return Gathered(symbols, parent.astype(np.int64), frame.astype(np.int64), owner[first].astype(np.int64),
                    node[first].astype(np.int64), label_set[first].astype(np.int64), sums, n_profiles)
