"""A block's entries and per-node sums for given profile rows: what tests read to check a block.

The querier folds a block's entries (`entry_parts`) into its path index and never needs them summed per stack
node, so this reading aid lives with the tests rather than in `BlockReader`.
"""

import numpy as np


def entries(reader, rows, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(stack node, self value) of every entry of the given profile rows; values float64 when weighted."""
    _, nodes, _, values = reader.sample_entries(np.asarray(rows, np.int64), weights)
    return nodes, values


def node_values(reader, rows, weights: np.ndarray | None = None) -> np.ndarray:
    """Self value per stack node of `reader` summed over profile rows; float64 when weighted."""
    nodes, values = entries(reader, rows, weights)
    out = np.zeros(len(reader.node_parent), values.dtype)
    np.add.at(out, nodes, values)
    return out
