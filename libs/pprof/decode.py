"""Decode pprof bytes (gzip-compressed or raw protobuf) into a columnar `Profile`.

The top-level message is parsed by the protobuf runtime against a reading schema that keeps samples,
locations, functions and mappings as raw bytes; those are then decoded column-wise by `wire`.
Decompression is bounded so a gzip bomb stops at the configured limit instead of filling memory.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pyarrow as pa
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from flamewatch.api.flamewatch.v1 import pprof_envelope_pb2
from flamewatch.pprof import wire
from flamewatch.pprof.errors import DecodeError, InvalidProfile, LimitExceeded, PprofError
from flamewatch.pprof.model import Functions, Locations, Mappings, Profile, Samples

_GZIP_MAGIC = b"\x1f\x8b"
_MAX_MEMBERS = 1024  # pprof writers make one; cat of a few files makes a few; thousands is an attack
_FIRST_CHUNK, _MAX_CHUNK = 4 << 10, 1 << 20


def decompress(data: bytes, max_bytes: int) -> bytes:
    """Gunzip `data` if it is gzip, refusing to produce more than `max_bytes`.

    A gzip file is one or more members (RFC 1952), each inflated in turn; zero bytes may pad the space
    after a member (as gzip tools allow), anything else there is an error.
    """
    if not data.startswith(_GZIP_MAGIC):
        if len(data) > max_bytes:
            raise LimitExceeded(f"profile is {len(data)} bytes, the limit is {max_bytes}")
        return data
    out = bytearray()
    at, members = 0, 0
    try:
        while data.startswith(_GZIP_MAGIC, at):
            members += 1
            if members > _MAX_MEMBERS:
                raise DecodeError(f"invalid gzip data: more than {_MAX_MEMBERS} members")
            at = _skip_zeros(data, _inflate_member(data, at, out, max_bytes))
    except zlib.error as exc:
        raise DecodeError(f"invalid gzip data: {exc}") from exc
    if at < len(data):
        raise DecodeError("invalid gzip data: bytes after the end of the compressed stream are not a gzip member")
    return bytes(out)


def decompressed_size_hint(data: bytes) -> int:
    """What `data` decompresses to at least, without decompressing it: for gzip the size its last member's
    trailer states (RFC 1952's ISIZE, the whole size for the one member pprof writers make), else its length.
    A trailer can lie; use this to refuse early, never to accept."""
    if not data.startswith(_GZIP_MAGIC) or len(data) < 18:
        return len(data)
    return int.from_bytes(data[-4:], "little")


def _skip_zeros(data: bytes, at: int) -> int:
    """The offset of the first non-zero byte from `at` on (len(data) if none), in growing windows."""
    size = _FIRST_CHUNK
    while at < len(data) and data[at] == 0:
        window = np.frombuffer(data, np.uint8, count=min(size, len(data) - at), offset=at)
        nonzero = np.flatnonzero(window)
        at += int(nonzero[0]) if len(nonzero) else len(window)
        size = min(2 * size, _MAX_CHUNK)
    return at


def _inflate_member(data: bytes, at: int, out: bytearray, max_bytes: int) -> int:
    """Inflate the gzip member starting at `data[at]` onto `out`; return the offset just after it.

    Input goes in growing chunks, so the copy zlib makes of the bytes after a member stays small
    (handing it all the rest would copy the rest once per member).
    """
    inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
    view, size = memoryview(data), _FIRST_CHUNK
    while not inflater.eof:
        if at >= len(data):
            raise DecodeError("invalid gzip data: the compressed stream is truncated")
        pending = view[at : at + size]
        at += len(pending)
        while pending and not inflater.eof:
            out += inflater.decompress(pending, max_bytes + 1 - len(out))
            if len(out) > max_bytes:
                raise LimitExceeded(f"profile decompresses to more than {max_bytes} bytes, the limit")
            pending = inflater.unconsumed_tail
        size = min(2 * size, _MAX_CHUNK)
    return at - len(inflater.unused_data)


def decode(data: bytes, max_bytes: int = 64 << 20) -> Profile:
    """Decode a pprof profile. Raises DecodeError for anything that is not one."""
    raw = decompress(data, max_bytes)
    envelope = pprof_envelope_pb2.ProfileEnvelope()
    try:
        envelope.ParseFromString(raw)
    except ProtobufDecodeError as exc:
        what = "the decompressed data is" if data.startswith(_GZIP_MAGIC) else \
            "the data is neither gzip-compressed nor"
        raise DecodeError(f"not a pprof profile: {what} a valid protobuf message") from exc
    if not raw:
        raise DecodeError("empty profile")
    if not envelope.string_table:
        raise DecodeError("not a pprof profile: a valid protobuf message, but without the string table every "
                          "pprof profile has (OTLP profiles and other protobuf messages are not pprof)")
    _check_top_level_wire_types(envelope)
    samples, locations, functions, mappings = _tables(envelope, len(envelope.sample_type))
    return Profile(
        strings=_strings(envelope.string_table),
        sample_types=np.array([(t.type, t.unit) for t in envelope.sample_type], np.int64).reshape(-1, 2),
        samples=samples,
        locations=locations,
        functions=functions,
        mappings=mappings,
        period_type=(envelope.period_type.type, envelope.period_type.unit),
        period=envelope.period,
        time_nanos=envelope.time_nanos,
        duration_nanos=envelope.duration_nanos,
        drop_frames=envelope.drop_frames,
        keep_frames=envelope.keep_frames,
        default_sample_type=envelope.default_sample_type,
        doc_url=envelope.doc_url,
        comments=np.array(envelope.comment, np.int64),
    )


def _check_top_level_wire_types(envelope) -> None:
    """protobuf keeps a known field sent with another wire type (a stray varint where pprof has a message
    or a string, bytes where it has a number) as an unknown field and reads on; `go tool pprof` refuses
    the profile ("type mismatch"), and so do we, rather than lose the field silently."""
    messages = [("profile", envelope), ("period_type", envelope.period_type),
                *(("sample_type", t) for t in envelope.sample_type)]
    for what, message in messages:
        known = message.DESCRIPTOR.fields_by_number
        for field in UnknownFieldSet(message):
            if field.field_number in known:
                declared = known[field.field_number]
                raise DecodeError(f"{what}: field {field.field_number} ({declared.name}) has wire type "
                                  f"{field.wire_type}, but pprof's has wire type {_wire_type(declared)}")


def _wire_type(field: FieldDescriptor) -> int:
    length_delimited = (field.TYPE_MESSAGE, field.TYPE_BYTES, field.TYPE_STRING)
    return wire.WIRE_LEN if field.type in length_delimited else wire.WIRE_VARINT


def _strings(table) -> np.ndarray:
    """The string table as str; bytes that are not UTF-8 become U+FFFD, as pprof's own tools show them."""
    binary = pa.array(table, pa.binary())
    try:
        return binary.cast(pa.string()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        # Only profiles with bad bytes take this path: one decode per string.
        return np.array([s.decode("utf-8", "replace") for s in table], object)


# The tables in the order their errors are reported, and the wire types of their fields.
_TABLES = ("sample", "location", "function", "mapping")
_WIRE_TYPES = {"sample": {"messages": (3,)}, "location": {"varints": (1, 2, 3, 5), "messages": (4,)},
               "function": {"varints": (1, 2, 3, 4, 5)}, "mapping": {"varints": tuple(range(1, 11))}}


def _tables(envelope, k: int) -> tuple[Samples, Locations, Functions, Mappings]:
    """The four tables read together: one varint split and one field walk for all of them (and one for
    the labels and lines nested in them), so a small profile pays numpy's fixed cost per call once rather
    than once per table or per field. A corrupt profile is read again one table at a time, in `_TABLES`
    order, so its error names the first bad table and is the one that reading the tables apart gives."""
    parts = {name: list(getattr(envelope, name)) for name in _TABLES}  # one bytes object per message
    try:
        return _read(parts, k)
    except PprofError:
        for name in _TABLES:
            _read({other: parts[name] if other == name else [] for other in _TABLES}, k)
        raise


def _read(parts: dict[str, list[bytes]], k: int) -> tuple[Samples, Locations, Functions, Mappings]:
    n = {name: len(messages) for name, messages in parts.items()}
    v, fields = _walk(parts)
    for name, f in fields.items():
        wire.check_wire_types(f, name, **_WIRE_TYPES[name])
    sample, location = fields["sample"], fields["location"]
    loc_owner, locs = wire.scalars(v, sample, 1)
    val_owner, vals = wire.scalars(v, sample, 2)
    _check_value_counts(val_owner, n["sample"], k)
    label_owner, label_first, label_last = wire.submessages(sample, 3)
    line_owner, line_first, line_last = wire.submessages(location, 4)
    nested = {"sample label": len(label_owner), "location line": len(line_owner)}
    labels, lines = wire.walk_scalar_messages(v, np.concatenate([label_first, line_first]),
                                              np.concatenate([label_last, line_last]),
                                              _name_of_only_nonempty(nested, "nested messages")).split(
        np.cumsum([0, len(label_owner), len(line_owner)]))
    wire.check_wire_types(labels, "sample label", varints=(1, 2, 3, 4))
    wire.check_wire_types(lines, "location line", varints=(1, 2, 3))
    return (_samples(n["sample"], k, loc_owner, locs, vals, label_owner, labels),
            _locations(location, n["location"], line_owner, lines),
            _functions(fields["function"], n["function"]),
            _mappings(fields["mapping"], n["mapping"]))


def _name_of_only_nonempty(counts: dict[str, int], otherwise: str) -> str:
    """What errors call a group of tables: the name of its one non-empty table, as when read apart."""
    nonempty = [name for name, count in counts.items() if count]
    return nonempty[0] if len(nonempty) == 1 else otherwise


def _walk(parts: dict[str, list[bytes]]) -> tuple[wire.Varints, dict[str, wire.Fields]]:
    """Split the messages of the four tables (`_TABLES` order) into varints at once and read their fields:
    samples and locations, which hold length-delimited fields, in one walk; functions and mappings, all
    varints, in one fixed number of steps. Each table's fields with their owners counted within the table."""
    counts = [len(messages) for messages in parts.values()]
    messages = list(itertools.chain.from_iterable(parts.values()))
    sizes = np.fromiter(map(len, messages), np.int64, count=len(messages))
    buf = np.frombuffer(b"".join(messages), np.uint8)
    ends = np.concatenate([[0], np.cumsum(sizes)])
    first_of_table = np.cumsum([0, *counts])
    table_ends = ends[first_of_table[1:][np.array(counts) > 0]]
    if (buf[table_ends - 1] >= 0x80).any():  # a table split alone would end inside a varint
        raise DecodeError("truncated varint at the end of the data")
    v = wire.split_varints(buf)
    n = dict(zip(parts, counts, strict=True))
    bounds = v.index_of_byte(ends, _name_of_only_nonempty(n, "profile tables"))
    mid = first_of_table[2]
    with_payloads = wire.walk_messages(v, bounds[:mid], bounds[1:mid + 1], _name_of_only_nonempty(
        {name: n[name] for name in _TABLES[:2]}, "profile tables"))
    scalar_only = wire.walk_scalar_messages(v, bounds[mid:-1], bounds[mid + 1:], _name_of_only_nonempty(
        {name: n[name] for name in _TABLES[2:]}, "profile tables"))
    tables = [*with_payloads.split(first_of_table[:3]), *scalar_only.split(first_of_table[2:] - mid)]
    return v, dict(zip(parts, tables, strict=True))


def _offsets(owners: np.ndarray, n: int) -> np.ndarray:
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(owners, minlength=n), out=offsets[1:])
    return offsets


def _check_value_counts(owners: np.ndarray, n: int, k: int) -> None:
    counts = np.bincount(owners, minlength=n)
    if (counts != k).any():
        bad = int(np.flatnonzero(counts != k)[0])
        raise InvalidProfile(f"sample {bad} has {counts[bad]} values, but the profile declares {k} sample types")


def _samples(n: int, k: int, loc_owner: np.ndarray, locs: np.ndarray, vals: np.ndarray,
             label_owner: np.ndarray, lf: wire.Fields) -> Samples:
    label = wire.singulars(lf, 4, len(label_owner)).view(np.int64)
    return Samples(
        offsets=_offsets(loc_owner, n),
        locations=locs,
        values=vals.view(np.int64).reshape(n, k),
        label_sample=label_owner,
        label_key=label[1],
        label_str=label[2],
        label_num=label[3],
        label_num_unit=label[4],
    )


def _locations(f: wire.Fields, n: int, line_owner: np.ndarray, lf: wire.Fields) -> Locations:
    col, line = wire.singulars(f, 5, n), wire.singulars(lf, 3, len(line_owner))
    return Locations(
        id=col[1],
        mapping_id=col[2],
        address=col[3],
        is_folded=col[5] != 0,
        line_offsets=_offsets(line_owner, n),
        line_function_id=line[1],
        line_line=line[2].view(np.int64),
        line_column=line[3].view(np.int64),
    )


def _functions(f: wire.Fields, n: int) -> Functions:
    col = wire.singulars(f, 5, n)
    signed = col.view(np.int64)
    return Functions(id=col[1], name=signed[2], system_name=signed[3], filename=signed[4], start_line=signed[5])


def _mappings(f: wire.Fields, n: int) -> Mappings:
    col = wire.singulars(f, 10, n)
    return Mappings(
        id=col[1], memory_start=col[2], memory_limit=col[3], file_offset=col[4],
        filename=col[5].view(np.int64), build_id=col[6].view(np.int64),
        has_functions=col[7] != 0, has_filenames=col[8] != 0,
        has_line_numbers=col[9] != 0, has_inline_frames=col[10] != 0,
    )
