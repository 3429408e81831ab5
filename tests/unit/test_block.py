"""The block format: synthetic profiles written with `write_block` and read back with `BlockReader`.

Stacks are compared as paths of function names from the root, never by node or row numbers, so the
tests hold whatever order the writer gives its de-duplicated tables.
"""

import io
import json
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from infra.blocknodes import entries, node_values
from infra.stringtable import interner

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from flamewatch.pprof import TypedProfile, decode, split, validate
from flamewatch.storage import blockwrite
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.blockwrite import BlockEntry, write_block

FILE = "app.go"
MAPPING_START, MAPPING_LIMIT = 0x400000, 0x4000000


def address_of(names: tuple[str, ...]) -> int:
    """The same frames get the same address in every source, as one binary would give them."""
    return MAPPING_START + (zlib.crc32("|".join(names).encode()) & 0xFFFFF) * 16


def build(stacks: list[list], values: list[list[int]], *, sample_types=(("cpu", "nanoseconds"),),
          period_type=("cpu", "nanoseconds"), unused_strings: tuple[str, ...] = (), id_base: int = 1) -> pb.Profile:
    """A profile from stacks given leaf first. A frame is a function name, a tuple of names (one location
    whose lines are inlined functions, innermost first) or an int (an address without lines).

    `unused_strings` shifts every string index and `id_base` every id, so sources that share symbols
    still differ in their numbers.
    """
    ref = pb.Profile(string_table=["", *unused_strings], period=10)
    string = interner(ref)

    for t, u in sample_types:
        ref.sample_type.add(type=string(t), unit=string(u))
    ref.period_type.type, ref.period_type.unit = string(period_type[0]), string(period_type[1])
    mapping_id = id_base + 1000
    ref.mapping.add(id=mapping_id, memory_start=MAPPING_START, memory_limit=MAPPING_LIMIT, filename=string("/bin/app"))
    functions: dict[str, int] = {}
    locations: dict[object, int] = {}

    def function(name: str) -> int:
        if name not in functions:
            functions[name] = id_base + 3 * len(functions)
            ref.function.add(id=functions[name], name=string(name), system_name=string(name), filename=string(FILE),
                             start_line=len(name))
        return functions[name]

    def location(frame) -> int:
        if frame not in locations:
            locations[frame] = id_base + 5 * len(locations)
            if isinstance(frame, int):
                ref.location.add(id=locations[frame], mapping_id=mapping_id, address=frame)
            else:
                names = frame if isinstance(frame, tuple) else (frame,)
                loc = ref.location.add(id=locations[frame], mapping_id=mapping_id, address=address_of(names))
                for name in names:
                    loc.line.add(function_id=function(name), line=10 * len(name))
        return locations[frame]

    for stack, vals in zip(stacks, values, strict=True):
        ref.sample.add(location_id=[location(frame) for frame in stack], value=vals)
    return ref


def typed(ref: pb.Profile) -> list[TypedProfile]:
    profile = decode(ref.SerializeToString())
    validate(profile)
    return split(profile)


def entry(profile: TypedProfile, time_ns: int = 1_000, **labels: str) -> BlockEntry:
    labels = {"service_name": "app", **labels}
    return BlockEntry(labels, hash(tuple(sorted(labels.items()))) & 0xFFFF, profile, time_ns, 10_000_000_000)


def paths(reader: BlockReader, values: np.ndarray) -> dict[tuple[str, ...], object]:
    """Non-zero node values keyed by the node's path of names from the root (the root itself is ())."""
    out = {}
    for node in np.flatnonzero(values):
        path, at = [], int(node)
        while at != 0:
            path.append(str(reader.node_names[at]))
            at = int(reader.node_parent[at])
        out[tuple(reversed(path))] = values[node].item()
    return out


def section(data: bytes, name: str) -> pa.Table:
    table = pq.read_table(io.BytesIO(data))
    return table.filter(pc.equal(table["section"], name))


# ------------------------------------------------------------------------------------------- tests

SHARED = [["work", "main"], [("sqrt", "compute"), "work", "main"], ["gc"]]


def test_sources_sharing_symbols_are_stored_once():
    a = build(SHARED, [[1], [2], [3]])
    b = build(list(reversed(SHARED)) + [["io", "main"]], [[4], [5], [6], [7]], unused_strings=("b-only", "x"),
              id_base=500)
    c = build(SHARED[:1], [[8]], sample_types=(("alloc_space", "bytes"),), id_base=90)
    entries = [entry(t) for ref in (a, b, c) for t in typed(ref)]
    data = write_block(entries)
    reader = BlockReader(data)

    all_strings = {s for ref in (a, b, c) for s in ref.string_table}
    assert sorted(reader.strings.tolist()) == sorted(all_strings)
    assert section(data, "functions").num_rows == 6  # work main sqrt compute gc io
    assert section(data, "mappings").num_rows == 1
    # one row per frame: work, main, sqrt and compute (one location, two lines), gc, io
    assert section(data, "locations").num_rows == 6
    assert sorted(reader.location_table()["name"].tolist()) == ["compute", "gc", "io", "main", "sqrt", "work"]
    # the tree holds each distinct path once: main, main/work, main/work/compute, .../sqrt, gc, main/io
    assert len(reader.node_parent) == 1 + 6
    assert paths(reader, node_values(reader, np.arange(3))) == {
        ("main", "work"): 1 + 6 + 8, ("main", "work", "compute", "sqrt"): 2 + 5, ("gc",): 3 + 4, ("main", "io"): 7,
    }


def test_inlined_frames_expand_into_the_stack():
    # One location holds three lines: inner was inlined into middle, which was inlined into outer.
    ref = build([[("inner", "middle", "outer"), "main"]], [[7]])
    reader = BlockReader(write_block([entry(t) for t in typed(ref)]))
    assert paths(reader, node_values(reader, np.array([0]))) == {("main", "outer", "middle", "inner"): 7}
    assert len(reader.node_parent) == 5
    table = reader.location_table()
    rows = {name: i for i, name in enumerate(table["name"].tolist())}
    assert sorted(rows) == ["inner", "main", "middle", "outer"]
    assert [int(table["line"][rows[n]]) for n in ("inner", "middle", "outer", "main")] == [50, 60, 50, 40]
    assert {str(table["filename"][i]) for i in rows.values()} == {FILE}
    assert {str(table["system_name"][rows[n]]) for n in ("inner", "outer")} == {"inner", "outer"}
    # the three inlined frames share their location's address
    inlined = {int(table["address"][rows[n]]) for n in ("inner", "middle", "outer")}
    assert inlined == {address_of(("inner", "middle", "outer"))}
    assert int(table["address"][rows["main"]]) == address_of(("main",))


def test_entries_of_selected_rows_sum_per_node_and_are_weighted():
    first = typed(build([["a", "main"], ["b", "main"]], [[10, 1], [20, 2]],
                        sample_types=(("cpu", "nanoseconds"), ("samples", "count"))))
    second = typed(build([["a", "main"], ["c"]], [[100], [300]], id_base=40))
    reader = BlockReader(write_block([entry(first[0]), entry(first[1]), entry(second[0])]))
    row0 = {("main", "a"): 10, ("main", "b"): 20}
    row2 = {("main", "a"): 100, ("c",): 300}
    assert paths(reader, node_values(reader, np.array([0]))) == row0
    assert paths(reader, node_values(reader, np.array([1]))) == {("main", "a"): 1, ("main", "b"): 2}
    assert paths(reader, node_values(reader, np.array([2]))) == row2
    both = node_values(reader, np.array([0, 2]))
    assert both.dtype == np.int64
    assert paths(reader, both) == {("main", "a"): 110, ("main", "b"): 20, ("c",): 300}
    assert paths(reader, node_values(reader, np.array([2, 2]))) == {("main", "a"): 200, ("c",): 600}
    assert node_values(reader, np.array([], np.int64)).tolist() == [0] * len(reader.node_parent)
    weighted = node_values(reader, np.array([0, 2]), weights=np.array([0.5, 2.0]))
    assert weighted.dtype == np.float64
    assert paths(reader, weighted) == {("main", "a"): 205.0, ("main", "b"): 10.0, ("c",): 600.0}


def test_zero_valued_samples_are_not_stored():
    ref = build([["a", "main"], ["b", "main"], ["c", "main"], ["a", "main"]], [[0, 3], [5, 0], [0, 0], [0, 4]],
                sample_types=(("cpu", "nanoseconds"), ("samples", "count")))
    reader = BlockReader(write_block([entry(t) for t in typed(ref)]))
    nodes, values = entries(reader, [0])
    assert len(nodes) == 1
    assert values.tolist() == [5]
    assert paths(reader, node_values(reader, np.array([0]))) == {("main", "b"): 5}
    nodes, values = entries(reader, [1])
    assert sorted(values.tolist()) == [3 + 4]  # the two ["a", "main"] samples share one node
    assert paths(reader, node_values(reader, np.array([1]))) == {("main", "a"): 7}
    assert reader.profiles.column("total").to_pylist() == [5, 7]


def test_a_profile_of_zeros_is_stored_with_empty_lists():
    zeros = typed(build([["a", "main"], ["b"]], [[0], [0]]))[0]
    other = typed(build([["a", "main"]], [[9]], id_base=7))[0]
    data = write_block([entry(zeros, capture="zeros"), entry(other, capture="other")])
    reader = BlockReader(data)
    profiles = section(data, "profiles")
    assert profiles.column("nodes").to_pylist() == [[], [entries(reader, [1])[0].item()]]
    assert profiles.column("values").to_pylist() == [[], [9]]
    assert profiles.column("total").to_pylist() == [0, 9]
    assert entries(reader, [0])[0].tolist() == []
    assert node_values(reader, np.array([0])).tolist() == [0] * len(reader.node_parent)


def test_unsymbolized_locations_are_named_by_their_mapping_and_address_in_it():
    kernel = 0xFFFF_FFFF_8100_0000  # above 2**63, outside the mapping: shown as it is
    ref = build([[0x4012AB, "main"], [kernel, 0x4012AB, "main"]], [[3], [4]])
    reader = BlockReader(write_block([entry(t) for t in typed(ref)]))
    assert paths(reader, node_values(reader, np.array([0]))) == {
        ("main", "[app] 0x12ab"): 3, ("main", "[app] 0x12ab", "0xffffffff81000000"): 4,
    }
    table = reader.location_table()
    rows = {name: i for i, name in enumerate(table["name"].tolist())}
    assert sorted(rows) == ["0xffffffff81000000", "[app] 0x12ab", "main"]
    assert int(table["address"][rows["0xffffffff81000000"]]) == kernel
    assert (str(table["filename"][rows["[app] 0x12ab"]]), int(table["line"][rows["[app] 0x12ab"]])) == ("", 0)


def test_an_unsymbolized_frame_is_named_by_its_address_in_the_mapped_file():
    ref = build([[0x7F00_0005_52A0, "main"]], [[1]])
    ref.mapping.add(id=77, memory_start=0x7F00_0000_0000, memory_limit=0x7F00_0010_0000, file_offset=0x4A000,
                    filename=len(ref.string_table))
    ref.string_table.append("/usr/lib/x86_64-linux-gnu/libc.so.6")
    ref.location[0].mapping_id = 77
    reader = BlockReader(write_block([entry(t) for t in typed(ref)]))
    # 0x552a0 into the mapping, which starts at file offset 0x4a000: 0x9f2a0 into libc.so.6
    assert paths(reader, node_values(reader, np.array([0]))) == {("main", "[libc.so.6] 0x9f2a0"): 1}


def test_a_block_of_only_unsymbolized_locations():
    ref = build([[0x10, 0x20], [0x30]], [[1], [2]])
    reader = BlockReader(write_block([entry(t) for t in typed(ref)]))
    assert paths(reader, node_values(reader, np.array([0]))) == {("0x20", "0x10"): 1, ("0x30",): 2}
    assert reader.location_table()["filename"].tolist() == ["", "", ""]


def test_samples_without_locations_are_values_of_the_root():
    ref = build([[], ["a"]], [[6], [1]])
    reader = BlockReader(write_block([entry(t) for t in typed(ref)]))
    assert paths(reader, node_values(reader, np.array([0]))) == {(): 6, ("a",): 1}
    assert reader.node_names[0] == "total"


def test_plain_parquet_readers_see_one_profiles_row_per_entry():
    cpu = typed(build(SHARED, [[1, 10], [2, 20], [3, 30]], sample_types=(("samples", "count"),
                                                                          ("cpu", "nanoseconds"))))
    heap = typed(build(SHARED[:2], [[5], [6]], sample_types=(("inuse_space", "bytes"),), period_type=("space", "bytes"),
                       id_base=33))
    entries = [entry(cpu[0], 2_000, pod="p1"), entry(cpu[1], 2_000, pod="p1"), entry(heap[0], 3_000, pod="p2")]
    data = write_block(entries)
    table = pq.read_table(io.BytesIO(data))
    profiles = table.filter(pc.equal(table["section"], "profiles"))
    assert profiles.num_rows == 3
    assert [json.loads(s) for s in profiles.column("series_labels").to_pylist()] == [
        {"pod": "p1", "service_name": "app"}, {"pod": "p1", "service_name": "app"},
        {"pod": "p2", "service_name": "app"}]
    assert profiles.column("series_fingerprint").to_pylist() == [e.fingerprint for e in entries]
    assert profiles.column("profile_type").to_pylist() == [
        "process_cpu:samples:count:cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
        "memory:inuse_space:bytes:space:bytes"]
    assert profiles.column("time_ns").to_pylist() == [2_000, 2_000, 3_000]
    assert profiles.column("duration_ns").to_pylist() == [10_000_000_000] * 3
    assert profiles.column("period").to_pylist() == [10, 10, 10]
    assert profiles.column("total").to_pylist() == [6, 60, 11]
    assert [sorted(v) for v in profiles.column("values").to_pylist()] == [[1, 2, 3], [10, 20, 30], [5, 6]]
    assert sorted(set(table.column("section").to_pylist())) == [
        "functions", "locations", "mappings", "profiles", "stacks", "strings"]
    stacks = table.filter(pc.equal(table["section"], "stacks"))
    assert stacks.num_rows == len(BlockReader(data).node_parent) == 1 + 5
    assert stacks.column("profile_type").null_count == stacks.num_rows


@pytest.mark.parametrize("rows", [[0], [1], [0, 1]])
def test_read_back_totals_equal_the_summed_node_values(rows):
    profiles = [typed(build(SHARED, [[i + 1], [2 * i + 1], [0]], id_base=1 + 50 * i))[0] for i in range(2)]
    reader = BlockReader(write_block([entry(p) for p in profiles]))
    totals = reader.profiles.column("total").to_pylist()
    assert totals == [1 + 1, 2 + 3]
    assert int(node_values(reader, np.array(rows)).sum()) == sum(totals[r] for r in rows)


def test_threads_reading_one_block_at_once_each_get_its_entries(monkeypatch: pytest.MonkeyPatch):
    """Queries share a cached block, whose row groups are decoded on first use by whichever query comes
    first: several at once too (pyarrow's ParquetFile is not safe to read from two threads; under load the
    second raised "ReadRangeCache did not find matching cache entry")."""
    monkeypatch.setattr(blockwrite, "PROFILE_GROUP_ENTRIES", 8)
    profiles = [typed(build(SHARED, [[i + 1], [2], [3]]))[0] for i in range(600)]
    data = write_block([entry(p, time_ns=1_000 + i) for i, p in enumerate(profiles)])
    rows = np.arange(len(profiles))

    def node_sums(reader: BlockReader) -> np.ndarray:
        return np.bincount(*reader.sample_entries(rows)[1::2])

    expected = node_sums(BlockReader(data))
    for _ in range(20):
        with ThreadPoolExecutor(8) as pool:
            for got in pool.map(node_sums, [BlockReader(data)] * 8):
                np.testing.assert_array_equal(got, expected)
