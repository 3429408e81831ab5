"""The pprof codec against the reference protobuf runtime and against Go's own wire layout.

Profiles are built with the reference runtime (`profile_pb2`, which packs every repeated scalar) and
with `GoWriter`, which writes bytes the way Go's runtime/pprof does (zero scalars left out, repeated
scalars with at most two elements unpacked, fields in Go's order, locations and functions interleaved
with the samples that first use them). Both must decode to the same columns; every rejection has its
exact message.
"""

import gzip
import random
import struct
import time
import tracemalloc
import zlib
from collections.abc import Callable

import numpy as np
import pytest
from infra.gowire import GoWriter, go_bytes
from infra.otlp import otlp_export_request

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from flamewatch.pprof import (
    DecodeError,
    InvalidProfile,
    LimitExceeded,
    Profile,
    ProfileLimits,
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
            if len(ref.sample_type):
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


def edited(edit: Callable[[pb.Profile], object], layout: str = "reference") -> Callable[[], bytes]:
    def make() -> bytes:
        ref = small_reference()
        edit(ref)
        return LAYOUTS[layout](ref)
    return make


def top_level_field(number: int, payload: bytes) -> bytes:
    w = GoWriter()
    w.field(number, payload)
    return bytes(w.data)


def with_sample_bytes(payload: bytes) -> Callable[[], bytes]:
    """The small profile plus one sample message holding exactly `payload`."""
    return lambda: small_reference().SerializeToString() + top_level_field(2, payload)


def truncated(cut: int) -> Callable[[], bytes]:
    return lambda: small_reference().SerializeToString()[:cut]


def gzip_truncated(cut: int) -> Callable[[], bytes]:
    def make() -> bytes:
        data = gzip.compress(small_reference().SerializeToString())
        return data[:cut if cut >= 0 else len(data) + cut]
    return make


def gzip_bad_checksum() -> bytes:
    data = bytearray(gzip.compress(small_reference().SerializeToString()))
    data[-8] ^= 0xFF  # first byte of the CRC-32 in the trailer
    return bytes(data)


def field_starts(raw: bytes) -> set[int]:
    """Byte offsets where a top-level field of a valid profile starts (cutting there leaves valid protobuf)."""
    starts, at = {len(raw)}, 0
    while at < len(raw):
        starts.add(at)
        tag, at = _read_varint(raw, at)
        value, at = _read_varint(raw, at)
        if tag & 7 == 2:
            at += value
    return starts


def _read_varint(raw: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = raw[at]
        value |= (byte & 0x7F) << shift
        shift, at = shift + 7, at + 1
        if byte < 0x80:
            return value, at


TRUNCATION_CUTS = [1, 2, 5, 13, 40, 77]
NOT_PPROF = "not a pprof profile: the data is neither gzip-compressed nor a valid protobuf message"
GZIP_TRUNCATED = "invalid gzip data: the compressed stream is truncated"
LIMITS = ProfileLimits()
NO_STRINGS = ("not a pprof profile: a valid protobuf message, but without the string table every pprof profile has "
              "(OTLP profiles and other protobuf messages are not pprof)")

ERRORS = [
    # (id, bytes maker, limits, exception, message)
    ("garbage", lambda: b"\xff" * 16, LIMITS, DecodeError, NOT_PPROF),
    ("html", lambda: b"<html><body>404 page not found</body></html>", LIMITS, DecodeError, NOT_PPROF),
    *((f"truncated-at-{cut}", truncated(cut), LIMITS, DecodeError, NOT_PPROF) for cut in TRUNCATION_CUTS),
    ("gzip-header-only", gzip_truncated(10), LIMITS, DecodeError, GZIP_TRUNCATED),
    ("gzip-cut-in-half", gzip_truncated(40), LIMITS, DecodeError, GZIP_TRUNCATED),
    ("gzip-no-trailer", gzip_truncated(-8), LIMITS, DecodeError, GZIP_TRUNCATED),
    ("gzip-last-byte-missing", gzip_truncated(-1), LIMITS, DecodeError, GZIP_TRUNCATED),
    ("gzip-bad-checksum", gzip_bad_checksum, LIMITS, DecodeError,
     "invalid gzip data: Error -3 while decompressing data: incorrect data check"),
    ("empty-body", lambda: b"", LIMITS, DecodeError, "empty profile"),
    ("empty-gzip", lambda: gzip.compress(b""), LIMITS, DecodeError, "empty profile"),
    ("no-string-table", edited(lambda r: r.ClearField("string_table")), LIMITS, DecodeError, NO_STRINGS),
    ("otlp-profiles", otlp_export_request, LIMITS, DecodeError, NO_STRINGS),
    ("sample-truncated-varint", with_sample_bytes(b"\x08\x96"), LIMITS, DecodeError,
     "truncated varint at the end of the data"),
    ("sample-field-without-value", with_sample_bytes(b"\x10\x01\x10\x0a\x08"), LIMITS, DecodeError,
     "sample: a field has no value (truncated message)"),
    ("sample-packed-runs-past-end", with_sample_bytes(b"\x12\x02\x01\x0a\x0a\x05\x01"), LIMITS, DecodeError,
     "sample: a length-delimited field runs past the end of its message"),
    ("sample-fixed64-field", with_sample_bytes(b"\x09" + b"\x01" * 8), LIMITS, DecodeError,
     "sample: field 1 has unsupported wire type 1"),
    ("sample-varint-of-11-bytes", with_sample_bytes(b"\x08" + b"\x80" * 10 + b"\x01"), LIMITS, DecodeError,
     "varint longer than 10 bytes"),
    ("sample-ends-inside-varint",
     lambda: small_reference().SerializeToString() + top_level_field(2, b"\x10\x01\x10\x81")
     + top_level_field(2, b"\x01\x10\x01"), LIMITS, DecodeError,
     "sample: a field boundary falls inside a varint (truncated or corrupt data)"),
    ("label-field-without-value", with_sample_bytes(b"\x10\x01\x10\x01\x1a\x01\x08"), LIMITS, DecodeError,
     "sample label: a field has no value (truncated message)"),
    ("line-field-without-value",
     lambda: small_reference().SerializeToString() + top_level_field(4, b"\x08\x03\x22\x03\x08\x01\x10"),
     LIMITS, DecodeError, "location line: a field has no value (truncated message)"),
    ("string-table-without-empty-first", edited(lambda r: r.string_table.__setitem__(0, "x")), LIMITS,
     InvalidProfile, 'string table must start with the empty string ""'),
    ("function-name-out-of-range", edited(lambda r: setattr(r.function[1], "name", 8)), LIMITS, InvalidProfile,
     "function name refers to string 8, but the string table has 8 entries"),
    ("label-key-negative", edited(lambda r: r.sample[0].label.add(key=-1, str=5)), LIMITS, InvalidProfile,
     "sample label key refers to string -1, but the string table has 8 entries"),
    ("sample-type-out-of-range", edited(lambda r: setattr(r.sample_type[1], "unit", 1000)), LIMITS, InvalidProfile,
     "sample type refers to string 1000, but the string table has 8 entries"),
    ("period-type-out-of-range", edited(lambda r: setattr(r.period_type, "unit", 99)), LIMITS, InvalidProfile,
     "period type refers to string 99, but the string table has 8 entries"),
    ("mapping-build-id-out-of-range", edited(lambda r: setattr(r.mapping[0], "build_id", 8)), LIMITS,
     InvalidProfile, "mapping build id refers to string 8, but the string table has 8 entries"),
    ("comment-out-of-range", edited(lambda r: r.comment.extend([1, 20])), LIMITS, InvalidProfile,
     "comment refers to string 20, but the string table has 8 entries"),
    ("drop-frames-out-of-range", edited(lambda r: setattr(r, "drop_frames", 8)), LIMITS, InvalidProfile,
     "drop_frames refers to string 8, but the string table has 8 entries"),
    ("keep-frames-out-of-range", edited(lambda r: setattr(r, "keep_frames", 9)), LIMITS, InvalidProfile,
     "keep_frames refers to string 9, but the string table has 8 entries"),
    ("default-sample-type-out-of-range", edited(lambda r: setattr(r, "default_sample_type", 10)), LIMITS,
     InvalidProfile, "default_sample_type refers to string 10, but the string table has 8 entries"),
    ("doc-url-out-of-range", edited(lambda r: setattr(r, "doc_url", -2)), LIMITS, InvalidProfile,
     "doc_url refers to string -2, but the string table has 8 entries"),
    ("sample-missing-location", edited(lambda r: r.sample[1].location_id.append(9), "go"), LIMITS, InvalidProfile,
     "a sample refers to location id 9, which is not in the location table"),
    ("line-missing-function", edited(lambda r: r.location[1].line.add(function_id=1 << 63)), LIMITS,
     InvalidProfile, "a location line refers to function id 9223372036854775808, which is not in the function table"),
    ("location-missing-mapping", edited(lambda r: setattr(r.location[0], "mapping_id", 4)), LIMITS, InvalidProfile,
     "a location refers to mapping id 4, which is not in the mapping table"),
    ("location-id-0", edited(lambda r: r.location.add(address=0x1030)), LIMITS, InvalidProfile,
     "location 2 has id 0; ids must be non-zero"),
    ("function-id-0", edited(lambda r: setattr(r.function[0], "id", 0)), LIMITS, InvalidProfile,
     "function 0 has id 0; ids must be non-zero"),
    ("mapping-id-0", edited(lambda r: r.mapping.add(memory_start=1)), LIMITS, InvalidProfile,
     "mapping 1 has id 0; ids must be non-zero"),
    ("duplicate-location-id", edited(lambda r: r.location.add(id=2, address=0x1030)), LIMITS, InvalidProfile,
     "location id 2 appears more than once"),
    ("duplicate-function-id", edited(lambda r: r.function.add(id=1, name=6)), LIMITS, InvalidProfile,
     "function id 1 appears more than once"),
    ("duplicate-mapping-id", edited(lambda r: r.mapping.add(id=1)), LIMITS, InvalidProfile,
     "mapping id 1 appears more than once"),
    ("too-few-values", edited(lambda r: r.sample[1].value.pop()), LIMITS, InvalidProfile,
     "sample 1 has 1 values, but the profile declares 2 sample types"),
    ("too-many-values-unpacked", edited(lambda r: r.sample[0].value.append(7), "go"), LIMITS, InvalidProfile,
     "sample 0 has 3 values, but the profile declares 2 sample types"),
    ("no-sample-types", edited(lambda r: (r.ClearField("sample_type"), r.ClearField("sample"))), LIMITS,
     InvalidProfile, "profile declares no sample types"),
    ("too-many-samples", edited(lambda r: r.sample.add(location_id=[1], value=[3, 30])),
     ProfileLimits(max_samples=2), LimitExceeded, "profile has 3 samples, the limit is 2"),
    ("stack-too-deep", edited(lambda r: r.sample[1].location_id.extend([2, 1, 2])),
     ProfileLimits(max_stack_depth=3), LimitExceeded, "sample 1 has a stack 4 frames deep, the limit is 3"),
    ("raw-too-large", edited(lambda r: None), ProfileLimits(max_decompressed_bytes=40), LimitExceeded,
     "profile is 152 bytes, the limit is 40"),
    ("gzip-decompresses-too-large", lambda: gzip.compress(small_reference().SerializeToString()),
     ProfileLimits(max_decompressed_bytes=100), LimitExceeded,
     "profile decompresses to more than 100 bytes, the limit"),
]


def load(data: bytes, limits: ProfileLimits) -> Profile:
    profile = decode(data, limits.max_decompressed_bytes)
    validate(profile, limits)
    return profile


def test_the_small_profile_is_valid_in_both_layouts():
    ref = small_reference()
    assert len(ref.SerializeToString()) == 152
    for layout in LAYOUTS.values():
        assert unordered(decoded_view(load(layout(ref), LIMITS))) == unordered(reference_view(ref))


def test_truncation_cuts_fall_inside_fields():
    raw = small_reference().SerializeToString()
    assert not set(TRUNCATION_CUTS) & field_starts(raw)
    string_table = min(at for at in field_starts(raw) if at < len(raw) and raw[at] == 6 << 3 | 2)
    for cut in sorted(field_starts(raw) - {0}):  # a cut between fields is a valid, smaller message
        if cut <= string_table:
            with pytest.raises(DecodeError, match="without the string table"):
                decode(raw[:cut])
        else:
            decode(raw[:cut])


@pytest.mark.parametrize(("make", "limits", "error", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_rejections(make, limits, error, message):
    with pytest.raises(error) as info:
        load(make(), limits)
    assert type(info.value) is error
    assert str(info.value) == message


def gzip_bomb(zeros: int, chunk: int = 1 << 20) -> bytes:
    """`zeros` zero bytes as one gzip stream, built without ever holding or deflating all of them.

    A full flush resets the compressor, so after the first chunk every chunk of zeros compresses to the
    same bytes: compress two, repeat the second, and end with the trailer (CRC-32 and size) of the whole.
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(chunk)
    first = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeated = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    final_block = compressor.flush()[:-8]  # without the trailer, which covers only the two chunks
    crc = 0
    for _ in range(zeros // chunk):
        crc = zlib.crc32(block, crc)
    return first + repeated * (zeros // chunk - 1) + final_block + struct.pack("<II", crc, zeros & 0xFFFFFFFF)


def test_gzip_bomb_is_a_valid_gzip_of_zeros():
    assert gzip.decompress(gzip_bomb(5 << 20)) == bytes(5 << 20)
    assert gzip.decompress(gzip_bomb(3 << 12, chunk=1 << 12)) == bytes(3 << 12)


def test_gzip_bomb_stops_at_the_limit_without_inflating():
    bomb = gzip_bomb(1 << 30)
    assert len(bomb) < 2 << 20  # 1 GiB of zeros in about 1 MiB
    limit = 4 << 20
    tracemalloc.start()
    try:
        started = time.perf_counter()
        with pytest.raises(LimitExceeded) as info:
            decode(bomb, limit)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(info.value) == "profile decompresses to more than 4194304 bytes, the limit"
    assert peak < 3 * limit, f"peak {peak} bytes while decompressing"
    assert elapsed < 1.0, f"took {elapsed:.2f}s"


def test_invalid_utf8_in_a_string_becomes_the_replacement_character():
    """One bad string does not cost the profile: its bad bytes read as U+FFFD, the rest as written."""
    ref = small_reference()
    names = list(ref.string_table)
    bad_index = names.index(next(n for n in names if n))
    raw = bytearray(ref.SerializeToString())
    good = names[bad_index].encode()
    at = raw.find(good)
    raw[at:at + len(good)] = b"\xff" + good[1:-1] + b"\xfe"  # same length: the framing stays valid
    profile = decode(bytes(raw))
    validate(profile)
    assert profile.strings[bad_index] == "\ufffd" + names[bad_index][1:-1] + "\ufffd"
    assert [str(s) for i, s in enumerate(profile.strings) if i != bad_index] == \
        [s for i, s in enumerate(names) if i != bad_index]
