"""Fields sent with another wire type than pprof's, which `go tool pprof` refuses (its decoder's "type
mismatch", reported as "unrecognized profile format"): a stray varint where pprof has a message or a
string, bytes where it has a number. The protobuf runtime keeps such a field as an unknown one and the
column decoder used to skip it, so the profile was accepted with the field's value lost. Each case is
refused by `go tool pprof` here and by our decoder with a message naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from infra import gotool
from test_pprof_codec import small_reference, top_level_field

from flamewatch.pprof import DecodeError, decode, validate

pytestmark = [pytest.mark.go]

BASE = small_reference().SerializeToString()
CASES = [
    # (id, bytes, our message)
    ("sample-label-as-varint", BASE + top_level_field(2, b"\x10\x01\x10\x01\x18\x05"),
     "sample: field 3 has wire type 0, but pprof's field 3 has wire type 2"),
    ("label-key-as-bytes", BASE + top_level_field(2, b"\x10\x01\x10\x01\x1a\x03\x0a\x01\x05"),
     "sample label: field 1 has wire type 2, but pprof's field 1 has wire type 0"),
    ("location-line-as-varint", BASE + top_level_field(4, b"\x08\x03\x20\x05"),
     "location: field 4 has wire type 0, but pprof's field 4 has wire type 2"),
    ("location-address-as-bytes", BASE + top_level_field(4, b"\x08\x03\x1a\x01\x05"),
     "location: field 3 has wire type 2, but pprof's field 3 has wire type 0"),
    ("line-function-as-bytes", BASE + top_level_field(4, b"\x08\x03\x22\x03\x0a\x01\x01"),
     "location line: field 1 has wire type 2, but pprof's field 1 has wire type 0"),
    ("function-name-as-bytes", BASE + top_level_field(5, b"\x08\x03\x12\x01\x05"),
     "function: field 2 has wire type 2, but pprof's field 2 has wire type 0"),
    ("mapping-start-as-bytes", BASE + top_level_field(3, b"\x08\x02\x12\x01\x05"),
     "mapping: field 2 has wire type 2, but pprof's field 2 has wire type 0"),
    ("top-level-sample-as-varint", BASE + b"\x10\x05",
     "profile: field 2 (sample) has wire type 0, but pprof's has wire type 2"),
    ("top-level-string-as-varint", BASE + b"\x30\x05",
     "profile: field 6 (string_table) has wire type 0, but pprof's has wire type 2"),
    ("top-level-time-as-bytes", BASE + b"\x4a\x01\x05",
     "profile: field 9 (time_nanos) has wire type 2, but pprof's has wire type 0"),
    ("sample-type-unit-as-bytes", BASE + top_level_field(1, b"\x08\x01\x12\x01\x02"),
     "sample_type: field 2 (unit) has wire type 2, but pprof's has wire type 0"),
]


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_field_of_the_wrong_wire_type_is_refused_as_go_tool_pprof_refuses_it(tmp_path: Path, data: bytes,
                                                                                message: str):
    path = tmp_path / "profile.pb"
    path.write_bytes(data)
    with pytest.raises(RuntimeError, match="unrecognized profile format"):
        gotool.pprof_raw(path)
    with pytest.raises(DecodeError) as info:
        decode(data)
    assert str(info.value) == message


def test_unknown_fields_and_packed_or_plain_repeated_values_stay_accepted_by_both(tmp_path: Path):
    """Go skips fields it does not know, and reads repeated numbers packed or one by one."""
    extra = top_level_field(2, b"\x08\x01\x10\x05\x10\x06\x78\x05") + b"\xf8\x01\x07"  # field 15 of a sample, 31
    path = tmp_path / "profile.pb"
    path.write_bytes(BASE + extra)
    raw = gotool.pprof_raw(path)
    profile = decode(BASE + extra)
    validate(profile)
    assert raw.samples[-1] == ([5, 6], [1])
    assert profile.samples.values[-1].tolist() == [5, 6]
