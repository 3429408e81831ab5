"""The tree format: the truncated call tree as nested JSON objects, heaviest (by |total|) children first."""

from __future__ import annotations

from typing import Any

import numpy as np

from flamewatch.querier.calltree import CallTree, as_int, compact_names, levels, subtree_sums, truncate


def render_tree(tree: CallTree, max_nodes: int) -> dict[str, Any]:
    """The root as `{"name", "self", "total", "children": [...]}`, children by |total| desc, then name."""
    small = truncate(tree, max_nodes)
    names, name_index = compact_names(small)
    self_value = as_int(small.self_value)
    total = subtree_sums(small.parent, levels(small), self_value)
    fields = zip(names[name_index].tolist(), self_value.tolist(), total.tolist(), strict=True)
    nodes = [{"name": n, "self": s, "total": t, "children": []} for n, s, t in fields]
    order = np.lexsort((name_index, -np.abs(total), small.parent))
    # Nesting dicts needs one step per output node; truncation bounds them by max_nodes.
    for child, parent in zip(order.tolist(), small.parent[order].tolist(), strict=True):
        if parent >= 0:
            nodes[parent]["children"].append(nodes[child])
    return nodes[0]
