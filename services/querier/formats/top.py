"""The top format: one row per function name with its self and total value, heaviest first.

Heaviest is by absolute value, so a comparison's (`go tool pprof -diff_base`) negative rows rank too.

A function's total counts each stack once even when the function recurses: only nodes with no ancestor
of the same name contribute their total.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flamewatch.querier.calltree import (
    CallTree,
    as_int,
    compact_names,
    depth_levels,
    depths,
    layout,
    subtree_sums,
)


def render_top(tree: CallTree, max_nodes: int) -> dict[str, Any]:
    """At most `max_nodes` rows sorted by |self| desc, |total| desc, name; the root is not a row."""
    names, name_index = compact_names(tree)
    depth = depths(tree)
    self_value = as_int(tree.self_value)
    total = subtree_sums(tree.parent, depth_levels(depth), self_value)
    outermost = ~_has_namesake_ancestor(tree, name_index, depth)
    outermost[0] = False
    name_self = _sum_by(name_index[1:], self_value[1:], len(names))
    name_total = _sum_by(name_index[outermost], total[outermost], len(names))
    rows = np.flatnonzero(np.bincount(name_index[1:], minlength=len(names)))
    # By absolute value: in a comparison (negative values) the biggest improvements rank with the regressions.
    rows = rows[np.lexsort((rows, -np.abs(name_total[rows]), -np.abs(name_self[rows])))][:max_nodes]
    entries = zip(names[rows].tolist(), name_self[rows].tolist(), name_total[rows].tolist(), strict=True)
    return {"total": int(total[0]), "entries": [{"name": n, "self": s, "total": t} for n, s, t in entries]}


def _sum_by(group: np.ndarray, values: np.ndarray, groups: int) -> np.ndarray:
    result = np.zeros(groups, np.int64)
    np.add.at(result, group, values)
    return result


def _has_namesake_ancestor(tree: CallTree, name_index: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Per node: does a proper ancestor (other than the root) have the same name?

    Lay the nodes out with width = subtree size: a node's span then contains exactly its descendants'
    spans. Within one name, sorted by (left edge, depth) so ancestors come first, a node has a namesake
    ancestor exactly when an earlier span of that name reaches at least as far right as its own.
    """
    size = subtree_sums(tree.parent, depth_levels(depth), np.ones(len(tree), np.int64))
    left = layout(tree, size, np.zeros(len(tree), np.int64)).x
    group = np.where(np.arange(len(tree)) == 0, -1, name_index)
    order = np.lexsort((depth, left, group))
    right = (left + size)[order]
    # Shifting each name's spans past every earlier name's lets one running maximum serve all names.
    run = np.cumsum(np.r_[True, group[order][1:] != group[order][:-1]])
    reach = np.maximum.accumulate(right + run * (len(tree) + 1)) - run * (len(tree) + 1)
    result = np.empty(len(tree), bool)
    result[order] = np.r_[False, reach[:-1] >= right[1:]] & np.r_[False, run[1:] == run[:-1]]
    return result
