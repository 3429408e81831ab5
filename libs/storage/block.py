"""The block: one Parquet object holding many profiles of one tenant over a short window.

A block has seven sections in one wide table, told apart by the `section` column (other sections'
columns are null there and cost next to nothing):

    strings    string                                   every symbol string, de-duplicated
    functions  function_{name,system_name,filename}     string indices; function_start_line
    mappings   mapping_{filename,build_id}, mapping_{memory_start,memory_limit,file_offset}, mapping_flags
               (pprof's has_functions, has_filenames, has_line_numbers, has_inline_frames as bits 0-3)
    locations  location_{function,line,column,address,mapping}, location_id: one row per frame, that is
               per line of a pprof location; a location's lines are consecutive rows with the same
               location_id, innermost (inlined) first. A location without lines is one row, function -1
    labels     label_set, label_key, label_str, label_num, label_unit: pprof sample labels, one row
               per label of each distinct label set (strings as indices); set 0 is "no labels"
    stacks     node_parent, node_location               parent-pointer tree over frames; node 0 is the root
    profiles   series_fingerprint, series_labels (JSON), profile_type, time_ns, duration_ns, period,
               total, content_hash, and per profile three lists: nodes, labelsets, values, one entry
               per distinct (stack node, label set) with its summed self value

Version 1 blocks (no mapping_flags, location_id, location_column, labels, content_hash or labelsets:
every frame its own location, no sample labels) are still read.

Since version 3 the six symbol sections share one row group, each a run of its rows, and so do the
profiles when they fit in one group: every row group costs a column chunk per column, each compressed
on its own, and in a flush block of a few profiles the chunks of seven groups (mostly null) were most
of the writing time and a third of the file. A larger profiles section is split into row groups of
about `PROFILE_GROUP_ENTRIES` entries, so a query reads and decodes only the groups that hold its rows;
compacted blocks order their profiles by profile type, service and series (see `series_order`), so
one service's rows sit in a few groups.

Anyone can open a block with a Parquet reader, e.g. `SELECT * FROM 'x.parquet' WHERE section='profiles'`.
The file metadata key `flamewatch.block` holds the version, maps each section to its row groups and
(version 3) each section that shares group 0 to its rows [start, stop) in it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from flamewatch.pprof.profile_types import TypedProfile
from flamewatch.pprof.wire import expand_ranges
from flamewatch.storage.frames import forest_depths
from flamewatch.storage.gather import Gathered, from_blocks, from_profiles
from flamewatch.storage.symbols import SymbolPart

FORMAT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
# What the parsed parquet footer of an open block holds in C++ memory that no Python figure shows: per column
# (its schema) and per column chunk (row group x column). Measured from 2 to 14 row groups of 36 columns:
# about 48 KB + 750 B a chunk, so a flush block of one group holds ~75 KB, a dozen times its file.
FOOTER_BYTES_PER_COLUMN = 1400
FOOTER_BYTES_PER_CHUNK = 800
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
    ("mapping_flags", pa.int32()),
    ("location_function", pa.int32()),
    ("location_line", pa.int64()),
    ("location_column", pa.int64()),
    ("location_address", pa.uint64()),
    ("location_mapping", pa.int32()),
    ("location_id", pa.int32()),
    ("label_set", pa.int32()),
    ("label_key", pa.int32()),
    ("label_str", pa.int32()),
    ("label_num", pa.int64()),
    ("label_unit", pa.int32()),
    ("node_parent", pa.int32()),
    ("node_location", pa.int32()),
    ("series_fingerprint", pa.int64()),
    ("series_labels", pa.string()),
    ("profile_type", pa.string()),
    ("time_ns", pa.int64()),
    ("duration_ns", pa.int64()),
    ("period", pa.int64()),
    ("total", pa.int64()),
    ("content_hash", pa.int64()),
    ("nodes", pa.list_(pa.int32())),
    ("labelsets", pa.list_(pa.int32())),
    ("values", pa.list_(pa.int64())),
])

# Entries per row group of the profiles section. Smaller groups mean less decoded per selective query
# and a bigger footer (a few KiB per group).
PROFILE_GROUP_ENTRIES = 1 << 17

_DICTIONARY_COLUMNS = ("section", "series_labels", "profile_type")

PROFILE_COLUMNS = ("series_fingerprint", "series_labels", "profile_type", "time_ns", "duration_ns", "period",
                   "total", "content_hash")


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
    sources: dict[int, object] = {}
    owners: dict[int, list[int]] = {}
    values: dict[int, list[np.ndarray]] = {}
    for i, e in enumerate(entries):
        key = id(e.profile.source)
        sources.setdefault(key, e.profile.source)
        owners.setdefault(key, []).append(i)
        values.setdefault(key, []).append(e.profile.values)
    gathered = from_profiles(list(sources.values()), list(owners.values()), list(values.values()))
    return _write_parquet(_sections(gathered, _entry_columns(entries)))


def compact(parts: Sequence[tuple[BlockReader, np.ndarray]], order: np.ndarray | None = None) -> bytes:
    """A new block holding the given profile rows of the given blocks (any readable version); symbols,
    label sets and stacks are de-duplicated across all of them and every per-profile column is carried
    over. Row i of the new block is input row `order[i]`, counting the parts' rows one after another
    (None: in the order given)."""
    placement = None
    if order is not None:  # the output profile of each input row, so the entries come out in that order
        placement = np.empty(len(order), np.int64)
        placement[np.asarray(order, np.int64)] = np.arange(len(order))
    gathered = from_blocks([(r, np.asarray(rows, np.int64)) for r, rows in parts], release=True, placement=placement)
    profiles = _profile_table(parts)
    if order is not None:
        profiles = profiles.take(pa.array(order))
    return _write_parquet(_sections(gathered, {c: profiles.column(c).combine_chunks() for c in PROFILE_COLUMNS}))


def _profile_table(parts: Sequence[tuple[BlockReader, np.ndarray]]) -> pa.Table:
    tables = [r.profiles.take(pa.array(np.asarray(rows, np.int64))) for r, rows in parts]
    return pa.concat_tables(tables) if tables else pa.table({c: pa.array([], SCHEMA.field(c).type)
                                                             for c in PROFILE_COLUMNS})


def series_order(parts: Sequence[tuple[BlockReader, np.ndarray]]) -> np.ndarray:
    """An order of the parts' rows (counted one after another) by profile type, service name, series
    and time: the rows one service's query reads then lie together, in few row groups."""
    table = _profile_table(parts)
    if table.num_rows == 0:
        return np.zeros(0, np.int64)
    series, codes = np.unique(table.column("series_labels").to_numpy(zero_copy_only=False).astype(str),
                              return_inverse=True)
    service = np.array([json.loads(s).get("service_name", "") for s in series.tolist()])  # once per series
    types = table.column("profile_type").to_numpy(zero_copy_only=False).astype(str)
    keys = (table.column("time_ns").to_numpy(), codes.reshape(-1), service[codes.reshape(-1)], types)
    return np.lexsort(keys)


def _entry_columns(entries: Sequence[BlockEntry]) -> dict:
    return {
        "series_fingerprint": np.array([e.fingerprint for e in entries], np.int64),
        "series_labels": pa.array([json.dumps(e.labels, sort_keys=True) for e in entries], pa.string()),
        "profile_type": pa.array([e.profile.profile_type.id for e in entries], pa.string()),
        "time_ns": np.array([e.time_ns for e in entries], np.int64),
        "duration_ns": np.array([e.duration_ns for e in entries], np.int64),
        "period": np.array([e.profile.source.period for e in entries], np.int64),
        "total": np.array([e.profile.total for e in entries], np.int64),
        "content_hash": np.array([e.content_hash for e in entries], np.int64),
    }


def _sections(g: Gathered, profile_columns: dict) -> dict[str, dict]:
    sym = g.symbols
    fn, mp, fr, lb = sym.functions, sym.mappings, sym.frames, sym.labels
    return {
        "strings": {"string": pa.array(sym.strings, pa.string())},
        "functions": {"function_name": fn[:, 0], "function_system_name": fn[:, 1], "function_filename": fn[:, 2],
                      "function_start_line": fn[:, 3]},
        "mappings": {"mapping_filename": mp[:, 0], "mapping_build_id": mp[:, 1],
                     "mapping_memory_start": mp[:, 2].view(np.uint64), "mapping_memory_limit": mp[:, 3].view(np.uint64),
                     "mapping_file_offset": mp[:, 4].view(np.uint64), "mapping_flags": mp[:, 5]},
        "locations": {"location_function": fr["function"], "location_line": fr["line"],
                      "location_column": fr["column"], "location_address": fr["address"].view(np.uint64),
                      "location_mapping": fr["mapping"], "location_id": fr["location"]},
        "labels": {"label_set": lb["set"], "label_key": lb["key"], "label_str": lb["str"], "label_num": lb["num"],
                   "label_unit": lb["unit"]},
        "stacks": {"node_parent": g.node_parent, "node_location": g.node_frame},
        "profiles": {**profile_columns, **_entry_lists(g)},
    }


def _entry_lists(g: Gathered) -> dict:
    per_profile = np.bincount(g.owner, minlength=g.n_profiles)
    offsets = pa.array(np.concatenate([[0], np.cumsum(per_profile)]).astype(np.int32))
    return {"nodes": pa.ListArray.from_arrays(offsets, pa.array(g.node.astype(np.int32))),
            "labelsets": pa.ListArray.from_arrays(offsets, pa.array(g.label_set.astype(np.int32))),
            "values": pa.ListArray.from_arrays(offsets, pa.array(g.value.astype(np.int64)))}


def _write_parquet(sections: dict[str, dict]) -> bytes:
    tables = {name: _section_table(name, c, _length(c)) for name, c in sections.items() if _length(c)}
    profiles = _profile_groups(tables.pop("profiles")) if "profiles" in tables else []
    if len(profiles) == 1:  # profiles that fit in one group share it with the symbols
        tables["profiles"] = profiles.pop()
    bounds = np.cumsum([0] + [t.num_rows for t in tables.values()]).tolist()
    rows = {name: [start, stop] for name, start, stop in zip(tables, bounds[:-1], bounds[1:])}
    layout: dict[str, list[int]] = {name: [0] for name in tables}
    groups = [pa.concat_tables(list(tables.values()))] if tables else []
    if profiles:
        layout["profiles"] = list(range(len(groups), len(groups) + len(profiles)))
        groups.extend(profiles)
    meta = {_META_KEY: json.dumps({"version": FORMAT_VERSION, "sections": layout, "rows": rows}).encode()}
    sink = io.BytesIO()
    # No column statistics and no copy of the Arrow schema: in a block of a few profiles the footer,
    # one entry per column per section, is most of the object. The Parquet types read back as SCHEMA's.
    # Dictionaries only for the columns that repeat values: elsewhere (symbol strings, stack nodes,
    # entry lists) they cost time and make blocks about a quarter larger than zstd alone.
    with pq.ParquetWriter(sink, SCHEMA, compression="zstd", write_statistics=False, store_schema=False,
                          use_dictionary=list(_DICTIONARY_COLUMNS)) as writer:
        for table in groups:
            writer.write_table(table, row_group_size=max(table.num_rows, 1))
        writer.add_key_value_metadata(meta)
    return sink.getvalue()


def _length(columns: dict) -> int:
    return len(next(iter(columns.values())))


def _profile_groups(table: pa.Table) -> list[pa.Table]:
    """The profiles table cut into runs of rows of about PROFILE_GROUP_ENTRIES entries each: a row
    belongs to the group its first entry falls in."""
    offsets = table.column("nodes").combine_chunks().offsets.to_numpy()
    bucket = offsets[:-1] // PROFILE_GROUP_ENTRIES
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    ends = np.r_[starts[1:], table.num_rows]
    return [table.slice(int(lo), int(hi - lo)) for lo, hi in zip(starts, ends)]


def _section_table(name: str, columns: dict, n: int) -> pa.Table:
    arrays = []
    for f in SCHEMA:
        if f.name == "section":
            arrays.append(pa.repeat(pa.scalar(name), n))  # no array of n Python or numpy strings
        elif f.name in columns:
            arrays.append(_arrow(columns[f.name], f.type))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


_NUMPY_TYPES = {pa.int32(): np.int32, pa.int64(): np.int64, pa.uint64(): np.uint64}


def _arrow(column, arrow_type: pa.DataType) -> pa.Array:
    if isinstance(column, pa.Array):
        return column if column.type == arrow_type else column.cast(arrow_type)
    if arrow_type in _NUMPY_TYPES:
        return pa.array(np.asarray(column).astype(_NUMPY_TYPES[arrow_type], copy=False))
    return pa.array(column, arrow_type)


# ------------------------------------------------------------------------------------------ reading

# The columns of each section begin with its prefix (see SCHEMA)
_SECTION_PREFIXES = {"functions": "function_", "mappings": "mapping_", "locations": "location_", "labels": "label_",
                     "stacks": "node_", "strings": "string"}

# Rows are read as runs of consecutive rows when the runs average at least this many rows: a run is one
# slice copy (a Python step), while picking entries costs an index per entry.
_MIN_ROWS_PER_RUN = 4


def _taker(offsets: np.ndarray, rows: np.ndarray, counts: np.ndarray):
    """A function giving an entry column's values for the rows, in row order. Runs of consecutive rows
    (compacted blocks keep a series' profiles together) are copied as slices, else entries are picked."""
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    if len(rows) < _MIN_ROWS_PER_RUN * (len(breaks) + 1):
        picked = expand_ranges(offsets[rows], counts)
        return lambda column: column[picked]
    first, last = rows[np.r_[0, breaks]], rows[np.r_[breaks - 1, len(rows) - 1]]
    spans = list(zip(offsets[first].tolist(), offsets[last + 1].tolist()))  # one step per run, not per row
    return lambda column: np.concatenate([column[lo:hi] for lo, hi in spans]) if spans else column[:0]


class BlockReader:
    """Lazy, cached access to the sections of one block held in memory."""

    def __init__(self, data: bytes):
        self.nbytes = len(data)
        self._file = pq.ParquetFile(pa.BufferReader(data))
        meta = json.loads((self._file.metadata.metadata or {}).get(_META_KEY, b"null"))
        if meta["version"] not in READABLE_VERSIONS:
            raise ValueError(f"unsupported block format version {meta['version']}; this build reads versions "
                             f"{', '.join(map(str, READABLE_VERSIONS))}")
        self.version: int = meta["version"]
        self._sections: dict[str, list[int]] = meta["sections"]
        self._rows: dict[str, list[int]] = meta.get("rows", {})  # version 3: a shared group's runs

    def _read(self, section: str, columns: list[str]) -> pa.Table:
        groups = self._sections.get(section, [])
        if not groups:
            return pa.Table.from_arrays([pa.array([], SCHEMA.field(c).type) for c in columns], names=columns)
        tables = self.__dict__.get("_section_tables")  # while the symbols are decoded (`symbol_part`)
        if tables is None:
            return self._own_rows(section, self._file.read_row_groups(groups, columns=columns))
        if section not in tables:
            prefix = _SECTION_PREFIXES[section]
            tables[section] = self._own_rows(section, self._file.read_row_groups(
                groups, columns=[c for c in self._file.schema_arrow.names if c.startswith(prefix)]))
        return tables[section].select(columns)

    def _own_rows(self, section: str, table: pa.Table) -> pa.Table:
        """The section's rows of a table read from its group(s), which it may share (version 3)."""
        if section not in self._rows:
            return table
        start, stop = self._rows[section]
        return table.slice(start, stop - start)

    def _section_length(self, section: str) -> int:
        if section in self._rows:
            start, stop = self._rows[section]
            return stop - start
        return sum(self._file.metadata.row_group(g).num_rows for g in self._sections.get(section, []))

    def _numpy(self, section: str, column: str) -> np.ndarray:
        return self._read(section, [column]).column(0).to_numpy()

    def _ints(self, section: str, column: str, v1_default: int | None = None, rows: int = 0) -> np.ndarray:
        """An integer column as int64; a column version 1 lacks is `v1_default` in every row."""
        if self.version == 1 and v1_default is not None:
            return np.full(rows, v1_default, np.int64)
        return self._numpy(section, column).astype(np.int64)

    @cached_property
    def strings(self) -> np.ndarray:
        return self._read("strings", ["string"]).column(0).to_numpy(zero_copy_only=False)

    @cached_property
    def node_parent(self) -> np.ndarray:
        return self._numpy("stacks", "node_parent").astype(np.int64)

    @cached_property
    def node_location(self) -> np.ndarray:
        """The frame (a row of the locations section) of each stack node; -1 for the root."""
        return self._numpy("stacks", "node_location").astype(np.int64)

    @cached_property
    def profiles(self) -> pa.Table:
        """One row per profile: series, type, time, duration, period, total and content hash."""
        if self.version >= 2:
            return self._read("profiles", list(PROFILE_COLUMNS))
        table = self._read("profiles", list(PROFILE_COLUMNS[:-1]))
        return table.append_column("content_hash", pa.array(np.zeros(table.num_rows, np.int64)))

    @cached_property
    def _group_starts(self) -> np.ndarray:
        """The first profile row of each row group of the profiles section, and the row count last."""
        counts = [self._section_length("profiles")] if "profiles" in self._rows else \
            [self._file.metadata.row_group(g).num_rows for g in self._sections.get("profiles", [])]
        return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def _group_lists(self, group: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(entry offsets, nodes, label sets, values) of one row group of profiles, decoded on first use
        and kept (nodes and label sets as they are stored, int32)."""
        cache = self.__dict__.setdefault("_lists", {})
        if group not in cache:
            names = ["nodes", "values"] if self.version == 1 else ["nodes", "values", "labelsets"]
            table = self._own_rows("profiles", self._file.read_row_group(self._sections["profiles"][group],
                                                                         columns=names)).combine_chunks()
            nodes = table.column(0).chunk(0)
            offsets = nodes.offsets.to_numpy().astype(np.int64)
            sets = (table.column(2).chunk(0).flatten().to_numpy() if self.version >= 2
                    else np.zeros(offsets[-1] - offsets[0], np.int32))
            cache[group] = (offsets - offsets[0], nodes.flatten().to_numpy(), sets,
                            table.column(1).chunk(0).flatten().to_numpy())
        return cache[group]

    def release_entries(self) -> None:
        """Let go of the profile entries decoded so far (they are decoded again if asked for)."""
        self.__dict__.pop("_lists", None)

    @property
    def footer_bytes(self) -> int:
        """Memory the parsed footer (parquet metadata) takes while this reader is open."""
        meta = self._file.metadata
        return meta.num_columns * (FOOTER_BYTES_PER_COLUMN + meta.num_row_groups * FOOTER_BYTES_PER_CHUNK)

    @property
    def decoded_bytes(self) -> int:
        """Memory held by the profile entries decoded so far."""
        decoded = tuple(self.__dict__.get("_lists", {}).values())  # a snapshot: queries may be adding to it
        return sum(a.nbytes for lists in decoded for a in lists)

    def entry_parts(self, rows: np.ndarray, weights: np.ndarray | None = None, *, owners: bool = True,
                    label_sets: bool = True) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """`sample_entries` one row group at a time, so a caller that folds them keeps memory bounded;
        owners or label sets not asked for are None (a merge needs neither)."""
        rows = np.asarray(rows, np.int64)
        group = np.searchsorted(self._group_starts, rows, side="right") - 1
        order = np.argsort(group, kind="stable")
        bounds = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1], True]) if len(rows) else [0]
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            yield self._group_entries(int(group[order[lo]]), order[lo:hi], rows, weights, owners, label_sets)

    def sample_entries(self, rows: np.ndarray, weights: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(owner, stack node, label set, self value) of every entry of the given profile rows, where
        owner is the entry's index into `rows`; values are float64 when weighted. Only the row groups
        holding the rows are decoded."""
        parts = list(self.entry_parts(rows, weights))
        if not parts:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty, np.zeros(0, np.int64 if weights is None else np.float64)
        return tuple(np.concatenate(c) if len(parts) > 1 else c[0] for c in zip(*parts))  # type: ignore[return-value]

    def _group_entries(self, group: int, pick: np.ndarray, rows: np.ndarray, weights: np.ndarray | None,
                       owners: bool = True, label_sets: bool = True):
        offsets, nodes, sets, values = self._group_lists(group)
        local = rows[pick] - self._group_starts[group]
        counts = offsets[local + 1] - offsets[local]
        take = _taker(offsets, local, counts)
        owner = np.repeat(pick, counts) if owners else None
        picked_sets = take(sets) if label_sets else None
        if weights is None:
            return owner, take(nodes), picked_sets, take(values)
        return owner, take(nodes), picked_sets, take(values) * np.repeat(np.asarray(weights, np.float64)[pick], counts)

    # -------------------------------------------------------------------------------------- symbols

    @cached_property
    def frames(self) -> dict[str, np.ndarray]:
        """Per frame (row of the locations section): function row (-1: none), line, column, address
        (uint64), mapping row (-1: none) and location id; a location's frames are consecutive."""
        n = self._section_length("locations")
        return {
            "function": self._ints("locations", "location_function"),
            "line": self._ints("locations", "location_line"),
            "column": self._ints("locations", "location_column", 0, n),
            "address": self._numpy("locations", "location_address").astype(np.uint64),
            "mapping": self._ints("locations", "location_mapping"),
            "location": self._ints("locations", "location_id") if self.version >= 2 else np.arange(n, dtype=np.int64),
        }

    @cached_property
    def functions(self) -> dict[str, np.ndarray]:
        """Per function: name, system_name, filename (string indices) and start_line."""
        return {c: self._ints("functions", f"function_{c}") for c in ("name", "system_name", "filename", "start_line")}

    @cached_property
    def mappings(self) -> dict[str, np.ndarray]:
        """Per mapping: filename, build_id (string indices), memory_start, memory_limit, file_offset
        (uint64) and flags (bits: has_functions, has_filenames, has_line_numbers, has_inline_frames)."""
        n = self._section_length("mappings")
        out = {c: self._ints("mappings", f"mapping_{c}") for c in ("filename", "build_id")}
        for c in ("memory_start", "memory_limit", "file_offset"):
            out[c] = self._numpy("mappings", f"mapping_{c}").astype(np.uint64)
        out["flags"] = self._ints("mappings", "mapping_flags", 0, n)
        return out

    @cached_property
    def label_sets(self) -> dict[str, np.ndarray]:
        """One row per label of each label set: set, key, str, unit (string indices) and num."""
        if self.version == 1:
            return {c: np.zeros(0, np.int64) for c in ("set", "key", "str", "num", "unit")}
        return {c: self._ints("labels", f"label_{c}") for c in ("set", "key", "str", "num", "unit")}

    @property
    def n_label_sets(self) -> int:
        """Label sets are 0 (no labels) to n_label_sets - 1."""
        return int(self.label_sets["set"].max(initial=0)) + 1

    def sample_label_values(self, name: str) -> np.ndarray:
        """The value of sample label `name` in each label set ("" where absent); a numeric label is its
        number as text. Cached per name: label sets never change."""
        cache = self.__dict__.setdefault("_label_values", {})
        if name not in cache:
            lb, strings = self.label_sets, self.strings
            values = np.full(self.n_label_sets, "", object)
            rows = np.flatnonzero(strings[lb["key"]] == name) if len(lb["key"]) else np.zeros(0, np.int64)
            text = strings[lb["str"][rows]]
            numeric = text == ""
            text[numeric] = lb["num"][rows][numeric].astype(str)
            values[lb["set"][rows]] = text
            cache[name] = values
        return cache[name]

    def sample_label_names(self, sets: np.ndarray) -> np.ndarray:
        """The distinct sample label names used by the given label sets."""
        lb = self.label_sets
        used = np.isin(lb["set"], sets)
        return np.unique(self.strings[np.unique(lb["key"][used])].astype(str))

    @cached_property
    def symbol_part(self) -> SymbolPart:
        """This block's symbols as one part of a merge (see `symbols`). Each symbol section is read in
        one call meanwhile, not one per column: compaction reads hundreds of small blocks, and a read's
        fixed cost was a third of its CPU."""
        self.__dict__["_section_tables"] = {}
        try:
            fr, fn, mp, lb = self.frames, self.functions, self.mappings, self.label_sets
        finally:
            self.__dict__.pop("_section_tables", None)
        n_locations = int(fr["location"].max(initial=-1)) + 1
        first = np.searchsorted(fr["location"], np.arange(n_locations))
        has_line = fr["function"] >= 0
        line_counts = np.bincount(fr["location"][has_line], minlength=n_locations)
        return SymbolPart(
            strings=self.strings,
            functions=np.stack([fn["name"], fn["system_name"], fn["filename"], fn["start_line"]], axis=1),
            mappings=np.stack([mp["filename"], mp["build_id"], mp["memory_start"].view(np.int64),
                               mp["memory_limit"].view(np.int64), mp["file_offset"].view(np.int64), mp["flags"]],
                              axis=1),
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

    def _location_names(self) -> np.ndarray:
        """Function name of each frame. An unsymbolized frame is named after its mapping's file and
        its address within that file (address - memory start + file offset), `[libc.so.6] 0x4f2a0`,
        so it stays the same across processes that load the file at different addresses; without a
        mapping that holds it, it is its address."""
        function = self.frames["function"]
        names = np.empty(len(function), object)
        known = function >= 0
        names[known] = self.strings[self.functions["name"][function[known]]]
        unknown = np.flatnonzero(~known)
        address = self.frames["address"][unknown].astype(np.uint64)
        mapping = self.frames["mapping"][unknown]
        names[unknown] = np.char.add("0x", np.char.mod("%x", address))
        mp = self.mappings
        mapped = mapping >= 0
        inside = np.zeros(len(mapped), bool)
        inside[mapped] = ((mp["memory_start"][mapping[mapped]] <= address[mapped])
                          & (address[mapped] < mp["memory_limit"][mapping[mapped]]))
        mapped = inside  # an address outside its mapping's range is shown as it is
        if mapped.any():
            m = mapping[mapped]
            offset = address[mapped] - mp["memory_start"][m] + mp["file_offset"][m]
            prefix = self._mapping_prefixes()[m]
            names[unknown[mapped]] = np.char.add(prefix.astype(str), np.char.mod("%x", offset))
        return names

    def _mapping_prefixes(self) -> np.ndarray:
        """`[file base name] 0x` per mapping (a name already in brackets, like [vdso], kept as it is)."""
        files = self.strings[self.mappings["filename"]].astype(str).tolist()
        bases = [f.rsplit("/", 1)[-1] for f in files]  # one step per mapping, not per frame
        return np.array([(b if b.startswith("[") else f"[{b}]") + " 0x" if b else "0x" for b in bases], object)

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

    @cached_property
    def location_line_names(self) -> np.ndarray:
        """Per frame, `function file:line` (the file's base name) for line granularity; frames without
        a line keep their name."""
        names = self.location_names.copy()
        function = self.frames["function"]
        known = np.flatnonzero(function >= 0)
        if len(known):
            files = self.strings[self.functions["filename"][function[known]]].astype(str)
            base = np.array([f.rsplit("/", 1)[-1] for f in np.unique(files).tolist()], object)
            file_base = base[np.searchsorted(np.unique(files), files)]
            where = np.char.add(np.char.add(file_base.astype(str), ":"), self.frames["line"][known].astype(str))
            names[known] = np.char.add(np.char.add(names[known].astype(str), " "), where).astype(object)
        return names

    def location_table(self) -> dict[str, np.ndarray]:
        """Per frame: function name, system name and file name strings, line, address."""
        function = self.frames["function"]
        safe = np.maximum(function, 0)
        def string_col(col: str) -> np.ndarray:
            idx = self.functions[col]
            out = self.strings[idx[safe]] if len(idx) else np.full(len(function), "", object)
            return np.where(function >= 0, out, "")
        return {
            "name": self.location_names,
            "system_name": string_col("system_name"),
            "filename": string_col("filename"),
            "line": self.frames["line"],
            "address": self.frames["address"],
        }
