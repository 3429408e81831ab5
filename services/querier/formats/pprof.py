"""Render gathered profiles (see `flamewatch.storage.gather`) as one gzip-compressed pprof profile.

Unlike the JSON formats this one keeps everything the stored profiles said: each location with its
address, mapping (file, build ID, ranges, offset) and every line, inlined ones included; each sample's
labels (string and numeric with units); the period and its type; the earliest time and the span
covered. Samples with equal stacks and labels were already summed by gathering, so every (stack node,
label set) with a value becomes one sample. It is never truncated.

Stacks are built by walking all sample nodes up the stack tree together, one level per round, keeping
each location's innermost frame (a location's lines are consecutive frames of one path).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flamewatch.pprof.encode import encode
from flamewatch.pprof.model import Functions, Locations, Mappings, Profile, Samples
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.pprof.wire import expand_ranges
from flamewatch.querier.calltree import as_int
from flamewatch.storage.gather import Gathered
from flamewatch.storage.symbols import MAPPING_FLAG_BITS


@dataclass(frozen=True, eq=False)
class Named:
    """Names for frames stored as bare addresses (from the symbolizer): per such frame of the gathered
    symbols, its chain of (function, file, line), innermost first, as pprof lists a location's lines."""

    frame: np.ndarray  # int64, rows of the gathered frames table
    chains: list[tuple[tuple[str, str, int], ...]]


NO_NAMES = Named(np.zeros(0, np.int64), [])


@dataclass(frozen=True)
class Header:
    """The profile-level fields of the output."""

    period: int
    time_ns: int
    duration_ns: int


def render_pprof(g: Gathered, profile_type: ProfileType, header: Header, named: Named = NO_NAMES) -> bytes:
    """The profile; a location stored as a bare address that `named` names gets its lines (inlined
    functions included) and functions, as if the profile had come symbolized."""
    values = as_int(g.value)
    keep = values != 0
    nodes, sets, values = g.node[keep], g.label_set[keep], values[keep]
    tables = _Used(g, nodes, named)
    strings = _Strings(g.symbols.strings, [tables.function_strings(), tables.mapping_strings(),
                                           *_label_strings(g, sets)], profile_type, tables.extra_strings)
    profile = Profile(
        strings=strings.table,
        sample_types=np.array([[1, 2]], np.int64),
        samples=_samples(g, tables, sets, values, strings),
        locations=tables.locations(),
        functions=tables.functions(strings),
        mappings=tables.mappings(strings),
        period_type=(3, 4),
        period=header.period,
        time_nanos=header.time_ns,
        duration_nanos=header.duration_ns,
    )
    return encode(profile)


def _label_rows(g: Gathered, sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sample, label row) pairs: every label of every sample's set."""
    label_set = g.symbols.labels["set"]
    first = np.searchsorted(label_set, sets, side="left")
    counts = np.searchsorted(label_set, sets, side="right") - first
    return np.repeat(np.arange(len(sets)), counts), expand_ranges(first, counts)


def _label_strings(g: Gathered, sets: np.ndarray) -> list[np.ndarray]:
    _, rows = _label_rows(g, sets)
    lb = g.symbols.labels
    return [lb["key"][rows], lb["str"][rows], lb["unit"][rows]]


def _samples(g: Gathered, tables: _Used, sets: np.ndarray, values: np.ndarray, strings: _Strings) -> Samples:
    sample, rows = _label_rows(g, sets)
    lb = g.symbols.labels
    return Samples(tables.sample_offsets, (tables.sample_locations + 1).astype(np.uint64), values.reshape(-1, 1),
                   sample, strings.of(lb["key"][rows]), strings.of(lb["str"][rows]), lb["num"][rows],
                   strings.of(lb["unit"][rows]))


class _Strings:
    """The output string table: "", the profile type's four strings, then every string used."""

    def __init__(self, table: np.ndarray, used: list[np.ndarray], profile_type: ProfileType,
                 extra: list[str] = ()):
        head = np.array(["", profile_type.sample_type, profile_type.sample_unit, profile_type.period_type,
                         profile_type.period_unit], object)
        self._used = np.unique(np.concatenate([np.asarray(u, np.int64) for u in used]))
        self._empty = np.asarray(table, object)[self._used] == ""
        self._extra_base = len(head) + len(self._used)
        self.table = np.concatenate([head, np.asarray(table, object)[self._used], np.array(list(extra), object)])

    def of_extra(self, index: np.ndarray) -> np.ndarray:
        """Output index of strings given to the table as `extra` (by their position there)."""
        return np.asarray(index, np.int64) + self._extra_base

    def of(self, index: np.ndarray) -> np.ndarray:
        """Output index of stored string indices; the empty string is index 0."""
        at = np.searchsorted(self._used, index)
        return np.where(self._empty[at], 0, at + 5).astype(np.int64) if len(index) else np.zeros(0, np.int64)


class _Used:
    """The locations, functions and mappings the samples' stacks use, numbered from 1 in output order."""

    def __init__(self, g: Gathered, nodes: np.ndarray, named: Named = NO_NAMES):
        fr = g.symbols.frames
        self._g, self._frames = g, fr
        n_locations = int(fr["location"].max(initial=-1)) + 1
        self._first = np.searchsorted(fr["location"], np.arange(n_locations))
        owner, frame = _paths(g.node_parent, g.node_frame, nodes)
        innermost = np.arange(len(fr["location"])) == self._first[fr["location"]]
        owner, location = owner[innermost[frame]], fr["location"][frame[innermost[frame]]]
        self.loc, sample_loc = np.unique(location, return_inverse=True)
        self.sample_locations = sample_loc.reshape(-1)
        per_sample = np.bincount(owner, minlength=len(nodes))
        self.sample_offsets = np.concatenate([[0], np.cumsum(per_sample)]).astype(np.int64)
        counts = np.diff(np.append(self._first, len(fr["location"])))[self.loc]
        frames = expand_ranges(self._first[self.loc], counts)
        self._line_frames = frames[fr["function"][frames] >= 0]
        self._line_counts = np.bincount(np.repeat(np.arange(len(self.loc)), counts)[fr["function"][frames] >= 0],
                                        minlength=len(self.loc))
        self.fn, self._line_fn = np.unique(fr["function"][self._line_frames], return_inverse=True)
        self._line_location = np.repeat(np.arange(len(self.loc)), counts)[fr["function"][frames] >= 0]
        self._symbolized(named, frames, counts)
        head = fr["mapping"][self._first[self.loc]]
        self.mp, mp_index = np.unique(head[head >= 0], return_inverse=True)
        self._loc_mapping = np.zeros(len(self.loc), np.uint64)
        self._loc_mapping[head >= 0] = mp_index.reshape(-1) + 1

    def _symbolized(self, named: Named, frames: np.ndarray, counts: np.ndarray) -> None:
        """Lines and functions for the used locations that are bare addresses `named` names: one step
        per such location (a lookup over all frames finds them), never per sample."""
        chain_of = dict(zip(named.frame.tolist(), named.chains))
        location = np.repeat(np.arange(len(self.loc)), counts)
        lines: list[tuple[int, str, str, int]] = []  # (output location index, function, file, line)
        hit = np.flatnonzero(np.isin(frames, named.frame))
        for frame, loc in zip(frames[hit].tolist(), location[hit].tolist()):
            lines.extend((loc, *f) for f in chain_of.get(frame, ()))
        extra = sorted({(f, file) for _, f, file, _ in lines})
        self._extra_functions = extra
        self.extra_strings = sorted({text for pair in extra for text in pair})
        extra_id = {pair: i for i, pair in enumerate(extra)}
        self._extra_lines = (np.array([x[0] for x in lines], np.int64),
                             np.array([extra_id[(x[1], x[2])] for x in lines], np.int64),
                             np.array([x[3] for x in lines], np.int64))

    def function_strings(self) -> np.ndarray:
        return self._g.symbols.functions[self.fn][:, :3].reshape(-1)

    def mapping_strings(self) -> np.ndarray:
        return self._g.symbols.mappings[self.mp][:, :2].reshape(-1)

    def locations(self) -> Locations:
        fr, n = self._frames, len(self.loc)
        extra_loc, extra_fn, extra_line = self._extra_lines
        # Stored lines, then the symbolized ones: a location has one kind or the other, and a stable
        # sort by location keeps each location's lines in their order (innermost first).
        loc = np.concatenate([self._line_location, extra_loc])
        order = np.argsort(loc, kind="stable")
        function_id = np.concatenate([self._line_fn.reshape(-1) + 1, extra_fn + len(self.fn) + 1])[order]
        return Locations(
            id=np.arange(1, n + 1, dtype=np.uint64), mapping_id=self._loc_mapping,
            address=fr["address"][self._first[self.loc]].view(np.uint64), is_folded=np.zeros(n, bool),
            line_offsets=np.concatenate([[0], np.cumsum(np.bincount(loc, minlength=n))]).astype(np.int64),
            line_function_id=function_id.astype(np.uint64),
            line_line=np.concatenate([fr["line"][self._line_frames], extra_line])[order],
            line_column=np.concatenate([fr["column"][self._line_frames], np.zeros(len(extra_loc), np.int64)])[order])

    def functions(self, strings: _Strings) -> Functions:
        f = self._g.symbols.functions[self.fn]
        names = np.searchsorted(self.extra_strings, [n for n, _ in self._extra_functions]).astype(np.int64)
        files = np.searchsorted(self.extra_strings, [file for _, file in self._extra_functions]).astype(np.int64)
        name_ids = np.concatenate([strings.of(f[:, 0]), strings.of_extra(names)])
        return Functions(np.arange(1, len(f) + len(names) + 1, dtype=np.uint64), name_ids,
                         np.concatenate([strings.of(f[:, 1]), strings.of_extra(names)]),
                         np.concatenate([strings.of(f[:, 2]), strings.of_extra(files)]),
                         np.concatenate([f[:, 3], np.zeros(len(names), np.int64)]))

    def mappings(self, strings: _Strings) -> Mappings:
        m = self._g.symbols.mappings[self.mp]
        flags = [(m[:, 5] >> bit & 1).astype(bool) for bit in range(len(MAPPING_FLAG_BITS))]
        return Mappings(np.arange(1, len(m) + 1, dtype=np.uint64), m[:, 2].view(np.uint64).copy(),
                        m[:, 3].view(np.uint64).copy(), m[:, 4].view(np.uint64).copy(), strings.of(m[:, 0]),
                        strings.of(m[:, 1]), *flags)


def _paths(parent: np.ndarray, frame: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sample, frame) pairs of every node's path to the root, grouped by sample, leaf first."""
    owners, frames, rounds = [], [], []
    current, sample = nodes[nodes > 0], np.flatnonzero(nodes > 0)
    step = 0
    while len(current):
        owners.append(sample)
        frames.append(frame[current])
        rounds.append(np.full(len(current), step))
        up = parent[current]
        live = up > 0  # stop below the root, which is not a frame
        current, sample = up[live], sample[live]
        step += 1
    if not owners:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    owner, found, order = np.concatenate(owners), np.concatenate(frames), np.concatenate(rounds)
    sort = np.lexsort((order, owner))
    return owner[sort], found[sort]
