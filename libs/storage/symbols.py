"""Symbols of many sources (pprof profiles or stored blocks) merged into one de-duplicated set.

Each source is first described as a `SymbolPart`: its strings, functions, mappings, locations with
all their lines, the frames its stacks use (one per line of a location, innermost first) and its
sample label sets, every reference a row number into its own tables. `merge_symbols` interns the
strings and de-duplicates functions, mappings, locations (by address, mapping and every line) and
label sets (by their sorted labels) across all parts, and says where each part's frames and label
sets went. Frames are numbered so that a location's lines are consecutive, innermost first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import islice

import numpy as np
import pyarrow as pa

from flamewatch.pprof.model import Profile
from flamewatch.pprof.wire import expand_ranges
from flamewatch.storage.frames import rows_of, unique_ragged, unique_rows

# pprof Mapping has_* flags, one bit each in the stored mapping_flags.
MAPPING_FLAG_BITS = ("has_functions", "has_filenames", "has_line_numbers", "has_inline_frames")
FUNCTION_STRINGS = (0, 1, 2)  # columns of a function row that are string indices
MAPPING_STRINGS = (0, 1)
_MAPPING_RANGE = ("memory_start", "memory_limit", "file_offset")  # uint64 columns, stored as int64 bits


@dataclass(frozen=True, eq=False)
class SymbolPart:
    """One source's symbols; every index is a row of this part's own tables (-1: none)."""

    strings: np.ndarray  # object
    functions: np.ndarray  # int64 [n, 4]: name, system_name, filename, start_line
    mappings: np.ndarray  # int64 [n, 6]: filename, build_id, memory_start, memory_limit, file_offset, flags
    loc_address: np.ndarray  # int64 (the uint64 bits)
    loc_mapping: np.ndarray  # int64
    line_offsets: np.ndarray  # int64 [locations + 1]
    line_function: np.ndarray  # int64
    line_line: np.ndarray  # int64
    line_column: np.ndarray  # int64
    frame_location: np.ndarray  # int64 location of each frame the stacks use
    frame_line: np.ndarray  # int64 its line within the location (0 for a location without lines)
    label_set: np.ndarray  # int64 local label set id of each label row, 1..n_label_sets
    label_key: np.ndarray  # int64 string index
    label_str: np.ndarray  # int64 string index
    label_num: np.ndarray  # int64
    label_unit: np.ndarray  # int64 string index
    n_label_sets: int


@dataclass(frozen=True, eq=False)
class Symbols:
    """The merged tables and where each part's frames and label sets landed."""

    strings: np.ndarray  # object, distinct
    functions: np.ndarray  # int64 [n, 4] over `strings`
    mappings: np.ndarray  # int64 [n, 6] over `strings`
    frames: dict[str, np.ndarray]  # function, line, column, address, mapping, location: one row per frame
    labels: dict[str, np.ndarray]  # set, key, str, num, unit: one row per label; set 0 is the empty set
    frame_maps: list[np.ndarray]  # per part: global frame of each local frame
    label_set_maps: list[np.ndarray]  # per part: global label set of each local set (index 0: the empty set)


# ------------------------------------------------------------------------------------------ parts


def profile_part(p: Profile) -> SymbolPart:
    """A decoded pprof's symbols; its frames are every line of every location, in location order."""
    return profiles_part([p])


def profiles_part(ps: Sequence[Profile]) -> SymbolPart:
    """Decoded pprofs' symbols as one part, their tables one after another (every index shifted into
    the concatenation, so a flush's pprofs are merged in one pass, not one each); label set i + 1 is
    sample i of the concatenated samples."""
    loc, fn, mp, s = (_Concat([getattr(p, t) for p in ps]) for t in ("locations", "functions", "mappings", "samples"))
    string_base = _bases([len(p.strings) for p in ps])
    nlines = loc.run_lengths("line_offsets")
    per_location = np.maximum(nlines, 1)
    frame_location = np.repeat(np.arange(len(nlines)), per_location)
    first = np.cumsum(per_location) - per_location
    flags = np.zeros(mp.n, np.int64)
    for bit, name in enumerate(MAPPING_FLAG_BITS):
        flags |= mp.cat(name, np.int64) << bit
    fn_strings, mp_strings = string_base[fn.source()], string_base[mp.source()]
    label_strings = string_base[s.source("label_key")]
    mapping_id = loc.cat("mapping_id", np.uint64)
    mapped = mapping_id != 0
    loc_mapping = np.full(loc.n, -1, np.int64)
    loc_mapping[mapped] = _rows_of_each(mapping_id[mapped], loc.source()[mapped], mp.cat("id", np.uint64), mp.source())
    return SymbolPart(
        strings=np.concatenate([p.strings for p in ps]) if ps else np.zeros(0, object),
        functions=np.stack([fn.cat("name") + fn_strings, fn.cat("system_name") + fn_strings,
                            fn.cat("filename") + fn_strings, fn.cat("start_line")], axis=1),
        mappings=np.stack([mp.cat("filename") + mp_strings, mp.cat("build_id") + mp_strings,
                           *(mp.cat(c, np.uint64).view(np.int64) for c in _MAPPING_RANGE), flags], axis=1),
        loc_address=loc.cat("address", np.uint64).view(np.int64),
        loc_mapping=loc_mapping,
        line_offsets=np.concatenate([[0], np.cumsum(nlines)]).astype(np.int64),
        line_function=_rows_of_each(loc.cat("line_function_id", np.uint64), loc.source("line_function_id"),
                                    fn.cat("id", np.uint64), fn.source()),
        line_line=loc.cat("line_line"),
        line_column=loc.cat("line_column"),
        frame_location=frame_location,
        frame_line=np.arange(len(frame_location)) - first[frame_location],
        label_set=s.cat("label_sample") + _bases([len(x) for x in s.tables])[s.source("label_key")] + 1,
        label_key=s.cat("label_key") + label_strings, label_str=s.cat("label_str") + label_strings,
        label_num=s.cat("label_num"), label_unit=s.cat("label_num_unit") + label_strings,
        n_label_sets=sum(len(x) for x in s.tables),
    )


def stored_part(strings: np.ndarray, functions: np.ndarray, mappings: np.ndarray, frames: dict[str, np.ndarray],
                labels: dict[str, np.ndarray]) -> SymbolPart:
    """Symbols kept as a block keeps them, as a part: `functions` and `mappings` as `SymbolPart` has them,
    `frames` one row per frame (function, line, column, address, mapping, location: a location's frames
    consecutive, locations in order) and `labels` one row per label (set, key, str, num, unit)."""
    fr, lb = frames, labels
    n_locations = int(fr["location"].max(initial=-1)) + 1
    first = np.searchsorted(fr["location"], np.arange(n_locations))
    has_line = fr["function"] >= 0
    line_counts = np.bincount(fr["location"][has_line], minlength=n_locations)
    return SymbolPart(
        strings=strings, functions=functions, mappings=mappings,
        loc_address=fr["address"][first].view(np.int64),
        loc_mapping=fr["mapping"][first],
        line_offsets=np.concatenate([[0], np.cumsum(line_counts)]).astype(np.int64),
        line_function=fr["function"][has_line],
        line_line=fr["line"][has_line],
        line_column=fr["column"][has_line],
        frame_location=fr["location"],
        frame_line=np.arange(len(fr["location"])) - first[fr["location"]],
        label_set=lb["set"], label_key=lb["key"], label_str=lb["str"], label_num=lb["num"], label_unit=lb["unit"],
        n_label_sets=int(lb["set"].max(initial=0)),
    )


@dataclass(frozen=True, eq=False)
class SampleStacks:
    """Each sample's stack as locations (leaf first), and each location's run of frames of the part the
    pprofs make (`profiles_part`): a location's lines are consecutive frames there, innermost first."""

    offsets: np.ndarray  # int64 [samples + 1]: sample i is locations[offsets[i]:offsets[i + 1]]
    locations: np.ndarray  # int64 row of each stack entry in the concatenated locations
    frame_first: np.ndarray  # int64 per location: its first frame
    frame_count: np.ndarray  # int64 per location: its frames (its lines, at least one)

    def frames(self) -> tuple[np.ndarray, np.ndarray]:
        """The stacks expanded into frames, leaf first: (offsets [samples + 1], frames)."""
        counts = self.frame_count[self.locations]
        running = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return running[self.offsets], expand_ranges(self.frame_first[self.locations], counts)


def sample_frames(p: Profile) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's stack as frames of `profile_part(p)`, leaf first: (offsets [n + 1], frames)."""
    return samples_stacks([p]).frames()


def samples_stacks(ps: Sequence[Profile]) -> SampleStacks:
    """The stacks of all pprofs' samples, one after another, over the locations of `profiles_part(ps)`."""
    loc, s = _Concat([p.locations for p in ps]), _Concat([p.samples for p in ps])
    per_location = np.maximum(loc.run_lengths("line_offsets"), 1)
    sample_loc = _rows_of_each(s.cat("locations", np.uint64), s.source("locations"), loc.cat("id", np.uint64),
                               loc.source())
    depths = s.run_lengths("offsets")
    return SampleStacks(np.concatenate([[0], np.cumsum(depths)]).astype(np.int64), sample_loc,
                        np.cumsum(per_location) - per_location, per_location)


class _Concat:
    """Several pprofs' tables of one kind (locations, say) as one: columns concatenated, and the pprof of each row."""

    def __init__(self, tables: list):
        self.tables = tables
        self.n = sum(len(t) for t in tables)

    def cat(self, column: str, dtype=np.int64) -> np.ndarray:
        arrays = [getattr(t, column) for t in self.tables]
        return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)

    def source(self, column: str | None = None) -> np.ndarray:
        """The pprof of each row of `column` (by default the table's rows)."""
        sizes = [len(getattr(t, column)) if column else len(t) for t in self.tables]
        return np.repeat(np.arange(len(sizes)), sizes)

    def run_lengths(self, column: str) -> np.ndarray:
        """Run lengths of an offsets column ([n + 1] per table) over the concatenated runs."""
        arrays = [getattr(t, column) for t in self.tables]
        if not arrays:
            return np.zeros(0, np.int64)
        steps = np.diff(np.concatenate(arrays)).astype(np.int64)
        return np.delete(steps, np.cumsum([len(a) for a in arrays])[:-1] - 1)


def _bases(sizes: list[int]) -> np.ndarray:
    return (np.cumsum(sizes) - sizes).astype(np.int64) if sizes else np.zeros(0, np.int64)


def _rows_of_each(ids: np.ndarray, id_source: np.ndarray, table_ids: np.ndarray,
                  table_source: np.ndarray) -> np.ndarray:
    """Row of each (pprof, id) in concatenated tables whose ids are unique within each pprof (and each id
    looked up is in its pprof's table: `validate` saw to that). Ids numbered 1..n in table order, as Go
    writes them, are their row; others are searched for."""
    if len(ids) == 0:
        return np.zeros(0, np.int64)
    first = _bases(np.bincount(table_source, minlength=int(id_source.max()) + 1).tolist())
    position = np.arange(len(table_ids)) - first[table_source]
    if np.array_equal(table_ids, (position + 1).astype(np.uint64)):
        return first[id_source] + ids.astype(np.int64) - 1
    distinct = np.unique(table_ids)
    width = len(distinct)
    return rows_of(id_source * width + np.searchsorted(distinct, ids),
                   table_source * width + np.searchsorted(distinct, table_ids))


# ------------------------------------------------------------------------------------------ merging


def merge_symbols(parts: list[SymbolPart]) -> Symbols:
    strings, string_maps = _merge_strings(parts)
    functions, fn_maps = _merge_tables([_restring(p.functions, m, FUNCTION_STRINGS)
                                        for p, m in zip(parts, string_maps)], 4)
    mappings, mp_maps = _merge_tables([_restring(p.mappings, m, MAPPING_STRINGS)
                                       for p, m in zip(parts, string_maps)], 6)
    frames, frame_maps = _merge_locations(parts, fn_maps, mp_maps)
    labels, label_maps = _merge_label_sets(parts, string_maps)
    return Symbols(strings, functions, mappings, frames, labels, frame_maps, label_maps)


def merge_symbols_in_batches(parts: Iterable[SymbolPart], batch: int) -> Symbols:
    """`merge_symbols` of many parts taken `batch` at a time, each batch merged with what the ones before
    made, so only one batch of parts is held at once. The result is the same: strings keep the order they
    first appear in and every other table is sorted, whichever merge met them first."""
    merged: Symbols | None = None
    frame_maps: list[np.ndarray] = []
    set_maps: list[np.ndarray] = []
    parts = iter(parts)
    while chunk := list(islice(parts, batch)):
        head = [] if merged is None else [stored_part(merged.strings, merged.functions, merged.mappings,
                                                      merged.frames, merged.labels)]
        step = merge_symbols(head + chunk)
        del chunk
        if merged is not None:
            frame_maps = [step.frame_maps[0][m] for m in frame_maps]
            set_maps = [step.label_set_maps[0][m] for m in set_maps]
        frame_maps += step.frame_maps[len(head):]
        set_maps += step.label_set_maps[len(head):]
        merged = step
    if merged is None:
        return merge_symbols([])
    return replace(merged, frame_maps=frame_maps, label_set_maps=set_maps)


def _merge_strings(parts: list[SymbolPart]) -> tuple[np.ndarray, list[np.ndarray]]:
    tables = [np.asarray(p.strings, object) for p in parts]
    encoded = pa.array(np.concatenate(tables) if tables else np.zeros(0, object), pa.string()).dictionary_encode()
    index = np.asarray(encoded.indices).astype(np.int64)
    bounds = np.cumsum([0] + [len(t) for t in tables])
    return (encoded.dictionary.to_numpy(zero_copy_only=False),
            [index[a:b] for a, b in zip(bounds[:-1], bounds[1:])])


def _restring(rows: np.ndarray, string_map: np.ndarray, columns: tuple[int, ...]) -> np.ndarray:
    out = rows.copy()
    for c in columns:
        out[:, c] = string_map[rows[:, c]] if len(rows) else out[:, c]
    return out


def _merge_tables(tables: list[np.ndarray], width: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Distinct rows of all tables and, per table, each row's index among them."""
    bounds = np.cumsum([0] + [len(t) for t in tables])
    unique, inverse = unique_rows(np.concatenate(tables) if tables else np.zeros((0, width), np.int64))
    return unique, [inverse[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _lookup(table_map: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Global row of each local row, -1 staying -1."""
    if len(table_map) == 0:
        return np.full(len(rows), -1, np.int64)
    return np.where(rows >= 0, table_map[np.maximum(rows, 0)], -1)


def _merge_locations(parts: list[SymbolPart], fn_maps: list[np.ndarray], mp_maps: list[np.ndarray]):
    """Locations are equal when address, mapping and every line (function, line, column) are."""
    heads = [np.stack([p.loc_address, _lookup(m, p.loc_mapping)], axis=1) for p, m in zip(parts, mp_maps)]
    lines = [np.stack([_lookup(f, p.line_function), p.line_line, p.line_column], axis=1)
             for p, f in zip(parts, fn_maps)]
    counts = [len(p.loc_address) for p in parts]
    offsets = np.concatenate([[0], np.cumsum(np.concatenate([np.diff(p.line_offsets) for p in parts]))]) \
        if parts else np.zeros(1, np.int64)
    head, line_offsets, line, inverse = unique_ragged(
        np.concatenate(heads) if heads else np.zeros((0, 2), np.int64), offsets.astype(np.int64),
        np.concatenate(lines) if lines else np.zeros((0, 3), np.int64))
    nlines = np.diff(line_offsets)
    per_location = np.maximum(nlines, 1)
    first = np.cumsum(per_location) - per_location
    owner = np.repeat(np.arange(len(head)), per_location)
    within = np.arange(len(owner)) - first[owner]
    has_line = nlines[owner] > 0
    line_row = np.where(has_line, line_offsets[owner] + within, 0)
    def line_col(c: int, missing: int) -> np.ndarray:
        return np.where(has_line, line[line_row, c] if len(line) else missing, missing)
    frames = {"function": line_col(0, -1), "line": line_col(1, 0), "column": line_col(2, 0),
              "address": head[owner, 0], "mapping": head[owner, 1], "location": owner}
    bounds = np.cumsum([0] + counts)
    frame_maps = [first[inverse[a:b]][p.frame_location] + p.frame_line if len(p.frame_location) else
                  np.zeros(0, np.int64) for p, a, b in zip(parts, bounds[:-1], bounds[1:])]
    return frames, frame_maps


def _merge_label_sets(parts: list[SymbolPart], string_maps: list[np.ndarray]):
    """Label sets are equal when their sorted (key, str, num, unit) rows are. Every part's local set 0
    is empty, and runs are grouped by length shortest first, so the empty set is global set 0."""
    sizes = np.array([p.n_label_sets + 1 for p in parts], np.int64)
    starts = np.cumsum(sizes) - sizes
    rows = [np.stack([p.label_set + s, _restrung(m, p.label_key), _restrung(m, p.label_str), p.label_num,
                      _restrung(m, p.label_unit)], axis=1).reshape(-1, 5)
            for p, m, s in zip(parts, string_maps, starts.tolist())]
    table = np.concatenate(rows) if rows else np.zeros((0, 5), np.int64)
    table = table[np.lexsort(table.T[::-1])]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(table[:, 0], minlength=int(sizes.sum())))])
    _, set_offsets, items, inverse = unique_ragged(np.zeros((int(sizes.sum()), 0), np.int64),
                                                   offsets.astype(np.int64), table[:, 1:])
    set_id = np.repeat(np.arange(len(set_offsets) - 1), np.diff(set_offsets))
    labels = {"set": set_id, "key": items[:, 0], "str": items[:, 1], "num": items[:, 2], "unit": items[:, 3]}
    return labels, [inverse[s: s + n] for s, n in zip(starts.tolist(), sizes.tolist())]


def _restrung(string_map: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return string_map[rows] if len(rows) else np.zeros(0, np.int64)
