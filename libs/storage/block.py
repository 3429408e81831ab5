"""The block: one Parquet object holding many profiles of one tenant over a short window.

A block has six sections, each in its own row group(s) of one wide table, told apart by the
`section` column (other sections' columns are null there and cost next to nothing):

    strings    string                                   every symbol string, de-duplicated
    functions  function_{name,system_name,filename}     string indices; function_start_line
    mappings   mapping_{filename,build_id}, mapping_{memory_start,memory_limit,file_offset}
    locations  location_{function,line,address,mapping} one row per frame (a line of a location)
    stacks     node_parent, node_location               parent-pointer tree; node 0 is the root
    profiles   series_fingerprint, series_labels (JSON), profile_type, time_ns, duration_ns,
               period, total, nodes (list), values (list): self value per stack node

Anyone can open a block with a Parquet reader, e.g. `SELECT * FROM 'x.parquet' WHERE section='profiles'`.
The file metadata key `flamewatch.block` maps each section to its row groups.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from flamewatch.pprof.profile_types import TypedProfile
from flamewatch.pprof.wire import expand_ranges
from flamewatch.storage.frames import (
    Frames,
    build_stack_tree,
    forest_depths,
    profile_frames,
    unique_rows,
)

FORMAT_VERSION = 1
_META_KEY = b"flamewatch.block"

SCHEMA = pa.schema([
    ("section", pa.string()),
    ("string", pa.string()),
    ("function_name", pa.int32()),
    ("function_system_name", pa.int32()),
    ("function_filename", pa.int32()),
    ("function_start_line", pa.int64()),
    ("mapping_filename", pa.int32()),
    ("mapping_build_id", pa.int32()),
    ("mapping_memory_start", pa.uint64()),
    ("mapping_memory_limit", pa.uint64()),
    ("mapping_file_offset", pa.uint64()),
    ("location_function", pa.int32()),
    ("location_line", pa.int64()),
    ("location_address", pa.uint64()),
    ("location_mapping", pa.int32()),
    ("node_parent", pa.int32()),
    ("node_location", pa.int32()),
    ("series_fingerprint", pa.int64()),
    ("series_labels", pa.string()),
    ("profile_type", pa.string()),
    ("time_ns", pa.int64()),
    ("duration_ns", pa.int64()),
    ("period", pa.int64()),
    ("total", pa.int64()),
    ("nodes", pa.list_(pa.int32())),
    ("values", pa.list_(pa.int64())),
])


@dataclass(frozen=True, eq=False)
class BlockEntry:
    """One typed profile to store, with its series."""

    labels: dict[str, str]
    fingerprint: int
    profile: TypedProfile
    time_ns: int
    duration_ns: int
    content_hash: int = 0


# ------------------------------------------------------------------------------------------ writing


def write_block(entries: Sequence[BlockEntry]) -> bytes:
    """Encode entries into block bytes; entry i is row i of the profiles section."""
    sources = _distinct_sources(entries)
    frames = [profile_frames(p) for p in sources]
    symbols = _Symbols.merge(sources, frames)
    offsets, stacks = _global_stacks(frames, symbols.frame_offsets)
    tree = build_stack_tree(offsets, stacks, len(symbols.locations["location_line"]))
    sections = {
        "strings": {"string": pa.array(symbols.strings, pa.string())},
        "functions": symbols.functions,
        "mappings": symbols.mappings,
        "locations": symbols.locations,
        "stacks": {"node_parent": tree.parent.astype(np.int32), "node_location": tree.frame.astype(np.int32)},
        "profiles": _profiles_section(entries, sources, tree.leaf, offsets),
    }
    return _write_parquet(sections)


def _distinct_sources(entries: Sequence[BlockEntry]) -> list:
    seen: dict[int, object] = {}
    for e in entries:
        seen.setdefault(id(e.profile.source), e.profile.source)
    return list(seen.values())


@dataclass(frozen=True)
class _Symbols:
    strings: np.ndarray
    functions: dict
    mappings: dict
    locations: dict
    frame_offsets: list[np.ndarray]  # per source: global location id of each of its frames

    @staticmethod
    def merge(sources: list, frames: list[Frames]) -> _Symbols:
        encoded = pa.array(np.concatenate([p.strings for p in sources]), pa.string()).dictionary_encode()
        string_map = np.asarray(encoded.indices).astype(np.int64)
        string_base = np.cumsum([0] + [len(p.strings) for p in sources])
        fn_rows, fn_keys = _stack_rows([_function_keys(p, string_map[b:]) for p, b in zip(sources, string_base)])
        mp_rows, mp_keys = _stack_rows([_mapping_keys(p, string_map[b:]) for p, b in zip(sources, string_base)])
        fn_unique, fn_global = unique_rows(fn_keys)
        mp_unique, mp_global = unique_rows(mp_keys)
        loc_keys = np.concatenate([
            _frame_keys(f, fn_global.reshape(-1)[fb:], mp_global.reshape(-1)[mb:])
            for f, fb, mb in zip(frames, fn_rows, mp_rows)
        ]) if frames else np.zeros((0, 4), np.int64)
        loc_unique, loc_global = unique_rows(loc_keys)
        loc_global = loc_global.reshape(-1)
        frame_base = np.cumsum([0] + [len(f.function) for f in frames])
        return _Symbols(
            strings=encoded.dictionary.to_numpy(zero_copy_only=False),
            functions=_columns(fn_unique, ("function_name", "function_system_name", "function_filename",
                                           "function_start_line"), (np.int32, np.int32, np.int32, np.int64)),
            mappings=_columns(mp_unique, ("mapping_filename", "mapping_build_id", "mapping_memory_start",
                                          "mapping_memory_limit", "mapping_file_offset"),
                              (np.int32, np.int32, np.uint64, np.uint64, np.uint64)),
            locations=_columns(loc_unique, ("location_function", "location_line", "location_address",
                                            "location_mapping"), (np.int32, np.int64, np.uint64, np.int32)),
            frame_offsets=[loc_global[a:b] for a, b in zip(frame_base[:-1], frame_base[1:])],
        )


def _stack_rows(tables: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Row offset of each table in the concatenation, and the concatenation."""
    starts = np.cumsum([0] + [len(t) for t in tables])[:-1]
    width = tables[0].shape[1] if tables else 0
    return starts, (np.concatenate(tables) if tables else np.zeros((0, width), np.int64))


def _function_keys(p, strings: np.ndarray) -> np.ndarray:
    f = p.functions
    return np.stack([strings[f.name], strings[f.system_name], strings[f.filename], f.start_line], axis=1) \
        .reshape(-1, 4).astype(np.int64)


def _mapping_keys(p, strings: np.ndarray) -> np.ndarray:
    m = p.mappings
    cols = [strings[m.filename], strings[m.build_id], m.memory_start.view(np.int64),
            m.memory_limit.view(np.int64), m.file_offset.view(np.int64)]
    return np.stack(cols, axis=1).reshape(-1, 5).astype(np.int64)


def _frame_keys(f: Frames, fn_global: np.ndarray, mp_global: np.ndarray) -> np.ndarray:
    function = np.where(f.function >= 0, fn_global[np.maximum(f.function, 0)] if len(fn_global) else -1, -1)
    mapping = np.where(f.mapping >= 0, mp_global[np.maximum(f.mapping, 0)] if len(mp_global) else -1, -1)
    return np.stack([function, f.line, f.address.view(np.int64), mapping], axis=1).reshape(-1, 4)


def _columns(rows: np.ndarray, names: tuple[str, ...], types: tuple) -> dict:
    return {name: rows[:, i].astype(np.int64).astype(t) if t is not np.uint64 else rows[:, i].view(np.uint64)
            for i, (name, t) in enumerate(zip(names, types))}


def _global_stacks(frames: list[Frames], frame_maps: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """All samples of all sources as one stack list over global location ids."""
    stacks = [m[f.sample_frames] for f, m in zip(frames, frame_maps)]
    lengths = np.concatenate([np.diff(f.sample_offsets) for f in frames]) if frames else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return offsets, (np.concatenate(stacks) if stacks else np.zeros(0, np.int64))


def _profiles_section(entries: Sequence[BlockEntry], sources: list, leaf: np.ndarray, offsets) -> dict:
    source_base = {id(p): base for p, base in zip(sources, np.cumsum([0] + [len(p.samples) for p in sources]))}
    sample_node = [leaf[source_base[id(e.profile.source)]:][: len(e.profile.values)] for e in entries]
    node_lists, value_lists = _aggregate_per_profile(sample_node, [e.profile.values for e in entries])
    return {
        "series_fingerprint": np.array([e.fingerprint for e in entries], np.int64),
        "series_labels": pa.array([json.dumps(e.labels, sort_keys=True) for e in entries], pa.string()),
        "profile_type": pa.array([e.profile.profile_type.id for e in entries], pa.string()),
        "time_ns": np.array([e.time_ns for e in entries], np.int64),
        "duration_ns": np.array([e.duration_ns for e in entries], np.int64),
        "period": np.array([e.profile.source.period for e in entries], np.int64),
        "total": np.array([e.profile.total for e in entries], np.int64),
        "nodes": node_lists,
        "values": value_lists,
    }


def _aggregate_per_profile(nodes: list[np.ndarray], values: list[np.ndarray]) -> tuple[pa.Array, pa.Array]:
    """Per profile, the summed value of each stack node that has one, as two list columns."""
    owner = np.repeat(np.arange(len(nodes)), [len(n) for n in nodes])
    node = np.concatenate(nodes) if nodes else np.zeros(0, np.int64)
    value = np.concatenate(values) if values else np.zeros(0, np.int64)
    keep = value != 0
    owner, node, value = owner[keep], node[keep], value[keep]
    width = int(node.max()) + 1 if len(node) else 1
    unique, inverse = np.unique(owner * width + node, return_inverse=True)
    sums = np.zeros(len(unique), np.int64)
    np.add.at(sums, inverse, value)
    per_profile = np.bincount(unique // width, minlength=len(nodes))
    list_offsets = pa.array(np.concatenate([[0], np.cumsum(per_profile)]).astype(np.int32))
    return (pa.ListArray.from_arrays(list_offsets, pa.array((unique % width).astype(np.int32))),
            pa.ListArray.from_arrays(list_offsets, pa.array(sums)))


def _write_parquet(sections: dict[str, dict]) -> bytes:
    layout, tables = {}, []
    for name, columns in sections.items():
        n = len(next(iter(columns.values())))
        if n == 0:
            continue
        layout[name] = [len(tables)]
        tables.append(_section_table(name, columns, n))
    meta = {_META_KEY: json.dumps({"version": FORMAT_VERSION, "sections": layout}).encode()}
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, SCHEMA.with_metadata(meta), compression="zstd") as writer:
        for table in tables:
            writer.write_table(table, row_group_size=max(table.num_rows, 1))
    return sink.getvalue()


def _section_table(name: str, columns: dict, n: int) -> pa.Table:
    arrays = []
    for f in SCHEMA:
        if f.name == "section":
            arrays.append(pa.array(np.full(n, name), pa.string()))  # from numpy: no list of n strings
        elif f.name in columns:
            arrays.append(pa.array(columns[f.name], f.type))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


# ------------------------------------------------------------------------------------------ reading


class BlockReader:
    """Lazy, cached access to the sections of one block held in memory."""

    def __init__(self, data: bytes):
        self.nbytes = len(data)
        self._file = pq.ParquetFile(pa.BufferReader(data))
        meta = json.loads(self._file.schema_arrow.metadata[_META_KEY])
        if meta["version"] != FORMAT_VERSION:
            raise ValueError(f"unsupported block format version {meta['version']}")
        self._sections: dict[str, list[int]] = meta["sections"]

    def _read(self, section: str, columns: list[str]) -> pa.Table:
        groups = self._sections.get(section, [])
        if not groups:
            return pa.Table.from_arrays([pa.array([], SCHEMA.field(c).type) for c in columns], names=columns)
        return self._file.read_row_groups(groups, columns=columns)

    def _numpy(self, section: str, column: str) -> np.ndarray:
        return self._read(section, [column]).column(0).to_numpy()

    @cached_property
    def strings(self) -> np.ndarray:
        return self._read("strings", ["string"]).column(0).to_numpy(zero_copy_only=False)

    @cached_property
    def node_parent(self) -> np.ndarray:
        return self._numpy("stacks", "node_parent").astype(np.int64)

    @cached_property
    def node_location(self) -> np.ndarray:
        return self._numpy("stacks", "node_location").astype(np.int64)

    @cached_property
    def profiles(self) -> pa.Table:
        return self._read("profiles", ["series_fingerprint", "series_labels", "profile_type", "time_ns",
                                       "duration_ns", "period", "total"])

    @cached_property
    def _lists(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        table = self._read("profiles", ["nodes", "values"]).combine_chunks()
        nodes, values = table.column(0).chunk(0), table.column(1).chunk(0)
        return (nodes.offsets.to_numpy().astype(np.int64), nodes.values.to_numpy().astype(np.int64),
                values.values.to_numpy())

    def entries(self, rows: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(stack node, self value) of every entry of the given profile rows; values float64 when weighted."""
        offsets, nodes, values = self._lists
        rows = np.asarray(rows, np.int64)
        counts = offsets[rows + 1] - offsets[rows]
        picked = expand_ranges(offsets[rows], counts)
        if weights is None:
            return nodes[picked], values[picked]
        return nodes[picked], values[picked] * np.repeat(np.asarray(weights, np.float64), counts)

    def node_values(self, rows: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Self value per stack node summed over profile rows; float64 when weighted."""
        nodes, values = self.entries(rows, weights)
        out = np.zeros(len(self.node_parent), values.dtype)
        np.add.at(out, nodes, values)
        return out

    @cached_property
    def _locations(self) -> pa.Table:
        return self._read("locations", ["location_function", "location_line", "location_address",
                                        "location_mapping"])

    @cached_property
    def _functions(self) -> pa.Table:
        return self._read("functions", ["function_name", "function_system_name", "function_filename",
                                        "function_start_line"])

    def _location_names(self) -> np.ndarray:
        """Function name of each location; unsymbolized locations are shown by address."""
        function = self._locations.column("location_function").to_numpy()
        name_index = self._functions.column("function_name").to_numpy()
        address = self._locations.column("location_address").to_numpy()
        names = np.empty(len(function), object)
        known = function >= 0
        names[known] = self.strings[name_index[function[known]]]
        names[~known] = np.char.add("0x", np.char.mod("%x", address[~known].astype(np.uint64)))
        return names

    @cached_property
    def node_depth(self) -> np.ndarray:
        """Depth of each node (the root is 0), computed once per block."""
        return forest_depths(self.node_parent)

    @cached_property
    def location_names(self) -> np.ndarray:
        return self._location_names()

    @cached_property
    def node_names(self) -> np.ndarray:
        """Function name per stack node (the root is "total")."""
        names = np.empty(len(self.node_parent), object)
        names[0] = "total"
        names[1:] = self.location_names[self.node_location[1:]]
        return names

    def location_table(self) -> dict[str, np.ndarray]:
        """Per location: function name, system name and file name strings, line, address."""
        loc, fn = self._locations, self._functions
        function = loc.column("location_function").to_numpy()
        safe = np.maximum(function, 0)
        def string_col(col: str) -> np.ndarray:
            idx = fn.column(col).to_numpy()
            out = self.strings[idx[safe]] if len(idx) else np.full(len(function), "", object)
            return np.where(function >= 0, out, "")
        return {
            "name": self.location_names,
            "system_name": string_col("function_system_name"),
            "filename": string_col("function_filename"),
            "line": loc.column("location_line").to_numpy(),
            "address": loc.column("location_address").to_numpy(),
        }
