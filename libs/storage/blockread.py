"""Reading blocks (the format is `blockformat`'s): `BlockReader` decodes a block's sections lazily and
keeps what it decoded, a profile row group's entries only until told to let go of them."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from flamewatch.pprof.wire import expand_ranges
from flamewatch.storage.blockformat import (
    META_KEY,
    PROFILE_COLUMNS,
    READABLE_VERSIONS,
    SCHEMA,
    SECTION_PREFIXES,
    TREE_SPAN_NS,
)
from flamewatch.storage.errors import UnreadableBlock
from flamewatch.storage.framenames import frame_binaries, frame_line_names, frame_names, frame_table
from flamewatch.storage.frames import forest_depths
from flamewatch.storage.ranged import RangedObject
from flamewatch.storage.symbols import SymbolPart, stored_part

# What the parsed parquet footer of an open block holds in C++ memory that no Python figure shows: per column
# (its schema) and per column chunk (row group x column). Measured from 2 to 14 row groups of 36 columns:
# about 48 KB + 750 B a chunk, so a flush block of one group holds ~75 KB, a dozen times its file.
FOOTER_BYTES_PER_COLUMN = 1400
FOOTER_BYTES_PER_CHUNK = 800

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


@dataclass(frozen=True, eq=False)
class StoredTrees:
    """A block's trees section: per tree (in the order of their first profiles: a compacted block's by
    profile type, service, series and hour; by fingerprint and hour in blocks written before) its series and hour,
    and its entries `offsets[i]:offsets[i + 1]` of (stack node, summed value); per profile row of the
    block, the tree that holds it (-1: none), and per tree how many rows it sums.

    The entries' values are kept as codes into `value_table` when they take few distinct values, as sums
    of sampled profiles do (a fleet hour block's 200,800 entries hold about 140): one or two bytes each
    instead of eight, so a querier's cache holds three times the blocks. `values` decodes a part."""

    fingerprint: np.ndarray  # int64
    hour: np.ndarray  # int64 ns, the start of the hour
    offsets: np.ndarray  # int64, one more than trees
    node: np.ndarray  # uint16 when the block's stack nodes fit, else int32
    value: np.ndarray  # int64 sums, or (with `value_table`) uint8 or uint16 codes into it
    profile_tree: np.ndarray  # int64 per profile row
    profiles: np.ndarray  # int64 per tree
    value_table: np.ndarray | None = None  # int64: the distinct values `value` codes (None: not coded)

    def values(self, at: slice | np.ndarray) -> np.ndarray:
        """The int64 values of the entries at `at` (a slice or indices)."""
        part = self.value[at]
        return part if self.value_table is None else self.value_table[part]

    @cached_property
    def by_series(self) -> np.ndarray:
        """The trees in order of their series' fingerprints (`of_series` counts into it)."""
        return np.argsort(self.fingerprint, kind="stable")

    def of_series(self, fingerprints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each series' trees start in `by_series`, and how many it has (0: none)."""
        ordered = self.fingerprint[self.by_series]
        first = np.searchsorted(ordered, fingerprints, side="left")
        return first, np.searchsorted(ordered, fingerprints, side="right") - first

    def find(self, fingerprint: np.ndarray, hour: np.ndarray) -> np.ndarray:
        """The tree of each (series fingerprint, hour); -1 where the block holds none."""
        out = np.full(len(fingerprint), -1, np.int64)
        if not len(self.fingerprint) or not len(fingerprint):
            return out
        # Ranks among the trees' own fingerprints and hours (a few thousand, sorted here), then one
        # searchsorted per row: no sort of the rows' (64-bit hash, hour) pairs.
        series, tree_series = np.unique(self.fingerprint, return_inverse=True)
        hours, tree_hour = np.unique(self.hour, return_inverse=True)
        tree_key = tree_series.reshape(-1) * len(hours) + tree_hour.reshape(-1)
        order = np.argsort(tree_key)
        s = np.minimum(np.searchsorted(series, fingerprint), len(series) - 1)
        h = np.minimum(np.searchsorted(hours, hour), len(hours) - 1)
        key = s * len(hours) + h
        at = np.minimum(np.searchsorted(tree_key[order], key), len(order) - 1)
        hit = (series[s] == fingerprint) & (hours[h] == hour) & (tree_key[order][at] == key)
        out[hit] = order[at[hit]]
        return out


def _narrow(nodes: np.ndarray) -> np.ndarray:
    """Stack nodes as uint16 when they fit, else int32."""
    return nodes.astype(np.uint16 if len(nodes) and int(nodes.max()) < 1 << 16 else np.int32, copy=False)


def _coded(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Trees' values as (codes or values, profile_tree and profiles to be filled, the table or None):
    coded by hashing (no sort) when at most 65,536 distinct values, else int64 as they are."""
    import pyarrow.compute as pc  # here: a process imports it at its first block with trees, not at start

    encoded = pc.dictionary_encode(values)
    table = encoded.dictionary.to_numpy().astype(np.int64)
    empty = np.zeros(0, np.int64)
    if len(table) > 1 << 16:
        return values.to_numpy().astype(np.int64), empty, empty, None
    codes = encoded.indices.to_numpy().astype(np.uint8 if len(table) <= 1 << 8 else np.uint16)
    return codes, empty, empty, table


def _with_footer(ranged: RangedObject) -> pa.Buffer:
    """The object's buffer once its Parquet footer is fetched (a footer longer than the tail read at open,
    of a block of many row groups, is fetched now)."""
    end = ranged.read(ranged.size - 8, 8)
    length = int.from_bytes(end[:4], "little")
    ranged.fetch([(ranged.size - 8 - length, length + 8)])
    return ranged.buffer


class BlockReader:
    """Lazy, cached access to the sections of one block (`key`: its object key, named in errors): its
    bytes held in memory, or a `RangedObject` that fetches the ranges of the columns read as they are
    read (pyarrow coalesces a read's nearby ranges into one)."""

    def __init__(self, data: bytes | RangedObject, key: str | None = None):
        self._ranged = data if isinstance(data, RangedObject) else None
        if self._ranged is None:
            self._whole = len(data)
            self._file = pq.ParquetFile(pa.BufferReader(data))
        else:
            self._file = pq.ParquetFile(pa.BufferReader(_with_footer(data)))
        # Queries share a cached block and read its sections on first use, so two may at once; pyarrow's
        # ParquetFile is not safe for that ("ReadRangeCache did not find matching cache entry")
        self._reading = threading.Lock()
        meta = json.loads((self._file.metadata.metadata or {}).get(META_KEY, b"null"))
        if meta["version"] not in READABLE_VERSIONS:
            raise UnreadableBlock(meta["version"], READABLE_VERSIONS, key)
        self.version: int = meta["version"]
        self._sections: dict[str, list[int]] = meta["sections"]
        self._rows: dict[str, list[int]] = meta.get("rows", {})  # version 3: a shared group's runs
        if self._ranged is not None:
            # What every query reads first, the symbols, and what a query over trees reads besides, the trees
            # and the columns that place them: fetched by whoever opens the block (the cache's fetch threads,
            # in parallel), in as few requests as the gaps allow, not a range at a time as the query folds it
            opening = self._ranges({g for name in SECTION_PREFIXES for g in self._sections.get(name, [])}, None)
            if self.has_trees:
                opening += self._ranges(self._sections["trees"], ["series_fingerprint", "time_ns", "nodes", "values"])
                opening += self._ranges(self._sections["profiles"], ["series_fingerprint", "time_ns"])
            self._ranged.fetch(opening)
            self._ranged.close_window()

    def _ranges(self, groups: Iterable[int], columns: list[str] | None) -> list[tuple[int, int]]:
        """(start, length) of the column chunks (all with `columns` None) of the row groups."""
        meta, ranges = self._file.metadata, []
        for g in groups:
            group = meta.row_group(g)
            for c in range(group.num_columns):
                chunk = group.column(c)
                if columns is None or chunk.path_in_schema.split(".", 1)[0] in columns:
                    start = min(chunk.data_page_offset, chunk.dictionary_page_offset or chunk.data_page_offset)
                    ranges.append((start, chunk.total_compressed_size))
        return ranges

    def _read_groups(self, groups: list[int], columns: list[str]) -> pa.Table:
        """The columns of the row groups; of a block read in ranges, fetched first (pyarrow reads the buffer,
        where anything not fetched is zeros)."""
        if self._ranged is not None:
            self._ranged.fetch(self._ranges(groups, columns))
        return self._file.read_row_groups(groups, columns=columns)

    @property
    def nbytes(self) -> int:
        """The block's bytes held in memory: all of them, or the ranges fetched so far."""
        return self._whole if self._ranged is None else self._ranged.held_bytes

    @cached_property
    def symbol_bytes(self) -> int:
        """The stored (compressed) size of the row groups that hold the symbol sections and stack tree (kept:
        the cache sums every block's size as it loads one)."""
        groups = {g for section in SECTION_PREFIXES for g in self._sections.get(section, [])}
        meta = self._file.metadata
        return sum(meta.row_group(g).column(c).total_compressed_size for g in groups for c in range(meta.num_columns))

    def _read(self, section: str, columns: list[str]) -> pa.Table:
        groups = self._sections.get(section, [])
        if not groups:
            return pa.Table.from_arrays([pa.array([], SCHEMA.field(c).type) for c in columns], names=columns)
        tables = self.__dict__.get("_section_tables")  # while the symbols are decoded (`symbol_part`)
        if tables is None:
            with self._reading:
                return self._own_rows(section, self._read_groups(groups, columns))
        if section not in tables:
            prefix = SECTION_PREFIXES[section]
            with self._reading:
                tables[section] = self._own_rows(section, self._read_groups(
                    groups, [c for c in self._file.schema_arrow.names if c.startswith(prefix)]))
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
            return self._own_copy("profiles", self._read("profiles", list(PROFILE_COLUMNS)))
        table = self._read("profiles", list(PROFILE_COLUMNS[:-1]))
        return table.append_column("content_hash", pa.array(np.zeros(table.num_rows, np.int64)))

    def profile_columns(self, *names: str) -> list[np.ndarray]:
        """Numeric columns of the profiles section (`series_fingerprint`, `time_ns`, `duration_ns`,
        `period`, `total`), read together on first use and kept. A query needs no more of a profile's row:
        the whole `profiles` table also holds each row's series labels as JSON, 2.9 MB decoded in a fleet
        hour block whose trees a query reads in 0.6 MB."""
        columns = self.__dict__.setdefault("_profile_columns", {})
        missing = [name for name in names if name not in columns]
        if missing:
            table = self.__dict__.get("profiles")
            read = table.select(missing) if table is not None else self._read("profiles", missing)
            columns.update((name, read.column(name).to_numpy()) for name in missing)
        return [columns[name] for name in names]

    def _own_copy(self, section: str, table: pa.Table) -> pa.Table:
        """A section's rows read from a shared group, copied: a slice would keep every column as long as
        the whole group, symbol rows included (in a flush block of 48 profiles, ~350 KB instead of ~5 KB)."""
        if section not in self._rows:
            return table
        return pa.Table.from_arrays([pa.concat_arrays(c.chunks) for c in table.columns], names=table.column_names)

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
            with self._reading:
                table = self._own_rows("profiles", self._read_groups([self._sections["profiles"][group]],
                                                                      self._entry_columns)).combine_chunks()
            nodes = table.column(0).chunk(0)
            offsets = nodes.offsets.to_numpy().astype(np.int64)
            sets = (table.column(2).chunk(0).flatten().to_numpy() if self.version >= 2
                    else np.zeros(offsets[-1] - offsets[0], np.int32))
            cache[group] = (offsets - offsets[0], nodes.flatten().to_numpy(), sets,
                            table.column(1).chunk(0).flatten().to_numpy())
        return cache[group]

    @property
    def _entry_columns(self) -> list[str]:
        return ["nodes", "values"] if self.version == 1 else ["nodes", "values", "labelsets"]

    def release_entries(self) -> None:
        """Let go of the profile entries decoded so far (they are decoded again if asked for)."""
        self.__dict__.pop("_lists", None)

    def release_symbols(self) -> None:
        """Let go of the decoded symbols and what was made of them (decoded again if asked for):
        compaction merges each block's symbols once."""
        for name in ("strings", "frames", "functions", "mappings", "label_sets", "symbol_part", "_label_values",
                     "location_names", "node_names", "location_line_names"):
            self.__dict__.pop(name, None)

    def release_stacks(self) -> None:
        """Let go of the decoded stack tree (decoded again if asked for)."""
        for name in ("node_parent", "node_location", "node_depth", "node_names"):
            self.__dict__.pop(name, None)

    @property
    def footer_bytes(self) -> int:
        """Memory the parsed footer (parquet metadata) takes while this reader is open."""
        meta = self._file.metadata
        return meta.num_columns * (FOOTER_BYTES_PER_COLUMN + meta.num_row_groups * FOOTER_BYTES_PER_CHUNK)

    @property
    def decoded_bytes(self) -> int:
        """Memory held by what queries decoded so far: profile entries, trees and profile columns."""
        decoded = tuple(self.__dict__.get("_lists", {}).values())  # a snapshot: queries may be adding to it
        trees = self.__dict__.get("trees")
        tree_bytes = 0 if trees is None else sum(
            a.nbytes for a in (trees.node, trees.value, trees.profile_tree, trees.value_table) if a is not None)
        columns = tuple(self.__dict__.get("_profile_columns", {}).values())
        table = self.__dict__.get("profiles")
        return (sum(a.nbytes for lists in decoded for a in lists) + tree_bytes + sum(a.nbytes for a in columns)
                + (0 if table is None else table.nbytes))

    def entry_parts(self, rows: np.ndarray, weights: np.ndarray | None = None, *, owners: bool = True,
                    label_sets: bool = True) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """`sample_entries` one row group at a time, so a caller that folds them keeps memory bounded;
        owners or label sets not asked for are None (a merge needs neither)."""
        rows = np.asarray(rows, np.int64)
        group = np.searchsorted(self._group_starts, rows, side="right") - 1
        decoded = self.__dict__.get("_lists", {})
        if self._ranged is not None and len(decoded) < len(self._sections.get("profiles", ())):
            # The entries of every row group the rows are in, fetched together before the first is decoded: in
            # as few requests as their gaps allow (one, from S3), not one for each row group as it is folded
            wanted = [self._sections["profiles"][g] for g in np.unique(group).tolist() if g not in decoded]
            if len(wanted) > 1:
                self._ranged.fetch(self._ranges(wanted, self._entry_columns))
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

    # -------------------------------------------------------------------------------------- trees

    @property
    def has_trees(self) -> bool:
        """Whether the block holds pre-merged trees (compacted since they were written)."""
        return "trees" in self._sections

    @cached_property
    def trees(self) -> StoredTrees:
        """The pre-merged tree of each series and hour the block holds (none when it has no trees section)."""
        table = self._read("trees", ["series_fingerprint", "time_ns", "nodes", "values"]).combine_chunks()
        if not table.num_rows:
            empty = np.zeros(0, np.int64)
            return StoredTrees(empty, empty, np.zeros(1, np.int64), np.zeros(0, np.int32), empty,
                               np.full(self._section_length("profiles"), -1, np.int64), empty)
        nodes = table.column("nodes").chunk(0)
        offsets = nodes.offsets.to_numpy().astype(np.int64)
        trees = StoredTrees(table.column("series_fingerprint").to_numpy().astype(np.int64),
                            table.column("time_ns").to_numpy().astype(np.int64), offsets - offsets[0],
                            # kept in the querier's cache (a fleet hour's trees are 139,200 entries): int32 as
                            # stored, or uint16 when the block's stack has fewer than 65,536 nodes
                            _narrow(nodes.flatten().to_numpy()),
                            *_coded(table.column("values").chunk(0).flatten()))
        time, fingerprint = self.profile_columns("time_ns", "series_fingerprint")
        of_row = trees.find(fingerprint, time - time % TREE_SPAN_NS)
        held = np.bincount(of_row[of_row >= 0], minlength=len(trees.fingerprint))
        return dataclasses.replace(trees, profile_tree=of_row, profiles=held)

    @cached_property
    def untreed(self) -> tuple[np.ndarray, np.ndarray]:
        """The profile rows no pre-merged tree holds (a series' hours too thin for one; every row in a
        block without trees), and their series' fingerprints: what reading a series whole takes besides
        its trees."""
        rows = np.flatnonzero(self.trees.profile_tree < 0) if self.has_trees else \
            np.arange(self._section_length("profiles"))
        return rows, self.profile_columns("series_fingerprint")[0][rows].astype(np.int64)

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
        return stored_part(
            self.strings, np.stack([fn["name"], fn["system_name"], fn["filename"], fn["start_line"]], axis=1),
            np.stack([mp["filename"], mp["build_id"], mp["memory_start"].view(np.int64),
                      mp["memory_limit"].view(np.int64), mp["file_offset"].view(np.int64), mp["flags"]], axis=1),
            fr, lb)

    @cached_property
    def node_depth(self) -> np.ndarray:
        """Depth of each node (the root is 0), computed once per block."""
        return forest_depths(self.node_parent)

    # -------------------------------------------------------------------------------------- names

    @cached_property
    def location_names(self) -> np.ndarray:
        """Function name of each frame (see `framenames.frame_names`)."""
        return frame_names(self.strings, self.frames, self.functions, self.mappings)

    @cached_property
    def location_binaries(self) -> np.ndarray:
        """The mapping's file of each frame, "" where it has none (see `framenames.frame_binaries`)."""
        return frame_binaries(self.strings, self.frames, self.mappings)

    @cached_property
    def node_names(self) -> np.ndarray:
        """Function name per stack node (the root is "total")."""
        names = np.empty(len(self.node_parent), object)
        names[0] = "total"
        names[1:] = self.location_names[self.node_location[1:]]
        return names

    @cached_property
    def location_line_names(self) -> np.ndarray:
        """Per frame, `function file:line` for line granularity; frames without a line keep their name."""
        return frame_line_names(self.location_names, self.strings, self.frames, self.functions)

    def location_table(self) -> dict[str, np.ndarray]:
        """Per frame: function name, system name and file name strings, line, address."""
        return frame_table(self.location_names, self.strings, self.frames, self.functions)
