"""The pprof codec against the reference protobuf runtime and against Go's own wire layout.

Profiles are built with the reference runtime (`profile_pb2`, which packs every repeated scalar) and
with `GoWriter`, which writes bytes the way Go's runtime/pprof does (zero scalars left out, repeated
scalars with at most two elements unpacked, fields in Go's order, locations and functions interleaved
with the samples that first use them). Both must decode to the same columns; every rejection has its
exact message.
"""

import gzip
import random

import numpy as np
import pytest
from infra.gowire import GoWriter, go_bytes

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from flamewatch.pprof import (
    InvalidProfile,
    Profile,
    decode,
    encode,
    validate,
)

U64 = (1 << 64) - 1
BIG_ADDRESS = 0xFFFF_FFFF_FF60_0000  # above 2**63: a kernel-half address, as a uint64 varint of 10 bytes


def test_go_writer_writes_the_bytes_go_writes():
    # A CPU sample as runtime/pprof writes it: values [1, 10ms] then location ids [1, 2], each element unpacked.
    w = GoWriter()
    w.message(2, lambda s: (s.repeated(2, [1, 10_000_000]), s.repeated(1, [1, 2])))
    assert bytes(w.data) == bytes.fromhex("120b" "1001" "1080ade204" "0801" "0802")
    w = GoWriter()
    w.message(2, lambda s: (s.repeated(2, [-1]), s.repeated(1, [7, 8, 300])))
    assert bytes(w.data) == bytes.fromhex("1211" "10ffffffffffffffffff01" "0a04" "0708ac02")


# --------------------------------------------------------------------------- field-by-field views


def reference_view(ref: pb.Profile) -> dict:
    """Every field of a reference message as plain Python values."""
    return {
        "strings": list(ref.string_table),
        "sample_types": [(t.type, t.unit) for t in ref.sample_type],
        "samples": [(list(s.location_id), list(s.value), [(lb.key, lb.str, lb.num, lb.num_unit) for lb in s.label])
                    for s in ref.sample],
        "locations": [(loc.id, loc.mapping_id, loc.address, loc.is_folded,
                       [(ln.function_id, ln.line, ln.column) for ln in loc.line]) for loc in ref.location],
        "functions": [(f.id, f.name, f.system_name, f.filename, f.start_line) for f in ref.function],
        "mappings": [(m.id, m.memory_start, m.memory_limit, m.file_offset, m.filename, m.build_id, m.has_functions,
                      m.has_filenames, m.has_line_numbers, m.has_inline_frames) for m in ref.mapping],
        "header": ((ref.period_type.type, ref.period_type.unit), ref.period, ref.time_nanos, ref.duration_nanos,
                   ref.drop_frames, ref.keep_frames, ref.default_sample_type, ref.doc_url, list(ref.comment)),
    }


def decoded_view(p: Profile) -> dict:
    """The same view read back out of the columns, one element at a time."""
    s, loc, fn, mp = p.samples, p.locations, p.functions, p.mappings
    labels = [[] for _ in range(len(s))]
    for i, owner in enumerate(s.label_sample.tolist()):
        labels[owner].append((int(s.label_key[i]), int(s.label_str[i]), int(s.label_num[i]),
                              int(s.label_num_unit[i])))
    lo = loc.line_offsets.tolist()
    return {
        "strings": p.strings.tolist(),
        "sample_types": [tuple(row) for row in p.sample_types.tolist()],
        "samples": [(s.locations[a:b].tolist(), s.values[i].tolist(), labels[i])
                    for i, (a, b) in enumerate(zip(s.offsets[:-1].tolist(), s.offsets[1:].tolist()))],
        "locations": [(int(loc.id[i]), int(loc.mapping_id[i]), int(loc.address[i]), bool(loc.is_folded[i]),
                       [(int(loc.line_function_id[j]), int(loc.line_line[j]), int(loc.line_column[j]))
                        for j in range(lo[i], lo[i + 1])]) for i in range(len(loc))],
        "functions": list(zip(*(c.tolist() for c in (fn.id, fn.name, fn.system_name, fn.filename, fn.start_line)))),
        "mappings": list(zip(*(c.tolist() for c in (mp.id, mp.memory_start, mp.memory_limit, mp.file_offset,
                                                     mp.filename, mp.build_id, mp.has_functions, mp.has_filenames,
                                                     mp.has_line_numbers, mp.has_inline_frames)))),
        "header": (tuple(p.period_type), p.period, p.time_nanos, p.duration_nanos, p.drop_frames, p.keep_frames,
                   p.default_sample_type, p.doc_url, p.comments.tolist()),
    }


def unordered(view: dict) -> dict:
    """A view with the id-keyed tables sorted by id: Go writes them in first-use order."""
    return {**view, **{table: sorted(view[table]) for table in ("locations", "functions", "mappings")}}


def parse(raw: bytes) -> pb.Profile:
    ref = pb.Profile()
    ref.ParseFromString(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return ref


# --------------------------------------------------------------------------- a profile using every field

STRINGS = ["", "samples", "count", "cpu", "nanoseconds", "main.main", "main.work", "runtime.inlined", "main.go",
           "/usr/bin/app", "b1d", "thread", "worker-7", "bytes", "comment: ünïcode ✓", "runtime\\..*", "main\\..*",
           "https://example.invalid/doc", "main.(*T).m"]


def full_reference() -> pb.Profile:
    ref = pb.Profile(string_table=STRINGS, time_nanos=1_700_000_000_123_456_789, duration_nanos=2_000_000_000,
                     period=10_000_000, comment=[14, 17], drop_frames=15, keep_frames=16, default_sample_type=3,
                     doc_url=17)
    ref.sample_type.add(type=1, unit=2)
    ref.sample_type.add(type=3, unit=4)
    ref.period_type.type, ref.period_type.unit = 3, 4
    ref.mapping.add(id=1, memory_start=0x400000, memory_limit=0x800000, file_offset=0x1000, filename=9, build_id=10,
                    has_functions=True, has_filenames=True, has_line_numbers=True, has_inline_frames=True)
    ref.mapping.add(id=2, memory_start=BIG_ADDRESS, memory_limit=U64, filename=9, has_functions=False,
                    has_filenames=True, has_line_numbers=False, has_inline_frames=True)
    ref.function.add(id=1, name=5, system_name=5, filename=8, start_line=10)
    ref.function.add(id=2, name=6, system_name=6, filename=8, start_line=20)
    ref.function.add(id=3, name=7, system_name=7, filename=8)
    ref.function.add(id=4, name=18, system_name=18, filename=8, start_line=-1)
    ref.location.add(id=1, mapping_id=1, address=0x401000).line.add(function_id=1, line=12, column=3)
    inlined = ref.location.add(id=2, mapping_id=1, address=0x402000)
    inlined.line.add(function_id=3, line=5)  # innermost first: runtime.inlined was inlined into main.work ...
    inlined.line.add(function_id=2, line=25, column=7)
    inlined.line.add(function_id=4, line=-3)  # ... which was inlined into main.(*T).m
    ref.location.add(id=3, mapping_id=2, address=BIG_ADDRESS + 0x10, is_folded=True)  # no lines: unsymbolized
    ref.location.add(id=1 << 40, address=U64).line.add(function_id=2, line=30)
    ref.sample.add(location_id=[2, 1], value=[1, 10_000_000])
    s = ref.sample.add(location_id=[1 << 40, 3, 2, 1], value=[-2, -(1 << 63)])
    s.label.add(key=11, str=12)
    s.label.add(key=13, num=-4096, num_unit=13)
    s.label.add(key=13, num=1 << 62)
    ref.sample.add(location_id=[], value=[5, (1 << 63) - 1]).label.add(key=11, str=12)
    ref.sample.add(location_id=[3], value=[0, 0])
    return ref


LAYOUTS = {"reference": lambda ref: ref.SerializeToString(), "go": go_bytes}


@pytest.mark.parametrize("compressed", [False, True], ids=["raw", "gzip"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_decode_matches_the_reference_parse_field_by_field(layout, compressed):
    ref = full_reference()
    data = LAYOUTS[layout](ref)
    if compressed:
        data = gzip.compress(data)
    expected = reference_view(parse(data))
    assert unordered(expected) == unordered(reference_view(ref))  # the Go layout holds the same profile
    profile = decode(data)
    assert decoded_view(profile) == expected
    validate(profile)


def test_go_layout_is_unpacked_where_go_writes_it_unpacked():
    ref = full_reference()
    data = go_bytes(ref)
    assert data != ref.SerializeToString()
    # sample 0 as Go writes it: both values and both location ids as separate varint fields
    assert bytes.fromhex("120b" "1001" "1080ade204" "0802" "0801") in data
    assert unordered(decoded_view(decode(data))) == unordered(decoded_view(decode(ref.SerializeToString())))


def test_packed_and_unpacked_runs_of_one_field_are_concatenated():
    # Any parser must accept both forms of a repeated scalar, even mixed in one message with other fields between.
    sample = bytes.fromhex("0801" "1005" "0a020203" "1a0408011002" "0804" "120106")
    data = small_reference().SerializeToString() + top_level_field(2, sample)
    expected = ([1, 2, 3, 4], [5, 6], [(1, 2, 0, 0)])
    assert reference_view(parse(data))["samples"][-1] == expected
    assert decoded_view(decode(data))["samples"][-1] == expected


def test_columns_keep_negative_values_and_uint64_addresses():
    p = decode(full_reference().SerializeToString())
    assert p.samples.values.dtype == np.int64
    assert p.samples.values.tolist() == [[1, 10_000_000], [-2, -(1 << 63)], [5, (1 << 63) - 1], [0, 0]]
    assert p.locations.address.dtype == np.uint64
    assert p.locations.address.tolist() == [0x401000, 0x402000, BIG_ADDRESS + 0x10, U64]
    assert p.locations.id.tolist() == [1, 2, 3, 1 << 40]
    assert p.mappings.memory_limit.tolist() == [0x800000, U64]
    assert p.samples.depths().tolist() == [2, 4, 0, 1]
    assert p.samples.label_num.tolist() == [0, -4096, 1 << 62, 0]
    assert p.locations.line_offsets.tolist() == [0, 1, 4, 4, 5]
    assert p.locations.line_line.tolist() == [12, 5, 25, -3, 30]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_encode_is_parsed_by_the_reference_runtime_as_the_original(layout):
    ref = full_reference()
    data = LAYOUTS[layout](ref)
    encoded = encode(decode(data))
    assert encoded[:2] == b"\x1f\x8b"
    assert parse(encoded) == parse(data)
    assert encode(decode(data), compress=False) == gzip.decompress(encoded)
    if layout == "reference":
        assert parse(encoded) == ref


def test_decode_of_encode_is_the_same_profile():
    p = decode(full_reference().SerializeToString())
    assert decode(encode(p)) == p
    assert decode(encode(p, compress=False)) == p
    assert decode(encode(p)) != decode(encode(with_first_value_changed(p)))  # equality looks at the columns


def with_first_value_changed(p: Profile) -> Profile:
    """The profile with sample 0's first value changed, to show that equality can fail."""
    values = p.samples.values.copy()
    values[0, 0] += 1
    samples = type(p.samples)(**{**p.samples.__dict__, "values": values})
    return Profile(**{**p.__dict__, "samples": samples})


def test_empty_tables():
    ref = pb.Profile(string_table=["", "samples", "count"])
    ref.sample_type.add(type=1, unit=2)
    for data in (ref.SerializeToString(), go_bytes(ref)):
        p = decode(data)
        validate(p)
        assert decoded_view(p) == reference_view(ref)
        assert p.samples.values.shape == (0, 1)
        assert p.samples.offsets.tolist() == [0]
        assert p.locations.line_offsets.tolist() == [0]
        assert (len(p.samples), len(p.locations), len(p.functions), len(p.mappings)) == (0, 0, 0, 0)
        assert parse(encode(p)) == ref
        assert decode(encode(p)) == p


def test_samples_without_locations_and_with_zero_values():
    ref = pb.Profile(string_table=["", "samples", "count"])
    ref.sample_type.add(type=1, unit=2)
    ref.sample.add(value=[0])
    ref.sample.add(value=[-3])
    ref.sample.add()
    with pytest.raises(InvalidProfile) as info:
        decode(ref.SerializeToString())
    assert str(info.value) == "sample 2 has 0 values, but the profile declares 1 sample types"
    del ref.sample[2]
    p = decode(go_bytes(ref))
    assert p.samples.offsets.tolist() == [0, 0, 0]
    assert p.samples.values.tolist() == [[0], [-3]]
    assert parse(encode(p)) == ref


# --------------------------------------------------------------------------- randomized round trips


def random_reference(rng: random.Random) -> pb.Profile:
    """A valid profile of random shape; ids are unique but neither dense nor ordered."""
    n_strings = rng.randint(1, 30)
    strings = [""] + ["".join(rng.choice("abcé_.:/✓") for _ in range(rng.randint(0, 12))) for _ in range(n_strings)]
    ref = pb.Profile(string_table=strings)

    def s() -> int:
        return rng.randrange(len(strings))

    def big(bits: int) -> int:
        return rng.choice([0, 1, rng.getrandbits(7), rng.getrandbits(bits)])

    def signed() -> int:
        return rng.choice([0, 1, -1, rng.randint(-(1 << 63), (1 << 63) - 1), rng.randint(-1000, 1000)])

    for _ in range(rng.randint(0, 4)):
        ref.sample_type.add(type=s(), unit=s())
    if rng.random() < 0.7:
        ref.period_type.type, ref.period_type.unit = s() or 1, s()
    ref.period, ref.time_nanos, ref.duration_nanos = signed(), signed(), signed()
    ref.drop_frames, ref.keep_frames, ref.default_sample_type, ref.doc_url = s(), s(), s(), s()
    ref.comment.extend(s() for _ in range(rng.randint(0, 3)))
    def ids(n: int) -> list[int]:  # unique; some above 2**63
        unique = rng.sample(range(1, 1 << rng.choice([8, 20, 62])), n)
        return [i | (1 << 63) if rng.random() < 0.2 else i for i in unique]
    mapping_ids = ids(rng.randint(0, 3))
    for mid in mapping_ids:
        ref.mapping.add(id=mid, memory_start=big(64), memory_limit=big(64), file_offset=big(64), filename=s(),
                        build_id=s(), has_functions=rng.random() < 0.5, has_filenames=rng.random() < 0.5,
                        has_line_numbers=rng.random() < 0.5, has_inline_frames=rng.random() < 0.5)
    function_ids = ids(rng.randint(0, 8))
    for fid in function_ids:
        ref.function.add(id=fid, name=s(), system_name=s(), filename=s(), start_line=signed())
    location_ids = ids(rng.randint(0, 12))
    for lid in location_ids:
        loc = ref.location.add(id=lid, mapping_id=rng.choice([0, *mapping_ids]), address=big(64),
                               is_folded=rng.random() < 0.2)
        for _ in range(rng.randint(0, 3) if function_ids else 0):
            loc.line.add(function_id=rng.choice(function_ids), line=signed(), column=signed())
    for _ in range(rng.randint(0, 40)):
        sample = ref.sample.add(location_id=[rng.choice(location_ids) for _ in range(rng.randint(0, 6))]
                                if location_ids else [], value=[signed() for _ in ref.sample_type])
        for _ in range(rng.choice([0, 0, 1, 3])):
            sample.label.add(key=s(), str=s(), num=signed(), num_unit=s())
    return ref


def _totals_fit(ref: pb.Profile) -> bool:
    return all(-(1 << 63) <= sum(s.value[i] for s in ref.sample) < 1 << 63 for i in range(len(ref.sample_type)))


def test_random_profiles_round_trip():
    rng = random.Random(20240611)
    for case in range(300):
        ref = random_reference(rng)
        for layout, write in LAYOUTS.items():
            data = write(ref)
            expected = parse(data)
            assert unordered(reference_view(expected)) == unordered(reference_view(ref)), (case, layout)
            p = decode(gzip.compress(data) if case % 3 == 0 else data)
            assert decoded_view(p) == reference_view(expected), (case, layout)
            if len(ref.sample_type) and _totals_fit(ref):
                validate(p)
            elif len(ref.sample_type):  # random int64 values may add up past int64
                with pytest.raises(InvalidProfile, match="add up past the int64 range"):
                    validate(p)
            assert parse(encode(p)) == expected, (case, layout)
            assert decode(encode(p, compress=case % 2 == 0)) == p, (case, layout)


# --------------------------------------------------------------------------- rejections

def small_reference() -> pb.Profile:
    """Valid: two sample types, two samples over two locations, two functions, one mapping."""
    ref = pb.Profile(string_table=["", "samples", "count", "cpu", "nanoseconds", "main", "work", "main.go"],
                     period=10)
    ref.sample_type.add(type=1, unit=2)
    ref.sample_type.add(type=3, unit=4)
    ref.period_type.type, ref.period_type.unit = 3, 4
    ref.mapping.add(id=1, memory_start=0x1000, memory_limit=0x2000)
    ref.function.add(id=1, name=5, filename=7)
    ref.function.add(id=2, name=6, filename=7)
    ref.location.add(id=1, mapping_id=1, address=0x1010).line.add(function_id=1, line=3)
    ref.location.add(id=2, mapping_id=1, address=0x1020).line.add(function_id=2, line=9)
    ref.sample.add(location_id=[2, 1], value=[1, 10])
    ref.sample.add(location_id=[1], value=[2, 20])
    return ref


def top_level_field(number: int, payload: bytes) -> bytes:
    w = GoWriter()
    w.field(number, payload)
    return bytes(w.data)
