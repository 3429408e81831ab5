"""Turn a pprof profile's stacks into frames, and frames of many profiles into one stack tree.

A frame is one line of one location: a location with inlined functions becomes several frames,
innermost first, exactly as pprof orders its lines. Stacks are stored as a parent-pointer tree whose
nodes are (parent node, frame), built in one walk by the pprof reader's extension (`build_stack_tree`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flamewatch.pprof import _reader
from flamewatch.pprof.wire import expand_ranges


def rows_of(ids: np.ndarray, table_ids: np.ndarray) -> np.ndarray:
    """Row of each id in a table of unique ids (validated beforehand to exist)."""
    order = np.argsort(table_ids, kind="stable")
    return order[np.searchsorted(table_ids, ids, sorter=order)]


def forest_depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every node of a forest (roots have parent -1), by pointer jumping: O(n log depth)."""
    is_root = parent < 0
    jump = np.where(is_root, np.arange(len(parent)), parent)
    depth = (~is_root).astype(np.int64)
    while not is_root[jump].all():
        depth = depth + depth[jump]
        jump = jump[jump]
    return depth


@dataclass(frozen=True, eq=False)
class StackTree:
    parent: np.ndarray  # int64, node 0 is the root with parent -1
    frame: np.ndarray  # int64, -1 for the root
    leaf: np.ndarray  # int64 node of each input stack


def build_stack_tree(offsets: np.ndarray, items: np.ndarray, n_frames: int,
                     runs: tuple[np.ndarray, np.ndarray] | None = None) -> StackTree:
    """A trie over stacks given leaf first (pprof order): stack i is items[offsets[i]:offsets[i+1]], each item
    a frame in [0, n_frames), or, given `runs` (first, count), a location l standing for the frames
    first[l]..first[l] + count[l] - 1, innermost first (a location's lines), so stacks need not be expanded.

    Node 0 is the root; then come the nodes of each depth in turn, those of one depth sorted by parent,
    then frame. Built by the pprof reader's extension (`stacktree.rs`): one walk over the frames with a
    hash map from (parent, frame) to node, where numpy needed a sort of every stack still live per depth."""
    run_arrays = () if runs is None else tuple(np.ascontiguousarray(r, np.int64) for r in runs)
    parent, frame, leaf = _reader.stack_tree(np.ascontiguousarray(offsets, np.int64),
                                             np.ascontiguousarray(items, np.int64), n_frames + 1, *run_arrays)
    return StackTree(*(np.frombuffer(column, np.int64) for column in (parent, frame, leaf)))


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of an int64 matrix and each row's index among them (like np.unique(axis=0), but
    in the order of one uint64 hash per row, `row_hash`). The pprof reader's extension finds them with a
    hash map (`rows.rs`); when two different rows share a hash, the exact method (np.unique) answers."""
    if len(rows) == 0:
        return rows, np.zeros(0, np.int64)
    found = _reader.unique_rows(np.ascontiguousarray(rows, np.int64))
    if found is None:
        unique, inverse = np.unique(rows, axis=0, return_inverse=True)
        return unique, inverse.reshape(-1)
    first, inverse = (np.frombuffer(column, np.int64) for column in found)
    return rows[first], inverse


def row_hash(rows: np.ndarray) -> np.ndarray:
    """The uint64 hash of each row of an int64 matrix that orders `unique_rows` (the extension computes
    the same): a SplitMix64-style mix of its columns in turn."""
    h = np.full(len(rows), 0x9E3779B97F4A7C15, np.uint64)
    for column in rows.T.astype(np.uint64):
        h = (h ^ column) * np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return h


def row_codes(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per row of the integer columns (first column most significant), its index among the distinct
    rows in lexicographic order, and a row index of each distinct row. The columns are packed into
    one int64 key (mixed radix over each column's range) when their ranges fit, so this is one 1-D
    sort; else it is np.unique(axis=0)."""
    columns = [np.asarray(c, np.int64) for c in columns]
    if not len(columns[0]):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    key, radix = np.zeros(len(columns[0]), np.int64), 1
    for c in columns:
        low, span = int(c.min()), int(c.max()) - int(c.min()) + 1
        radix *= span
        if radix >= 2**62:
            _, first, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_index=True, return_inverse=True)
            return inverse.reshape(-1), first
        key = key * span + (c - low)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return inverse.reshape(-1), first


def sums_by(columns: Sequence[np.ndarray], values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A row index of each distinct row of the integer columns (lexicographic order, as `row_codes`) and
    the sum of the int64 `values` of its rows, added as integers: exact, whatever order they come in."""
    code, first = row_codes(columns)
    sums = np.zeros(len(first), np.int64)
    np.add.at(sums, code, np.asarray(values, np.int64))
    return first, sums


def run_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values (sorted) and each element's index among them, for an array whose equal
    values mostly come in runs (such as the block of each profile row): only the run heads are sorted."""
    if not len(values):
        return values[:0], np.zeros(0, np.int64)
    starts = np.r_[0, np.flatnonzero(values[1:] != values[:-1]) + 1]
    distinct, head_codes = np.unique(values[starts], return_inverse=True)
    return distinct, np.repeat(head_codes.reshape(-1), np.diff(np.r_[starts, len(values)]))


def run_firsts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values (sorted) and where each first occurs, as `np.unique(values, return_index=True)`
    gives them, for an array whose equal values mostly come in runs: only the run heads are sorted."""
    if not len(values):
        return values[:0], np.zeros(0, np.int64)
    starts = np.r_[0, np.flatnonzero(values[1:] != values[:-1]) + 1]
    distinct, first = np.unique(values[starts], return_index=True)  # the first of equal heads: a stable sort
    return distinct, starts[first]


def unique_ragged(heads: np.ndarray, offsets: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                                        np.ndarray, np.ndarray]:
    """Distinct rows where a row is `heads[i]` followed by its run of `items[offsets[i]:offsets[i+1]]`.

    Returns the distinct rows' heads, their run offsets and items, and each input row's index among them.
    Rows are grouped by run length and each group is one matrix for `unique_rows`, so memory stays
    proportional to the input however long the longest run is; the loop runs once per distinct length.
    """
    lengths = np.diff(offsets)
    inverse = np.zeros(len(heads), np.int64)
    out_heads, out_lengths, out_items = [], [], []
    base = 0
    for length in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == length)
        run = items[expand_ranges(offsets[rows], np.full(len(rows), length))].reshape(len(rows), -1)
        unique, which = unique_rows(np.concatenate([heads[rows], run], axis=1))
        inverse[rows] = base + which
        out_heads.append(unique[:, : heads.shape[1]])
        out_items.append(unique[:, heads.shape[1]:].reshape(-1, items.shape[1]))
        out_lengths.append(np.full(len(unique), length, np.int64))
        base += len(unique)
    if not out_heads:
        return heads[:0], np.zeros(1, np.int64), items[:0], inverse
    run_lengths = np.concatenate(out_lengths)
    return (np.concatenate(out_heads), np.concatenate([[0], np.cumsum(run_lengths)]).astype(np.int64),
            np.concatenate(out_items), inverse)


def merge_forests(parents: list[np.ndarray], frames: list[np.ndarray], depths: list[np.ndarray],
                  used: list[np.ndarray]) -> tuple[StackTree, list[np.ndarray]]:
    """One stack tree from several (node 0 of each is its root), keeping the `used` nodes and their
    ancestors; frames are already global. Returns the tree and, per input, each node's new id (-1 when
    dropped). Level by level, a node's id is the rank of (parent's new id, frame) among the level's pairs."""
    sizes = np.array([len(p) for p in parents], np.int64)
    base = np.cumsum(sizes) - sizes
    parent = np.concatenate([np.where(p < 0, -1, p + b) for p, b in zip(parents, base)]) if parents else \
        np.full(0, -1, np.int64)
    frame = np.concatenate(frames).astype(np.int64) if frames else np.zeros(0, np.int64)
    depth = np.concatenate(depths).astype(np.int64) if depths else np.zeros(0, np.int64)
    keep = np.concatenate(used).astype(bool) if used else np.zeros(0, bool)
    keep[depth == 0] = True
    order = np.argsort(depth, kind="stable")
    by_depth = np.split(order, np.cumsum(np.bincount(depth))[:-1]) if len(depth) else [order]
    for level in reversed(by_depth[1:]):
        keep[parent[level[keep[level]]]] = True
    ids = np.full(len(parent), -1, np.int64)
    ids[depth == 0] = 0
    out_parent, out_frame, count = [np.array([-1])], [np.array([-1])], 1
    width = int(frame.max(initial=0)) + 2
    for level in by_depth[1:]:
        level = level[keep[level]]
        key = ids[parent[level]] * width + frame[level]
        unique, inverse = np.unique(key, return_inverse=True)
        ids[level] = count + inverse.reshape(-1)
        out_parent.append(unique // width)
        out_frame.append(unique % width)
        count += len(unique)
    tree = StackTree(np.concatenate(out_parent), np.concatenate(out_frame), np.zeros(0, np.int64))
    return tree, np.split(ids, np.cumsum(sizes)[:-1])
