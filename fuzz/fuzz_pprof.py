"""Fuzz target: the pprof decoder and everything ingest does with a decoded profile.

An input is raw (or gzipped) pprof bytes. It is decoded, validated against the ingester's limits and
split into one profile per sample type, as `ingester/prepare.py` does. Expected: `PprofError` (bad
data, broken rules, limits) and `LabelError` (a profile type that makes an invalid label).

Checks on a profile that is accepted:
- the decoder agrees with the protobuf runtime's own parse of the same bytes, field by field (so a
  decoder bug cannot hide behind a plausible-looking profile), strings as bytes read with U+FFFD for
  what is not UTF-8, as the decoder reads them;
- each split profile keeps its sample type's values;
- encoding the profile and decoding it again gives the same profile.
"""

from __future__ import annotations

import sys

import atheris
import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from harness import check, main

with atheris.instrument_imports(include=["flamewatch"]):
    from flamewatch.api.perftools.profiles import profile_pb2
    from flamewatch.labels.errors import LabelError
    from flamewatch.pprof import PprofError, ProfileLimits, decode, encode, split, validate

MAX_BYTES = 4 << 20
LIMITS = ProfileLimits(max_compressed_bytes=MAX_BYTES, max_decompressed_bytes=MAX_BYTES, max_samples=200_000,
                       max_stack_depth=512)
EXPECTED = (PprofError, LabelError)


def _reference_type():
    """pprof's Profile with its string table as bytes: the decoder reads bytes that are not UTF-8 as U+FFFD
    rather than refusing the profile (proto3's `string` would refuse it), and is compared on that."""
    file = descriptor_pb2.FileDescriptorProto()
    profile_pb2.DESCRIPTOR.CopyToProto(file)
    file.name, file.package = "fuzz/profile_bytes.proto", "fuzz.profiles"
    profile = next(m for m in file.message_type if m.name == "Profile")
    next(f for f in profile.field if f.name == "string_table").type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
    for message in file.message_type:
        for f in message.field:
            if f.HasField("type_name"):
                f.type_name = f.type_name.replace(".perftools.profiles.", ".fuzz.profiles.")
    pool = descriptor_pool.DescriptorPool()
    return message_factory.GetMessageClass(pool.Add(file).message_types_by_name["Profile"])


REFERENCE = _reference_type()


def target(data: bytes) -> None:
    profile = decode(data, MAX_BYTES)
    validate(profile, LIMITS)
    _check_against_protobuf(profile, data)
    for i, typed in enumerate(split(profile, None)):
        check(np.array_equal(typed.values, profile.samples.values[:, i]),
              f"split profile {i} lost its values")
    again = decode(encode(profile), MAX_BYTES)
    check(again == profile, "decode(encode(profile)) differs from profile")


def _check_against_protobuf(profile, data: bytes) -> None:
    reference = REFERENCE()
    raw = data if not data.startswith(b"\x1f\x8b") else _gunzip(data)
    try:
        reference.ParseFromString(raw)
    except Exception as exc:  # noqa: BLE001 - any refusal by the runtime is the finding
        raise AssertionError(f"accepted bytes the protobuf runtime rejects: {exc}") from exc
    s = profile.samples
    strings = [s.decode("utf-8", "replace") for s in reference.string_table]
    check(list(profile.strings) == strings, "string table differs")
    check(s.values.ravel().tolist() == [v for x in reference.sample for v in x.value], "sample values differ")
    check(s.locations.tolist() == [v for x in reference.sample for v in x.location_id], "sample stacks differ")
    check(np.diff(s.offsets).tolist() == [len(x.location_id) for x in reference.sample], "stack lengths differ")
    labels = [(i, lb.key, lb.str, lb.num, lb.num_unit) for i, x in enumerate(reference.sample) for lb in x.label]
    ours = list(zip(s.label_sample.tolist(), s.label_key.tolist(), s.label_str.tolist(), s.label_num.tolist(),
                    s.label_num_unit.tolist(), strict=True))
    check(ours == labels, "sample labels differ")
    loc = profile.locations
    check(list(zip(loc.id.tolist(), loc.mapping_id.tolist(), loc.address.tolist(), loc.is_folded.tolist(),
                   strict=True)) == [(x.id, x.mapping_id, x.address, x.is_folded) for x in reference.location],
          "locations differ")
    lines = [(ln.function_id, ln.line, ln.column) for x in reference.location for ln in x.line]
    check(list(zip(loc.line_function_id.tolist(), loc.line_line.tolist(), loc.line_column.tolist(),
                   strict=True)) == lines, "location lines differ")
    fn = profile.functions
    check(list(zip(fn.id.tolist(), fn.name.tolist(), fn.system_name.tolist(), fn.filename.tolist(),
                   fn.start_line.tolist(), strict=True))
          == [(x.id, x.name, x.system_name, x.filename, x.start_line) for x in reference.function],
          "functions differ")
    mp = profile.mappings
    check(list(zip(mp.id.tolist(), mp.memory_start.tolist(), mp.memory_limit.tolist(), mp.file_offset.tolist(),
                   mp.filename.tolist(), mp.build_id.tolist(), strict=True))
          == [(x.id, x.memory_start, x.memory_limit, x.file_offset, x.filename, x.build_id)
              for x in reference.mapping], "mappings differ")


def _gunzip(data: bytes) -> bytes:
    import gzip

    return gzip.decompress(data)


if __name__ == "__main__":
    main("pprof", target, EXPECTED)
    sys.exit(0)
