"""Writing blocks (the format is `blockformat`'s): a flush block from typed profiles (`write_block`), and a
new block from chosen rows of stored blocks (`compact`, ordered by `series_order`), with the pre-merged
tree of each series and hour it holds (`_Trees`)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from flamewatch.pprof.profile_types import TypedProfile
from flamewatch.storage.blockformat import (
    FORMAT_VERSION,
    META_KEY,
    PROFILE_COLUMNS,
    SCHEMA,
    TREE_MIN_PROFILES,
    TREE_SPAN_NS,
)
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.frames import row_codes, sums_by
from flamewatch.storage.gather import from_profiles, stage_blocks
from flamewatch.storage.symbols import Symbols

# Entries per row group of the profiles section. Smaller groups mean less decoded per selective query
# and a bigger footer (a few KiB per group).
PROFILE_GROUP_ENTRIES = 1 << 17

# The entries' values too: sampled values are multiples of a period with small counts, so a block holds
# few distinct ones (a fleet's hour block: about 140 among 200,000 tree values), and a dictionary of them
# with bit-packed indices stores a pre-merged tree's values in a quarter of what zstd alone does (the
# fleet's hour blocks with trees were 40 % larger than without, 13 % with it; raw profiles 9 % smaller).
# Past pyarrow's dictionary page limit a column chunk falls back to plain encoding by itself.
_DICTIONARY_COLUMNS = ("section", "series_labels", "profile_type", "values.list.element")


@dataclass(frozen=True, eq=False)
class BlockEntry:
    """One typed profile to store, with its series."""

    labels: dict[str, str]
    fingerprint: int
    profile: TypedProfile
    time_ns: int
    duration_ns: int
    content_hash: int = 0


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
    g = from_profiles(list(sources.values()), list(owners.values()), list(values.values()))
    sink = io.BytesIO()
    block = _BlockFile(sink, _symbol_sections(g.symbols, g.node_parent, g.node_frame))
    block.add_profiles(_entry_columns(entries), np.bincount(g.owner, minlength=g.n_profiles), g.node, g.label_set,
                       g.value)
    block.close()
    return sink.getvalue()


def compact(parts: Sequence[tuple[BlockReader, np.ndarray]], order: np.ndarray | None = None,
            trees: bool = False) -> bytes:
    """`compact_into` a buffer: the new block's bytes."""
    sink = io.BytesIO()
    compact_into(sink, parts, order, trees)
    return sink.getvalue()


def compact_into(sink: BinaryIO, parts: Sequence[tuple[BlockReader, np.ndarray]],
                 order: np.ndarray | None = None, trees: bool = False) -> bool:
    """Write to `sink` a new block holding the given profile rows of the given blocks (any readable version);
    symbols, label sets and stacks are de-duplicated across all of them and every per-profile column is
    carried over. Row i of the new block is input row `order[i]`, counting the parts' rows one after
    another (None: in the order given).

    The rows are written a row group at a time: what is held at once besides the merged symbols and stack
    tree is one group's entries, whatever the number of profiles (`gather.stage_blocks`). With `trees`,
    the block also holds the pre-merged tree of each series and hour of its profiles (`_Trees`); returns
    whether it holds any."""
    profiles = _profile_table(parts)
    order = np.arange(profiles.num_rows) if order is None else np.asarray(order, np.int64)
    profiles = profiles.take(pa.array(order))
    staged = stage_blocks([(r, np.asarray(rows, np.int64)) for r, rows in parts])
    merged = _Trees(profiles) if trees else None
    try:
        block = _BlockFile(sink, _symbol_sections(staged.symbols, staged.node_parent, staged.node_frame))
        # about one row group of entries at a time (a row's entries once merged are at most those stored)
        bounds = np.searchsorted(np.cumsum(staged.row_entries[order]), np.arange(0, int(staged.row_entries.sum()),
                                                                                  PROFILE_GROUP_ENTRIES), "right")
        bounds = np.unique(np.r_[0, bounds, len(order)])
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            columns = {c: profiles.column(c).slice(lo, hi - lo).combine_chunks() for c in PROFILE_COLUMNS}
            counts, node, label_set, value = staged.entries(order[lo:hi])
            block.add_profiles(columns, counts, node, label_set, value)
            if merged is not None:
                merged.add(lo, hi, counts, node, value)
        if merged is not None:
            block.add_trees(*merged.section())
        block.close()
        return block.has_trees
    finally:
        staged.close()


class _Trees:
    """The trees section of a block being written: per series and hour of its profiles (that has at least
    TREE_MIN_PROFILES), their values summed per stack node, gathered as the profiles are written a row
    group at a time. Sums are exact integer sums, so a query adding a tree gets what adding its profiles
    gives."""

    def __init__(self, profiles: pa.Table):
        fingerprint = profiles.column("series_fingerprint").to_numpy()
        time = profiles.column("time_ns").to_numpy()
        hour = time - time % TREE_SPAN_NS
        # Each row's (series, hour) as a small code: a sum per (code, node) packs into one int64 key, where a
        # 64-bit fingerprint would not. Codes go in the order of each tree's first row, so the trees lie as
        # the profiles do (compacted: by profile type, service, series, hour) and a query of one type or
        # service reads a few runs of them, not trees scattered by their fingerprints' hashes
        code, first = row_codes([fingerprint, hour])
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        self._tree, first = rank[code], first[order]
        self._fingerprint, self._hour = fingerprint[first], hour[first]
        self._in_tree = np.bincount(self._tree)[self._tree] >= TREE_MIN_PROFILES if len(first) else \
            np.zeros(0, bool)
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (tree, node, sum) per call of add

    def add(self, lo: int, hi: int, counts: np.ndarray, node: np.ndarray, value: np.ndarray) -> None:
        """The entries of rows [lo, hi) (`counts` per row): summed per (series, hour, node) at once, so what
        is kept grows with the trees, not the entries."""
        row = np.repeat(np.arange(lo, hi, dtype=np.int64), counts)
        kept = self._in_tree[row]
        tree, node, value = self._tree[row[kept]], np.asarray(node, np.int64)[kept], np.asarray(value)[kept]
        first, sums = sums_by([tree, node], value)
        self._parts.append((tree[first], node[first], sums))

    def section(self) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray]:
        """(per-tree columns, entries per tree, node, value), trees in the order of their first rows, each
        tree's nodes ascending; nodes whose sum is zero are left out."""
        tree, node, value = (np.concatenate(c) for c in zip(*self._parts)) if self._parts else \
            (np.zeros(0, np.int64),) * 3
        first, sums = sums_by([tree, node], value)
        keep = sums != 0
        tree, node, sums = tree[first][keep], node[first][keep], sums[keep]
        starts = np.flatnonzero(np.r_[True, tree[1:] != tree[:-1]]) if len(tree) else np.zeros(0, np.int64)
        columns = {"series_fingerprint": self._fingerprint[tree[starts]], "time_ns": self._hour[tree[starts]],
                   "duration_ns": np.full(len(starts), TREE_SPAN_NS, np.int64),
                   "total": np.add.reduceat(sums, starts) if len(starts) else np.zeros(0, np.int64)}
        return columns, np.diff(np.r_[starts, len(tree)]).astype(np.int64), node, sums


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


def _symbol_sections(sym: Symbols, node_parent: np.ndarray, node_frame: np.ndarray) -> dict[str, dict]:
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
        "stacks": {"node_parent": node_parent, "node_location": node_frame},
    }


class _BlockFile:
    """A block written to a sink a row group at a time: the symbol sections (group 0) are given first, the
    profiles then in order in as many calls as suit the caller (`add_profiles`); `close` writes the footer.

    Profiles are cut into row groups of about PROFILE_GROUP_ENTRIES entries, a row belonging to the group
    its first entry falls in. When all of them fit in one group they share group 0 with the symbols, so
    the first group is held back until a second one begins."""

    def __init__(self, sink: BinaryIO, symbol_sections: dict[str, dict]):
        self._symbols = {name: _section_table(name, c, _length(c)) for name, c in symbol_sections.items() if _length(c)}
        # No column statistics and no copy of the Arrow schema: in a block of a few profiles the footer,
        # one entry per column per section, is most of the object. The Parquet types read back as SCHEMA's.
        # Dictionaries only for the columns that repeat values: elsewhere (symbol strings, stack nodes,
        # the entries' nodes and label sets) they cost time and make blocks about a quarter larger than zstd
        # alone.
        self._writer = pq.ParquetWriter(sink, SCHEMA, compression="zstd", write_statistics=False, store_schema=False,
                                        use_dictionary=list(_DICTIONARY_COLUMNS))
        self._entries = 0  # entries added so far
        self._group = -1  # the group (first entry // PROFILE_GROUP_ENTRIES) of the rows pending
        self._pending: list[pa.Table] = []
        self._held: pa.Table | None = None  # the first profile group, until a second one begins
        self._profile_groups: list[int] = []
        self._groups = 0
        self._trees: pa.Table | None = None

    def add_profiles(self, columns: dict, counts: np.ndarray, node: np.ndarray, label_set: np.ndarray,
                     value: np.ndarray) -> None:
        """The next profiles: per-profile `columns` (PROFILE_COLUMNS), and each profile's `counts` entries
        of (node, label set, value), profile after profile."""
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        table = _section_table("profiles", {**columns, **_entry_lists(offsets, node, label_set, value)}, len(counts))
        group = (self._entries + offsets[:-1]) // PROFILE_GROUP_ENTRIES
        self._entries += int(offsets[-1])
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if len(group) else np.zeros(0, np.int64)
        for lo, hi in zip(starts.tolist(), np.r_[starts[1:], len(group)].tolist()):
            if group[lo] != self._group and self._pending:
                self._end_group()
            self._group = int(group[lo])
            self._pending.append(table.slice(lo, hi - lo))

    @property
    def has_trees(self) -> bool:
        return self._trees is not None

    def add_trees(self, columns: dict, counts: np.ndarray, node: np.ndarray, value: np.ndarray) -> None:
        """The trees section (see `_Trees`), written at `close` after the profiles."""
        if not len(counts):
            return
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._trees = _section_table("trees", {**columns, **_entry_lists(offsets, node, None, value)}, len(counts))

    def _end_group(self) -> None:
        table = pa.concat_tables(self._pending).combine_chunks()
        self._pending = []
        if self._held is None and not self._profile_groups:
            self._held = table
            return
        if self._held is not None:  # a second group: the symbols and the first go first
            self._write(list(self._symbols.values()))
            self._write_profiles(self._held)
            self._held = None
        self._write_profiles(table)

    def _write(self, tables: list[pa.Table]) -> None:
        if tables:
            table = pa.concat_tables(tables)
            self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
            self._groups += 1

    def _write_profiles(self, table: pa.Table) -> None:
        self._profile_groups.append(self._groups)
        self._write([table])

    def close(self) -> None:
        if self._pending:
            self._end_group()
        tables = dict(self._symbols)
        one_group = self._held is not None or not self._profile_groups
        if self._held is not None:  # profiles that fit in one group share it with the symbols
            tables["profiles"] = self._held
        if self._trees is not None and one_group:  # and so do their trees
            tables["trees"] = self._trees
        bounds = np.cumsum([0] + [t.num_rows for t in tables.values()]).tolist()
        rows = {name: [start, stop] for name, start, stop in zip(tables, bounds[:-1], bounds[1:])}
        layout: dict[str, list[int]] = {name: [0] for name in tables}
        if one_group:
            self._write(list(tables.values()))
        else:
            layout["profiles"] = self._profile_groups
            if self._trees is not None:
                layout["trees"] = [self._groups]
                self._write([self._trees])
        meta = {META_KEY: json.dumps({"version": FORMAT_VERSION, "sections": layout, "rows": rows}).encode()}
        self._writer.add_key_value_metadata(meta)
        self._writer.close()


def _length(columns: dict) -> int:
    return len(next(iter(columns.values())))


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


def _entry_lists(offsets: np.ndarray, node: np.ndarray, label_set: np.ndarray | None, value: np.ndarray) -> dict:
    """The entry list columns; without label sets (trees), that column stays null."""
    offsets = pa.array(offsets.astype(np.int32))
    lists = {"nodes": pa.ListArray.from_arrays(offsets, pa.array(node.astype(np.int32))),
             "values": pa.ListArray.from_arrays(offsets, pa.array(value.astype(np.int64)))}
    if label_set is not None:
        lists["labelsets"] = pa.ListArray.from_arrays(offsets, pa.array(label_set.astype(np.int32)))
    return lists


_NUMPY_TYPES = {pa.int32(): np.int32, pa.int64(): np.int64, pa.uint64(): np.uint64}


def _arrow(column, arrow_type: pa.DataType) -> pa.Array:
    if isinstance(column, pa.Array):
        return column if column.type == arrow_type else column.cast(arrow_type)
    if arrow_type in _NUMPY_TYPES:
        return pa.array(np.asarray(column).astype(_NUMPY_TYPES[arrow_type], copy=False))
    return pa.array(column, arrow_type)
