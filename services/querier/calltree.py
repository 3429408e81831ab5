"""Call trees keyed by frame name: merging per-block stack trees, totals, truncation and layout.

This is the querier's hot path between "values summed per stack node" and rendering, so every operation
is vectorised with numpy. The only Python loops run over tree depth (one numpy operation over all nodes
of a level per iteration), never over nodes, samples or stacks.

Invariants of a `CallTree`: node 0 is the root and `parent[i] < i` for every other node. Values may be
negative: a `go tool pprof -diff_base` comparison stores the base profile's samples negated. So nodes
are ranked by weight, the sum of the absolute self values in their subtree, which (unlike a signed
total) never exceeds the parent's; what truncation folds into `other` is the signed sum, so every kept
node keeps its exact total.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from flamewatch.storage.frames import forest_depths as parent_depths

ROOT_NAME = "total"
OTHER_NAME = "other"


@dataclass(frozen=True)
class CallTree:
    """A call tree keyed by frame name. Node 0 is the root (name "total"); parent[i] < i for i > 0."""

    names: np.ndarray  # object or str array: the name table
    parent: np.ndarray  # int64, parent[0] == -1
    name: np.ndarray  # int64 index into names per node
    self_value: np.ndarray  # int64 (or float64 for averaged gauges) self value per node

    def __len__(self) -> int:
        return len(self.parent)


@dataclass(frozen=True)
class Layout:
    """Where each node sits when children are laid side by side inside their parent."""

    levels: list[np.ndarray]  # node ids per depth, left to right
    x: np.ndarray  # left edge per node, one column per width column


# --- depth and levels ---------------------------------------------------------------------------------


def depth_levels(depth: np.ndarray) -> list[np.ndarray]:
    """Node ids grouped by depth, each group in ascending id order."""
    if len(depth) == 0:
        return []
    # A small integer dtype lets numpy use radix sort, several times faster than sorting int64.
    order = np.argsort(depth.astype(np.min_scalar_type(depth.max())), kind="stable")
    return np.split(order, np.cumsum(np.bincount(depth))[:-1])


def depths(tree: CallTree) -> np.ndarray:
    """Depth of every node; the root is 0."""
    return parent_depths(tree.parent)


def levels(tree: CallTree) -> list[np.ndarray]:
    """Node ids grouped by depth."""
    return depth_levels(depths(tree))


def subtree_sums(parent: np.ndarray, by_depth: list[np.ndarray], values: np.ndarray) -> np.ndarray:
    """Per node: its value plus its descendants' values; `values` may have one column per measure."""
    result = np.array(values, copy=True)
    for level in reversed(by_depth[1:]):
        # np.add.at, not bincount: bincount sums through float64 and would round large int64 values.
        np.add.at(result, parent[level], result[level])
    return result


def totals(tree: CallTree) -> np.ndarray:
    """Per node total: self plus the totals of all descendants."""
    return subtree_sums(tree.parent, levels(tree), tree.self_value)


# --- names --------------------------------------------------------------------------------------------


def intern(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct strings of `keys` (object array) and each key's index into them.

    Arrow hashes the strings in C; np.unique would sort Python strings and is about ten times slower.
    Arrow orders by UTF-8 bytes, which is the same as Python's code point order.
    """
    # Imported by the first query rather than at start: pyarrow.compute takes ~0.15 s to import, and only
    # queries use it (tests/unit/test_lazy_imports.py keeps it so).
    import pyarrow.compute as pc

    encoded = pa.array(keys, type=pa.string()).dictionary_encode()
    order = pc.sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    names = encoded.dictionary.take(pa.array(order)).to_numpy(zero_copy_only=False)
    return names, rank[encoded.indices.to_numpy()]


def compact_names(tree: CallTree) -> tuple[np.ndarray, np.ndarray]:
    """Only the names the tree uses, sorted and distinct, and each node's index into them.

    Because the table is sorted, comparing name indexes compares names.
    """
    used, node_used = np.unique(tree.name, return_inverse=True)
    names, used_index = intern(np.asarray(tree.names, dtype=object)[used])
    return names, used_index[node_used]


# --- merging ------------------------------------------------------------------------------------------


def align_trees(trees: Sequence[CallTree]) -> tuple[CallTree, np.ndarray]:
    """The union of the trees' paths, and per node one self-value column per input tree.

    The returned tree's self values are the sum of the columns.
    """
    dtype = np.result_type(np.int64, *(t.self_value.dtype for t in trees))
    columns = [_one_hot_column(t.self_value.astype(dtype), i, len(trees)) for i, t in enumerate(trees)]
    return _merge(trees, columns, dtype)


def _one_hot_column(values: np.ndarray, column: int, width: int) -> np.ndarray:
    result = np.zeros((len(values), width), values.dtype)
    result[:, column] = values
    return result


def _merge(
    trees: Sequence[CallTree], columns: Sequence[np.ndarray], dtype: np.dtype
) -> tuple[CallTree, np.ndarray]:
    """The merged tree and its per-node value columns; the tree's self value is the columns' sum.

    Subtrees without any non-zero value are dropped; the merged name table is sorted and node ids grow
    with depth, siblings in name order.
    """
    if not trees:
        return _root_only(dtype), np.zeros((1, 0), dtype)
    parent = _concat_forest([t.parent for t in trees])
    values = np.concatenate(columns)
    by_depth = depth_levels(parent_depths(parent))
    keep = subtree_sums(parent, by_depth, (values != 0).any(axis=1).astype(np.int64)) > 0
    keep[by_depth[0]] = True
    by_depth = [level[keep[level]] for level in by_depth]
    names, name_id = _intern_tables(trees, by_depth[0])
    m_parent, m_name, ids = _merge_paths(parent, name_id, by_depth, len(names))
    merged = np.zeros((len(m_parent), values.shape[1]), dtype)
    kept = np.flatnonzero(keep)
    np.add.at(merged, ids[kept], values[kept])
    return CallTree(names, m_parent, m_name, merged.sum(axis=1)), merged


def _concat_forest(parents: Sequence[np.ndarray]) -> np.ndarray:
    """One parent array for all parts: ids shifted by each part's offset, roots kept at -1."""
    sizes = np.array([len(p) for p in parents], np.int64)
    offsets = np.repeat(np.cumsum(sizes) - sizes, sizes)
    parent = np.concatenate(parents).astype(np.int64)
    return np.where(parent < 0, -1, parent + offsets)


def _intern_tables(trees: Sequence[CallTree], roots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Name ids in one table: intern the trees' small name tables, not the nodes; roots are "total"."""
    tables = [np.asarray(t.names, dtype=object) for t in trees]
    names, ids = intern(np.append(np.concatenate(tables), ROOT_NAME))
    base = np.cumsum([0] + [len(t) for t in tables])
    name_id = np.concatenate([ids[b + np.maximum(np.asarray(t.name, np.int64), 0)] if len(table) else
                              np.full(len(t.name), ids[-1]) for t, table, b in zip(trees, tables, base)])
    name_id[roots] = ids[-1]
    return names, name_id


def _merge_paths(
    parent: np.ndarray, name_id: np.ndarray, by_depth: list[np.ndarray], n_names: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merged parent and name per merged node, and the merged id of every input node.

    Depth by depth, a node's merged id is the rank of (merged id of its parent, name id) among the
    level's distinct pairs, offset by the ids already used. So merged ids grow with depth (parent < id)
    and siblings get consecutive ids in name order.
    """
    ids = np.zeros(len(parent), np.int64)
    m_parent, m_name = [np.array([-1])], [name_id[by_depth[0][:1]]]
    next_id = 1
    for level in by_depth[1:]:
        pair, inverse = np.unique(ids[parent[level]] * n_names + name_id[level], return_inverse=True)
        ids[level] = next_id + inverse
        m_parent.append(pair // n_names)
        m_name.append(pair % n_names)
        next_id += len(pair)
    return np.concatenate(m_parent), np.concatenate(m_name), ids


def _root_only(dtype: np.dtype) -> CallTree:
    return CallTree(np.array([ROOT_NAME], object), np.array([-1]), np.array([0]), np.zeros(1, dtype))


def _with_self(tree: CallTree, self_value: np.ndarray) -> CallTree:
    return CallTree(tree.names, tree.parent, tree.name, self_value)


# --- truncation ---------------------------------------------------------------------------------------


def truncate(tree: CallTree, max_nodes: int) -> CallTree:
    """At most `max_nodes` nodes, counting the `other` nodes added; every kept node keeps its total.

    Kept are the nodes with the largest weights (the sum of the absolute self values in their subtree:
    the total when no value is negative; ties: shallower first, then lower id), a connected set from
    the root. A parent that lost children gets one child `other` whose self value is the (signed) sum
    of the dropped children's totals. The root and, if it has children, one `other` under it are always
    kept, so `max_nodes` below 2 may yield 2 nodes.
    """
    small, columns = truncate_columns(tree, tree.self_value[:, None], max_nodes)
    return tree if small is tree else _with_self(small, columns[:, 0])


def truncate_columns(tree: CallTree, columns: np.ndarray, max_nodes: int) -> tuple[CallTree, np.ndarray]:
    """`truncate` for a tree with several self-value columns; nodes rank by their weight in all columns."""
    if max_nodes < 1:
        raise ValueError(f"max_nodes must be at least 1, got {max_nodes}")
    if len(tree) <= max_nodes:
        return tree, columns
    depth = depths(tree)
    by_depth = depth_levels(depth)
    column_totals = subtree_sums(tree.parent, by_depth, columns)
    ranked = _rank(subtree_sums(tree.parent, by_depth, np.abs(columns).sum(axis=1)), depth, max_nodes)
    keep = np.zeros(len(tree), bool)
    keep[ranked[: _kept_count(tree.parent, ranked, max_nodes)]] = True
    return _fold_dropped(tree, columns, column_totals, keep)


def _rank(score: np.ndarray, depth: np.ndarray, max_nodes: int) -> np.ndarray:
    """The nodes that may be kept, best first, every parent before its children.

    Only nodes scoring at least the `max_nodes`-th best can be kept, so only those are sorted. A child
    never outscores its parent (weights, not signed totals) and ties go to the shallower node, so each
    prefix is connected.
    """
    threshold = np.partition(score, len(score) - max_nodes)[len(score) - max_nodes]
    candidates = np.flatnonzero(score >= threshold)
    return candidates[np.lexsort((candidates, depth[candidates], -score[candidates]))]


def _kept_count(parent: np.ndarray, ranked: np.ndarray, max_nodes: int) -> int:
    """The largest prefix of `ranked` that, with its `other` nodes, fits into `max_nodes`.

    Node p (rank r) needs an `other` for prefix sizes k in [r + 1, highest rank among its children]:
    a difference array over k counts the `other` nodes of every prefix size at once. The output size
    k + others(k) never decreases with k, so the answer is where it last fits.
    """
    m = len(ranked)
    rank = np.full(len(parent), m, np.int64)
    rank[ranked] = np.arange(m)
    last_child = np.full(len(parent), -1, np.int64)
    np.maximum.at(last_child, parent[1:], rank[1:])
    lost = ranked[last_child[ranked] > rank[ranked]]
    change = np.zeros(m + 2, np.int64)
    np.add.at(change, rank[lost] + 1, 1)
    np.add.at(change, np.minimum(last_child[lost], m) + 1, -1)
    sizes = np.arange(1, m + 1) + np.cumsum(change)[1 : m + 1]
    return max(1, int(np.searchsorted(sizes, max_nodes, side="right")))


def _fold_dropped(
    tree: CallTree, columns: np.ndarray, column_totals: np.ndarray, keep: np.ndarray
) -> tuple[CallTree, np.ndarray]:
    """The kept nodes, in their original order, plus one `other` per parent that lost children."""
    kept = np.flatnonzero(keep)
    new_id = np.cumsum(keep) - 1
    dropped = np.flatnonzero(~keep)
    dropped = dropped[keep[tree.parent[dropped]]]
    lost_parent, which = np.unique(tree.parent[dropped], return_inverse=True)
    other_values = np.zeros((len(lost_parent), columns.shape[1]), columns.dtype)
    np.add.at(other_values, which, column_totals[dropped])
    names, other_id = _with_name(tree.names, OTHER_NAME)
    kept_parent = np.where(tree.parent[kept] < 0, -1, new_id[tree.parent[kept]])
    parent = np.concatenate([kept_parent, new_id[lost_parent]])
    name = np.concatenate([tree.name[kept], np.full(len(lost_parent), other_id)])
    values = np.concatenate([columns[kept], other_values])
    return CallTree(names, parent, name, values.sum(axis=1)), values


def _with_name(names: np.ndarray, wanted: str) -> tuple[np.ndarray, int]:
    """The name table with `wanted` in it, and its index."""
    found = np.flatnonzero(np.asarray(names, dtype=object) == wanted)
    if len(found):
        return names, int(found[0])
    return np.append(np.asarray(names, dtype=object), wanted), len(names)


# --- layout -------------------------------------------------------------------------------------------


def layout(tree: CallTree, widths: np.ndarray, sibling_key: np.ndarray) -> Layout:
    """Left edges when each node's children are laid out from the parent's left edge, ordered by
    `sibling_key`, each as wide as its entry in `widths` (one column per measure, or 1-D).

    Level by level: sort the level by (parent's position, key), then offset each node by the running
    width of the siblings before it.
    """
    x = np.zeros(widths.shape, widths.dtype)
    position = np.zeros(len(tree), np.int64)
    ordered = []
    for level in levels(tree):
        level = level[np.lexsort((sibling_key[level], position[tree.parent[level]]))]
        position[level] = np.arange(len(level))
        if len(ordered):
            x[level] = x[tree.parent[level]] + _offsets_within_runs(tree.parent[level], widths[level])
        ordered.append(level)
    return Layout(ordered, x)


def _offsets_within_runs(run_key: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """Sum of the widths before each element within its run of equal `run_key`."""
    before = np.cumsum(widths, axis=0) - widths
    is_start = np.r_[True, run_key[1:] != run_key[:-1]]
    return before - before[is_start][np.cumsum(is_start) - 1]


def as_int(values: np.ndarray) -> np.ndarray:
    """Values as int64 for JSON: averaged gauges are floats and are rounded to the nearest integer."""
    if np.issubdtype(values.dtype, np.floating):
        return np.rint(values).astype(np.int64)
    return values.astype(np.int64, copy=False)
