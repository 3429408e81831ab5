"""The flamegraph format: the level encoding flamegraph UIs (Pyroscope's among them) draw directly.

`levels[d]` lists the nodes of depth d left to right, four numbers each: x_delta (gap since the end of
the previous node on the level, or since 0 for the first), total, self and an index into `names`.
Children are ordered by name and start at their parent's left edge, so a UI recovers x by running sums.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flamewatch.querier.calltree import (
    CallTree,
    as_int,
    compact_names,
    layout,
    levels,
    subtree_sums,
    truncate,
)


def render_flamegraph(tree: CallTree, max_nodes: int) -> dict[str, Any]:
    """The tree truncated to `max_nodes` nodes in the flamegraph level encoding."""
    small = truncate(tree, max_nodes)
    names, name_index = compact_names(small)
    self_value = as_int(small.self_value)
    total = subtree_sums(small.parent, levels(small), self_value)
    placed = layout(small, total, name_index)
    rows = [encode_level(nodes, [placed.x, total, self_value], name_index) for nodes in placed.levels]
    return {
        "names": names.tolist(),
        "levels": rows,
        "total": int(total[0]),
        "max_self": int(np.abs(self_value).max()),
    }


def encode_level(nodes: np.ndarray, sides: list[np.ndarray], name_index: np.ndarray) -> list[int]:
    """One level's flat row: per node and per side (x, total, self) as (x_delta, total, self), then
    the name index. `sides` holds x, total and self arrays of one or more columns each."""
    x, total, self_value = (np.reshape(side[nodes], (len(nodes), -1)) for side in sides)
    end = x + total
    x_delta = x - np.vstack([np.zeros_like(end[:1]), end[:-1]])
    per_side = np.stack([x_delta, total, self_value], axis=2).reshape(len(nodes), -1)
    return np.column_stack([per_side, name_index[nodes]]).ravel().tolist()
