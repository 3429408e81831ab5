"""What the pprof reader (`flamewatch.pprof._reader`, Rust) decides on its own, beyond the codec and
rejection tests: where a cut varint is reported, which wire types each level accepts, what the top level
skips as protobuf does, that opaque bytes of unknown fields are skipped whatever they hold, how bytes that
are not UTF-8 read, and the columns it hands over."""

import random

import numpy as np
import pytest
from test_pprof_codec import decoded_view, parse, reference_view, small_reference, top_level_field
from test_pprof_rejections import NOT_PPROF

from flamewatch.pprof import DecodeError, decode, validate
from flamewatch.pprof.model import Functions, Locations, Mappings, Samples

BASE = small_reference().SerializeToString()
TABLES = {"sample": 2, "mapping": 3, "location": 4, "function": 5}
CUT = "truncated varint at the end of the data"


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def varint(x: int) -> bytes:
    out = bytearray()
    while x >= 0x80:
        out.append(x & 0x7F | 0x80)
        x >>= 7
    return bytes(out + bytes([x]))


def refused(data: bytes) -> str:
    with pytest.raises(DecodeError) as info:
        decode(data)
    return str(info.value)


# --------------------------------------------------------------------------- varints cut short


@pytest.mark.parametrize("table", TABLES)
def test_a_varint_cut_at_the_end_of_a_tables_last_message_is_a_truncated_profile(table):
    assert refused(BASE + top_level_field(TABLES[table], b"\x08\x96")) == CUT


@pytest.mark.parametrize("table", TABLES)
def test_a_varint_cut_at_the_end_of_any_other_message_is_a_misplaced_boundary(table):
    data = BASE + top_level_field(TABLES[table], b"\x08\x96") + top_level_field(TABLES[table], b"\x08\x07")
    assert refused(data) == f"{table}: a field boundary falls inside a varint (truncated or corrupt data)"


@pytest.mark.parametrize(("data", "message"), [
    # a label, a line or a packed run ending inside a varint, at the end of the table's data and before it
    (top_level_field(2, b"\x10\x01\x10\x01\x1a\x02\x08\x96"), CUT),
    (top_level_field(4, b"\x08\x03\x22\x02\x08\x96"), CUT),
    (top_level_field(2, b"\x10\x01\x10\x01\x0a\x01\x96"), CUT),
    (top_level_field(2, b"\x1a\x02\x08\x96\x10\x01\x10\x01"),
     "sample: a field boundary falls inside a varint (truncated or corrupt data)"),
    (top_level_field(4, b"\x22\x02\x08\x96\x08\x03"),
     "location: a field boundary falls inside a varint (truncated or corrupt data)"),
    (top_level_field(2, b"\x0a\x01\x96\x10\x01\x10\x01"),
     "sample: a field boundary falls inside a varint (truncated or corrupt data)"),
], ids=["label-last", "line-last", "packed-last", "label-inside", "line-inside", "packed-inside"])
def test_nested_runs_cut_inside_a_varint(data, message):
    assert refused(BASE + data) == message


def test_a_varint_of_eleven_bytes_is_refused_wherever_it_is():
    eleven = b"\x80" * 10 + b"\x01"
    assert refused(BASE + top_level_field(5, b"\x08" + eleven)) == "varint longer than 10 bytes"
    assert refused(BASE + top_level_field(4, b"\x08\x03\x22\x0c\x08" + eleven)) == "varint longer than 10 bytes"
    assert refused(BASE + b"\x48" + eleven) == NOT_PPROF  # at the top level, protobuf's own refusal


# --------------------------------------------------------------------------- wire types


@pytest.mark.parametrize(("data", "message"), [
    (top_level_field(4, b"\x0d\x01\x02\x03\x04"), "location: field 1 has unsupported wire type 5"),
    (top_level_field(5, b"\x08\x01\x11" + bytes(8)), "function: field 2 has unsupported wire type 1"),
    (top_level_field(3, b"\x08\x02\x7b\x7c"), "mapping: field 15 has unsupported wire type 3"),
    (top_level_field(2, b"\x10\x01\x10\x01\x1a\x02\x0c\x00"), "sample label: field 1 has unsupported wire type 4"),
    (top_level_field(4, b"\x08\x03\x22\x05\x0d\x01\x02\x03\x04"),
     "location line: field 1 has unsupported wire type 5"),
    (top_level_field(2, b"\x10\x01\x10\x01\x1a\x03\x7a\x05\x01"),
     "sample label: a length-delimited field runs past the end of its message"),
    (top_level_field(2, b"\x10\x01\x10\x01\x1a\x05\x08\x01"),
     "sample: a length-delimited field runs past the end of its message"),
    (top_level_field(5, b"\x08\x01\x00\x01"), "function: field number 0 is outside 1..536870911"),
    (top_level_field(4, b"\x08\x03\x22\x01\x08"), "location line: a field has no value (truncated message)"),
], ids=["location-fixed32", "function-fixed64", "mapping-group", "label-end-group", "line-fixed32",
        "label-unknown-runs-past", "label-runs-past", "function-number-0", "line-no-value"])
def test_below_the_top_level_only_varints_and_length_delimited_fields(data, message):
    assert refused(BASE + data) == message


@pytest.mark.parametrize(("what", "data", "field", "wire"), [
    ("sample", top_level_field(2, b"\x10\x01\x10\x01\x18\x05"), 3, 0),
    ("location", top_level_field(4, b"\x08\x03\x20\x05"), 4, 0),
    ("location", top_level_field(4, b"\x08\x03\x2a\x01\x01"), 5, 2),
    ("function", top_level_field(5, b"\x08\x03\x2a\x01\x01"), 5, 2),
    ("mapping", top_level_field(3, b"\x08\x02\x52\x01\x01"), 10, 2),
    ("sample label", top_level_field(2, b"\x10\x01\x10\x01\x1a\x03\x22\x01\x01"), 4, 2),
    ("location line", top_level_field(4, b"\x08\x03\x22\x03\x1a\x01\x01"), 3, 2),
], ids=["sample-label", "location-line", "location-is-folded", "function-start-line", "mapping-inline-frames",
        "label-num-unit", "line-column"])
def test_a_known_field_of_the_other_wire_type_is_refused_in_every_message(what, data, field, wire):
    expected = 2 - wire
    assert refused(BASE + data) == \
        f"{what}: field {field} has wire type {wire}, but pprof's field {field} has wire type {expected}"


def test_repeated_numbers_may_be_packed_unpacked_mixed_and_empty():
    sample = (b"\x08\x01" + tag(1, 2) + b"\x00" + tag(1, 2) + b"\x02\x02\x03" + b"\x10\x05" + tag(2, 2) + b"\x01\x06"
              + tag(1, 2) + b"\x00")
    comments = tag(13, 0) + b"\x03" + tag(13, 2) + b"\x02\x04\x05" + tag(13, 2) + b"\x00"
    data = BASE + top_level_field(2, sample) + comments
    profile = decode(data)
    assert decoded_view(profile) == reference_view(parse(data))
    assert decoded_view(profile)["samples"][-1] == ([1, 2, 3], [5, 6], [])
    assert profile.comments.tolist() == [3, 4, 5]


# --------------------------------------------------------------------------- what is skipped


def test_unknown_fields_below_the_top_level_are_skipped_whatever_their_payload_holds():
    """Their bytes are opaque: not varints, maybe a cut varint or eleven continuation bytes."""
    opaque = tag(15, 2) + varint(12) + b"\x80" * 11 + b"\xff"
    data = (BASE + top_level_field(2, b"\x10\x01\x10\x01" + opaque + tag(16, 0) + b"\x07")
            + top_level_field(4, b"\x08\x03" + opaque + b"\x22" + varint(len(opaque) + 2) + b"\x08\x01" + opaque)
            + top_level_field(5, b"\x08\x03" + opaque) + top_level_field(3, b"\x08\x02" + opaque))
    profile = decode(data)
    assert decoded_view(profile) == reference_view(parse(data))
    validate(profile)


def test_the_top_level_skips_unknown_fields_of_every_wire_type_as_protobuf_does():
    group = tag(102, 3) + tag(1, 0) + b"\x05" + tag(103, 3) + tag(1, 1) + bytes(8) + tag(103, 4) + tag(102, 4)
    extra = tag(100, 1) + bytes(8) + tag(101, 5) + bytes(4) + tag(104, 2) + b"\x02\x80\x80" + group
    value_type_extra = top_level_field(11, b"\x08\x03\x10\x04" + tag(9, 5) + bytes(4) + tag(9, 3) + tag(9, 4))
    data = BASE + extra + value_type_extra
    profile = decode(data)
    assert decoded_view(profile) == reference_view(parse(data))
    assert decode(data) == decode(BASE)


@pytest.mark.parametrize("data", [
    tag(102, 4),  # an end-group tag with no group open
    tag(102, 3) + tag(1, 0) + b"\x05" + tag(103, 4),  # a group closed by another number
    tag(102, 3) + tag(1, 0) + b"\x05",  # a group never closed
    b"".join(tag(200 + i, 3) for i in range(40)) + b"".join(tag(239 - i, 4) for i in range(40)),  # 40 deep
    tag(100, 6) + b"\x00", tag(100, 7) + b"\x00",  # wire types that do not exist
    varint(1 << 35 | 2 << 3),  # a tag past 32 bits
    b"\x00\x01",  # field number 0
    top_level_field(1, b"\x08\x96"),  # a sample type cut inside a varint
    top_level_field(11, tag(1, 2) + b"\x05"),  # a period type's field running past it
], ids=["end-group-alone", "group-mismatch", "group-open", "groups-40-deep", "wire-6", "wire-7", "tag-36-bits",
        "number-0", "sample-type-cut", "period-type-runs-past"])
def test_the_top_level_framing_is_protobufs(data):
    assert refused(BASE + data) == NOT_PPROF


def test_groups_nested_32_deep_are_still_read():
    data = BASE + b"".join(tag(200 + i, 3) for i in range(32)) + b"".join(tag(231 - i, 4) for i in range(32))
    assert decode(data) == decode(BASE)


def test_a_second_period_type_merges_into_the_first_as_protobuf_merges_it():
    data = BASE + top_level_field(11, b"\x10\x07")
    assert decode(data).period_type == (3, 7) == (parse(data).period_type.type, parse(data).period_type.unit)


def test_the_first_bad_table_is_named_in_table_order_not_stream_order():
    """Tables are read in the order sample, location, function, mapping, wherever their messages are."""
    no_value = b"\x08"
    assert refused(BASE + top_level_field(3, no_value) + top_level_field(4, no_value)) == \
        "location: a field has no value (truncated message)"
    assert refused(BASE + top_level_field(5, no_value) + top_level_field(2, b"\x10\x01\x10\x01" + no_value)) == \
        "sample: a field has no value (truncated message)"


# --------------------------------------------------------------------------- strings and columns


def test_strings_that_are_not_utf8_read_as_pythons_replace_decoder_reads_them():
    rng = random.Random(21)
    raw = [b"", b"\xff", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"a\xc3", b"\xc0\xaf", b"\xf0\x9f\x98\x80",
           "ünïcode ✓".encode(), *(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 12))) for _ in range(200))]
    data = BASE + b"".join(top_level_field(6, s) for s in raw)
    strings = decode(data).strings
    assert strings.dtype == object
    assert list(strings[8:]) == [s.decode("utf-8", "replace") for s in raw]


def test_columns_are_writable_arrays_of_the_models_types():
    profile = decode(BASE)
    tables = {Samples: profile.samples, Locations: profile.locations, Functions: profile.functions,
              Mappings: profile.mappings}
    for table in tables.values():
        for name, column in vars(table).items():
            assert column.flags.writeable, name
            assert column.dtype.kind in "uib", (name, column.dtype)
    assert profile.samples.values.shape == (2, 2) and profile.samples.values.dtype == np.int64
    assert profile.samples.locations.dtype == np.uint64 and profile.locations.address.dtype == np.uint64
    assert profile.mappings.has_functions.dtype == bool and profile.locations.is_folded.dtype == bool
    assert profile.functions.name.dtype == np.int64 and profile.samples.label_sample.dtype == np.int64
    assert profile.sample_types.dtype == np.int64 and profile.comments.dtype == np.int64
    assert isinstance(profile.period, int) and isinstance(profile.period_type, tuple)
