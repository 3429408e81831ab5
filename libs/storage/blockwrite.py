"""Writing blocks (the format is `blockformat`'s): a flush block from typed profiles (`write_block`), and a
new block from chosen rows of stored blocks (`compact`, ordered by `series_order`)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from flamewatch.pprof.profile_types import TypedProfile
from flamewatch.storage.blockformat import FORMAT_VERSION, META_KEY, PROFILE_COLUMNS, SCHEMA
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.gather import Gathered, from_blocks, from_profiles

# Entries per row group of the profiles section. Smaller groups mean less decoded per selective query
# and a bigger footer (a few KiB per group).
PROFILE_GROUP_ENTRIES = 1 << 17

_DICTIONARY_COLUMNS = ("section", "series_labels", "profile_type")


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
    meta = {META_KEY: json.dumps({"version": FORMAT_VERSION, "sections": layout, "rows": rows}).encode()}
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
