"""Exact sums of divided values: how a gauge's merge is added up so that it does not depend on how its
rows were split.

A gauge profile's values are divided by the profiles of its series in the query's range (the per-series
mean over time). Multiplying every value by 1/n in float64 and adding them up gives an answer whose last
bits depend on the order of the additions: on which blocks held the profiles, and on whether a source
added a series' hour as one pre-merged tree or as its profiles. So the values are kept as integer sums
per (function path, divisor), which add up exactly in any order, and divided once, when the tree is
made: the same rows give the same answer to the bit, however they were read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flamewatch.storage.frames import sums_by


@dataclass(frozen=True, eq=False)
class Shares:
    """Integer sums per (path, divisor); `reduced` makes them distinct, ordered by path then divisor."""

    path: np.ndarray  # int64
    divisor: np.ndarray  # int64, >= 1
    total: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.path)

    @staticmethod
    def empty() -> Shares:
        return Shares(*(np.zeros(0, np.int64),) * 3)

    def values(self, size: int) -> np.ndarray:
        """float64 per path id (of `size`): the sum over divisors, in ascending order, of total / divisor."""
        reduced = reduce([self])
        return np.bincount(reduced.path, weights=reduced.total / reduced.divisor, minlength=size)


def reduce(parts: Sequence[Shares]) -> Shares:
    """The parts added up: one entry per distinct (path, divisor), in that order, zero sums left out."""
    path, divisor, total = (np.concatenate(c) for c in zip(*((p.path, p.divisor, p.total) for p in parts))) \
        if parts else (np.zeros(0, np.int64),) * 3
    first, sums = sums_by([path, divisor], total)
    keep = sums != 0
    return Shares(path[first][keep], divisor[first][keep], sums[keep])


class SharesSum:
    """Shares added a part at a time, reduced whenever the parts pass `REDUCE_AT` entries, so what is
    held grows with the distinct (path, divisor) pairs, not with the entries read."""

    REDUCE_AT = 1 << 22

    def __init__(self) -> None:
        self._parts: list[Shares] = []
        self._size = 0

    def add(self, part: Shares) -> None:
        self._parts.append(part)
        self._size += len(part)
        if self._size >= self.REDUCE_AT:
            self._parts = [reduce(self._parts)]
            self._size = len(self._parts[0])

    def result(self) -> Shares:
        return reduce(self._parts)
