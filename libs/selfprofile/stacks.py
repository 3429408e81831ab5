"""Ids for the functions, locations and stacks a self-profiler sees, and their layout as pprof columns.

A profiler meets frames one at a time as Python objects. `StackTable` gives each distinct string,
function (name, file, first line) and location (function, line) its pprof id when first seen, with
plain dicts, and builds the `Profile`'s numpy columns once at the end. Locations carry no address or
mapping: Python frames have none, and pprof tools read functions and lines without them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flamewatch.pprof.model import Functions, Locations, Mappings, Profile, Samples


@dataclass(frozen=True)
class Measure:
    """What a profile's values are: its sample types, period type and period."""

    sample_types: tuple[tuple[str, str], ...]
    period_type: tuple[str, str]
    period: int


class StackTable:
    def __init__(self) -> None:
        self._strings: dict[str, int] = {"": 0}
        self._functions: dict[tuple[int, int, int], int] = {}  # (name, file name, start line) -> id
        self._locations: dict[tuple[int, int], int] = {}  # (function id, line) -> id

    def string(self, text: str) -> int:
        return self._strings.setdefault(text, len(self._strings))

    def function(self, name: str, filename: str, start_line: int) -> int:
        key = (self.string(name), self.string(filename), start_line)
        return self._functions.setdefault(key, len(self._functions) + 1)

    def location(self, function_id: int, line: int) -> int:
        return self._locations.setdefault((function_id, line), len(self._locations) + 1)

    def profile(self, measure: Measure, locations: np.ndarray, depths: np.ndarray, values: np.ndarray,
                time_nanos: int, duration_nanos: int) -> Profile:
        """The profile whose sample i has the next `depths[i]` of `locations` (ids, leaf first) and `values[i]`."""
        sample_types = np.array([[self.string(t), self.string(u)] for t, u in measure.sample_types], np.int64)
        period_type = (self.string(measure.period_type[0]), self.string(measure.period_type[1]))
        offsets = np.zeros(len(depths) + 1, np.int64)
        np.cumsum(depths, out=offsets[1:])
        empty = np.zeros(0, np.int64)
        values = np.asarray(values, np.int64).reshape(len(depths), len(sample_types))
        return Profile(
            strings=np.array(list(self._strings), dtype=object),
            sample_types=sample_types.reshape(-1, 2),
            samples=Samples(offsets, np.asarray(locations, np.uint64), values, empty, empty, empty, empty, empty),
            locations=self._location_columns(),
            functions=self._function_columns(),
            mappings=Mappings(*([np.zeros(0, np.uint64)] * 4), empty, empty, *([np.zeros(0, bool)] * 4)),
            period_type=period_type,
            period=measure.period,
            time_nanos=time_nanos,
            duration_nanos=duration_nanos,
        )

    def _function_columns(self) -> Functions:
        rows = np.array(list(self._functions), np.int64).reshape(-1, 3)
        ids = np.arange(1, len(rows) + 1, dtype=np.uint64)
        return Functions(ids, rows[:, 0].copy(), rows[:, 0].copy(), rows[:, 1].copy(), rows[:, 2].copy())

    def _location_columns(self) -> Locations:
        rows = np.array(list(self._locations), np.int64).reshape(-1, 2)
        n = len(rows)
        zeros = np.zeros(n, np.uint64)
        return Locations(np.arange(1, n + 1, dtype=np.uint64), zeros, zeros.copy(), np.zeros(n, bool),
                         np.arange(n + 1, dtype=np.int64), rows[:, 0].astype(np.uint64), rows[:, 1].copy(),
                         np.zeros(n, np.int64))

