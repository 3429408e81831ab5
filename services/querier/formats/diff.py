"""The diff format: two trees aligned on the union of their paths, in the diff flamegraph encoding.

Per node seven numbers: left x_delta, left total, left self, right x_delta, right total, right self and
the name index. Each side is laid out on its own: its x_delta is the gap since the end of the previous
node of the level measured in that side's values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flamewatch.querier.calltree import (
    CallTree,
    align_trees,
    as_int,
    compact_names,
    layout,
    levels,
    subtree_sums,
    truncate_columns,
)
from flamewatch.querier.formats.flamegraph import encode_level


def render_diff(left: CallTree, right: CallTree, max_nodes: int) -> dict[str, Any]:
    """Left and right merged by path and truncated by left total + right total."""
    union, columns = align_trees([left, right])
    small, columns = truncate_columns(union, columns, max_nodes)
    names, name_index = compact_names(small)
    self_value = as_int(columns)
    total = subtree_sums(small.parent, levels(small), self_value)
    placed = layout(small, total, name_index)
    rows = [encode_level(nodes, [placed.x, total, self_value], name_index) for nodes in placed.levels]
    return {
        "names": names.tolist(),
        "levels": rows,
        "total": int(total[0].sum()),
        "max_self": int(np.max(np.abs(self_value))),
        "left_ticks": int(total[0, 0]),
        "right_ticks": int(total[0, 1]),
    }
