"""What changed between two selections, function by function (`flamewatch.changes.stats` does the
statistics; this module reads the stored profiles).

Each stored profile is one observation: its kept samples are summed per function path (as a merge
does, without adding the profiles together), giving a sparse (profiles x paths) matrix. A function's
self value in a profile is the sum over the paths ending in it; its total value the sum over the paths
it appears on, once per path however deep it recurses: both are one sparse product with a (paths x
names) matrix, built one depth level at a time (the only Python loop runs over depth). Shares divide by
each profile's total.
"""

from __future__ import annotations

import numpy as np

from flamewatch.querier import deadline
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.calltree import ROOT_NAME
from flamewatch.querier.merging import _SYMBOLIZE_BATCH, Rows, _batches, _entries, _groups
from flamewatch.querier.paths import with_ancestors
from flamewatch.querier.symbolization import QuerySymbols


def function_shares(blocks: BlockCache, rows: Rows, granularity: str = "functions",
                    symbols: QuerySymbols | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(names, self shares, total shares): per row of `rows` and per function name, the share of the
    row's total; rows whose kept samples sum to nothing are all zeros."""
    from scipy import sparse  # at the first comparison: it takes a while to import, and few queries need it

    per_path = _per_path(blocks, rows, granularity, symbols)
    parent, name, table = blocks.paths.arrays()
    used = np.flatnonzero(per_path.getnnz(axis=0))
    kept = with_ancestors(parent[: per_path.shape[1]], used)
    names_used, name_of = np.unique(name[kept], return_inverse=True)
    name_of = name_of.reshape(-1)
    names = table.take(names_used).to_numpy(zero_copy_only=False)
    own = sparse.csr_matrix((np.ones(len(kept)), (np.arange(len(kept)), name_of)),
                            shape=(len(kept), len(names_used)))
    chains = _chains(parent, kept, name_of, len(names_used))
    values = per_path[:, kept]
    profile_totals = np.asarray(values.sum(axis=1)).reshape(-1)
    scale = sparse.diags(np.divide(1.0, profile_totals, out=np.zeros_like(profile_totals),
                                   where=profile_totals != 0))
    self_share = (scale @ values @ own).toarray()
    total_share = (scale @ values @ chains).toarray()
    real = names != ROOT_NAME
    return names[real], self_share[:, real], total_share[:, real]


def _per_path(blocks: BlockCache, r: Rows, granularity: str, symbols: QuerySymbols | None):
    from scipy import sparse

    owners, columns, values = [], [], []
    for batch in _batches(_groups(blocks, r), _SYMBOLIZE_BATCH if symbols is not None else 1):  # as a merge reads
        if symbols is not None:
            symbols.prepare([g.block.reader for g in batch], [g.block.tenant for g in batch])
        for g in batch:
            node_paths = g.block.paths(granularity, symbols)
            for owner, nodes, _, vals in _entries(g, owners=True):
                owners.append(g.pick[owner])
                columns.append(node_paths[nodes])
                values.append(vals.astype(np.float64))
        del batch
    width = len(blocks.paths)
    if not owners:
        return sparse.csr_matrix((len(r.row), width))
    return sparse.csr_matrix((np.concatenate(values), (np.concatenate(owners), np.concatenate(columns))),
                             shape=(len(r.row), width))  # duplicates (one path, one profile) are summed


def _chains(parent: np.ndarray, kept: np.ndarray, name_of: np.ndarray, n_names: int):
    """Per kept path: 1 for every name on its chain from the root (each name once, however often it recurses).

    The (path, ancestor) pairs are walked one step up at a time for all paths together: as many steps as
    the deepest path is deep."""
    position = np.full(len(parent), -1, np.int64)
    position[kept] = np.arange(len(kept))
    local_parent = np.where(parent[kept] >= 0, position[np.maximum(parent[kept], 0)], -1)
    rows, cols = [], []
    at = node = np.arange(len(kept))
    while len(node):
        deadline.check()
        rows.append(at)
        cols.append(name_of[node])
        up = local_parent[node]
        climbing = up >= 0
        at, node = at[climbing], up[climbing]
    from scipy import sparse

    chains = sparse.csr_matrix((np.ones(sum(map(len, rows))), (np.concatenate(rows), np.concatenate(cols))),
                               shape=(len(kept), n_names))
    chains.data[:] = 1.0  # summed duplicates (recursion) count once
    return chains
