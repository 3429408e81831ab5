"""What the pprof decoder refuses, and with which message; and what it repairs rather than refuses.

Every rejection names the first offending element. Bytes that are not UTF-8 in one string are
replaced by U+FFFD instead of costing the whole profile."""

import gzip
import struct
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from infra.otlp import otlp_export_request
from test_pprof_codec import LAYOUTS, decoded_view, reference_view, small_reference, top_level_field, unordered

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from flamewatch.pprof import (
    DecodeError,
    InvalidProfile,
    LimitExceeded,
    Profile,
    ProfileLimits,
    decode,
    decompress,
    decompressed_size_hint,
    validate,
)


def edited(edit: Callable[[pb.Profile], object], layout: str = "reference") -> Callable[[], bytes]:
    def make() -> bytes:
        ref = small_reference()
        edit(ref)
        return LAYOUTS[layout](ref)
    return make



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


FUZZ_INPUTS = Path(__file__).parent / "testdata" / "fuzz"  # inputs the fuzz campaign found (fuzz/README.md)


def fuzz_input(name: str) -> Callable[[], bytes]:
    return lambda: (FUZZ_INPUTS / name).read_bytes()


def gzip_members(*parts: bytes) -> bytes:
    return b"".join(gzip.compress(part) for part in parts)


def values(ref: pb.Profile, column: int, per_sample: list[int]) -> None:
    for sample, value in zip(ref.sample, per_sample, strict=True):
        sample.value[column] = value


TRUNCATION_CUTS = [1, 2, 5, 13, 40, 77]
OVERFLOW = ('the values of sample type "{name}" ({unit}) add up past the int64 range (±9223372036854775808); '
            "split the profile or send smaller units")
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
     "invalid gzip data: Error -6 Incorrect checksum found"),  # ISA-L's words for a bad CRC-32
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
    ("sample-field-number-0", with_sample_bytes(b"\x00\x05\x10\x01\x10\x0a"), LIMITS, DecodeError,
     "sample: field number 0 is outside 1..536870911"),
    ("sample-field-number-too-large", with_sample_bytes(b"\x80\x80\x80\x80\x10\x05\x10\x01\x10\x0a"), LIMITS,
     DecodeError, "sample: field number 536870912 is outside 1..536870911"),
    ("fuzz-mapping-field-number-0", fuzz_input("pprof-field-number-zero.pb"), LIMITS, DecodeError,
     "mapping: field number 0 is outside 1..536870911"),
    ("gzip-trailing-garbage", lambda: gzip.compress(small_reference().SerializeToString()) + b"l", LIMITS,
     DecodeError, "invalid gzip data: bytes after the end of the compressed stream are not a gzip member"),
    ("fuzz-gzip-trailing-byte", fuzz_input("gzip-trailing-byte.pb.gz"), LIMITS, DecodeError,
     "invalid gzip data: bytes after the end of the compressed stream are not a gzip member"),
    ("gzip-second-member-truncated", lambda: gzip_members(b"\x0a\x00", b"\x0a\x00")[:-3], LIMITS, DecodeError,
     GZIP_TRUNCATED),
    ("gzip-members-too-large-together", lambda: gzip_members(*[small_reference().SerializeToString()[:100]] * 2),
     ProfileLimits(max_decompressed_bytes=150), LimitExceeded,
     "profile decompresses to more than 150 bytes, the limit"),
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
    ("values-add-up-past-int64", edited(lambda r: values(r, 1, [1 << 62, 1 << 62])), LIMITS, InvalidProfile,
     OVERFLOW.format(name="cpu", unit="nanoseconds")),
    ("values-add-up-below-int64", edited(lambda r: values(r, 0, [-(1 << 63), -1])), LIMITS, InvalidProfile,
     OVERFLOW.format(name="samples", unit="count")),
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


@pytest.mark.parametrize("per_sample", [[(1 << 62) - 1, 1 << 62], [-(1 << 62), -(1 << 62)],
                                        [(1 << 63) - 1, -(1 << 63)]])
def test_values_that_add_up_to_the_ends_of_int64_are_accepted(per_sample: list[int]):
    ref = small_reference()
    values(ref, 1, per_sample)
    profile = load(ref.SerializeToString(), LIMITS)
    assert profile.samples.values[:, 1].tolist() == per_sample


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


def test_gzip_of_several_members_is_their_concatenation():
    raw = small_reference().SerializeToString()
    cut = sorted(field_starts(raw))[3]
    assert decode(gzip_members(raw[:cut], b"", raw[cut:])) == decode(raw)
    assert decompress(gzip_members(raw[:cut], raw[cut:]), len(raw)) == raw


def test_gzip_may_be_padded_with_zeros():
    raw = small_reference().SerializeToString()
    assert decompress(gzip.compress(raw) + b"\0" * 7, len(raw)) == raw


def test_zeros_may_pad_the_space_between_gzip_members():
    raw = small_reference().SerializeToString()
    assert decompress(gzip.compress(raw[:50]) + b"\0" * 5000 + gzip.compress(raw[50:]), len(raw)) == raw
    found = (FUZZ_INPUTS / "gzip-zeros-between-members.pb.gz").read_bytes()  # a fuzz input gzip reads
    assert decompress(found, 1 << 20) == gzip.decompress(found)


def test_gzip_members_are_limited_in_number():
    empty = gzip.compress(b"", mtime=0)
    assert decompress(empty * 1023 + gzip.compress(b"x"), 10) == b"x"
    with pytest.raises(DecodeError, match="^invalid gzip data: more than 1024 members$"):
        decompress(empty * 1024 + gzip.compress(b"x"), 10)
    # Tens of thousands of members once cost time quadratic in their number (the rest copied per member).
    with pytest.raises(DecodeError, match="more than 1024 members"):
        decompress(empty * 200_000, 10)


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


def test_the_size_a_gzip_trailer_states_is_read_without_decompressing():
    data = b"\x0a" * 100_000
    assert decompressed_size_hint(gzip.compress(data)) == 100_000
    assert decompressed_size_hint(data) == 100_000  # not gzip: its own length
    assert decompressed_size_hint(gzip.compress(data) + gzip.compress(b"ab")) == 2  # the last member's: at least
    assert decompressed_size_hint(b"\x1f\x8b") == 2  # too short for a trailer
