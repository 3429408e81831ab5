"""Where the querier's partial trees come from, and the one function that combines them.

A merge asks a `TreeSource` for the partial tree of some selected profile rows (their blocks, each row's
weight and sample filter) and adds the partials up with `combine`. The sources are `LocalBlocks`: the
blocks read through this querier's cache, folded per function path (`merging.path_sums`), and
`premerged.PreMergedTrees`: the trees the compactor merged ahead of time per series and hour, for the
rows that take such an hour whole (the engine chooses, `premerged.whole_hours`). Other querier replicas
answer shares of the rows with the trees their own sources read (`fanout`).

Why a sum is enough, gauges included: the engine decides every row's weight from the index before any
source reads (a gauge profile weighs 1 / the profiles of its series in the whole range: the per-series
mean over time, summed across series), so a source returns weighted sums and partials of one query add
up to its answer however its rows were split between them. To the bit: rows with divisors (gauges) are
summed as exact integer `Shares` per divisor and divided only when the tree is made, so float rounding
cannot tell one split from another.

A partial tree is keyed by the path ids of the querier's `PathIndex` (function paths numbered once per
process), so adding partials is adding arrays; a source whose trees come from elsewhere maps them into
that index first (`PathIndex.map_tree`). pprof export reads its source the same way (`profile`): it
keeps what a call tree drops (lines, mappings, sample labels) and so is answered from blocks only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.calltree import CallTree
from flamewatch.querier.formats.pprof import Header, Named
from flamewatch.querier.merging import Rows, gather_rows, path_sums
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.shares import Shares, reduce
from flamewatch.querier.symbolization import QuerySymbols
from flamewatch.storage.gather import Gathered


@dataclass(frozen=True, eq=False)
class PartialTree:
    """Summed (weighted) values of some profile rows per function path of `paths`."""

    paths: PathIndex
    # indexed by path id: int64, or float64 when rows were weighted; `Shares` when they had divisors (gauges)
    sums: np.ndarray | Shares
    unnamed: Mapping[str, str] = field(default_factory=dict)  # frames still shown as addresses -> their object

    @property
    def values(self) -> np.ndarray:
        """Per path id, its value (divided, for `Shares`)."""
        return self.sums.values(len(self.paths)) if isinstance(self.sums, Shares) else self.sums

    def tree(self) -> CallTree:
        return self.paths.tree(self.values)


class TreeSource(Protocol):
    """Answers partial trees (and, for pprof, partial profiles) for the rows it is given."""

    def tree(self, rows: Rows, granularity: str, symbols: QuerySymbols | None) -> PartialTree:
        """The rows' kept samples, weighted by `rows.weights`, summed per function path (or per line
        with granularity "lines")."""
        ...

    def profile(self, rows: Rows, symbols: QuerySymbols | None) -> tuple[Gathered, Header, Named]:
        """The rows' kept samples as one profile with everything they stored, for pprof."""
        ...


class LocalBlocks:
    """The blocks themselves, read through this querier's cache."""

    def __init__(self, blocks: BlockCache) -> None:
        self.blocks = blocks

    def tree(self, rows: Rows, granularity: str, symbols: QuerySymbols | None) -> PartialTree:
        values, unnamed = path_sums(self.blocks, rows, granularity, symbols)
        return PartialTree(self.blocks.paths, values, unnamed)

    def profile(self, rows: Rows, symbols: QuerySymbols | None) -> tuple[Gathered, Header, Named]:
        return gather_rows(self.blocks, rows, symbols)


def combine(partials: Sequence[PartialTree]) -> PartialTree:
    """The sum of partial trees of one query (see the module docstring for gauges). One partial is
    returned as it is, so a query answered by one source is answered exactly as that source summed it."""
    if not partials:
        raise ValueError("combine needs at least one partial tree")
    paths = partials[0].paths
    if any(p.paths is not paths for p in partials):
        raise ValueError("partial trees of one query must be keyed by one path index")
    if len(partials) == 1:
        return partials[0]
    unnamed = {name: obj for p in partials for name, obj in p.unnamed.items()}
    shares = [p.sums for p in partials if isinstance(p.sums, Shares)]
    if shares:
        if len(shares) < len(partials):
            raise ValueError("partial trees of one query are all divided (gauges) or none is")
        return PartialTree(paths, reduce(shares), unnamed)
    total = np.zeros(max(len(p.values) for p in partials), np.result_type(*(p.values.dtype for p in partials)))
    for p in partials:
        total[: len(p.values)] += p.values
    return PartialTree(paths, total, unnamed)
