"""Decode pprof bytes (gzip-compressed or raw protobuf) into a columnar `Profile`.

Decompression is here, bounded so a gzip bomb stops at the configured limit instead of filling memory.
It runs on ISA-L (`isal`, zlib's API), which inflates a 300 KB pprof in about half of zlib's time.
The protobuf is read by `_reader`, an extension module written in Rust (`reader/`), in one pass into
bytearrays of columns, which become the model's numpy arrays without a copy. A small profile costs a few
dozen calls here whatever its size; reading it column-wise with numpy cost some 150-200 calls, each with
its fixed cost (issue 21). The reader's refusals become this package's errors at this boundary.
"""

from __future__ import annotations

import numpy as np
from isal import isal_zlib

from flamewatch.pprof import _reader
from flamewatch.pprof.errors import DecodeError, InvalidProfile, LimitExceeded
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
    except isal_zlib.error as exc:
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

    Input goes in growing chunks, so the copy the inflater makes of the bytes after a member stays small
    (handing it all the rest would copy the rest once per member).
    """
    inflater = isal_zlib.decompressobj(wbits=isal_zlib.MAX_WBITS | 16)
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
    if not raw:
        raise DecodeError("empty profile")
    return _profile(*_read(raw, gzipped=data.startswith(_GZIP_MAGIC)))


def _read(raw: bytes, gzipped: bool) -> tuple:
    """`_reader.read`, its refusals translated into this package's errors."""
    try:
        return _reader.read(raw)
    except _reader.NotProtobuf as exc:
        what = "the decompressed data is" if gzipped else "the data is neither gzip-compressed nor"
        raise DecodeError(f"not a pprof profile: {what} a valid protobuf message") from exc
    except _reader.Malformed as exc:
        raise DecodeError(str(exc)) from exc
    except _reader.RuleBroken as exc:
        raise InvalidProfile(str(exc)) from exc


def _profile(strings: list[str], header: tuple[int, ...], sample_types: bytearray, comments: bytearray,
             *tables: tuple[bytearray, ...]) -> Profile:
    """The model over what `_reader.read` returns (its layout is the reader's module docstring's)."""
    types = np.frombuffer(sample_types, np.int64).reshape(-1, 2)
    samples, locations, functions, mappings = (_columns(kind, columns) for kind, columns in zip(_KINDS, tables))
    values = samples.pop("values").reshape(len(samples["offsets"]) - 1, len(types))
    period, time_nanos, duration_nanos, drop_frames, keep_frames, default_sample_type, doc_url = header[2:]
    return Profile(
        strings=np.array(strings, object), sample_types=types, samples=Samples(values=values, **samples),
        locations=Locations(**locations), functions=Functions(**functions), mappings=Mappings(**mappings),
        period_type=header[:2], period=period, time_nanos=time_nanos, duration_nanos=duration_nanos,
        drop_frames=drop_frames, keep_frames=keep_frames, default_sample_type=default_sample_type,
        doc_url=doc_url, comments=np.frombuffer(comments, np.int64),
    )


_U, _I, _B = np.uint64, np.int64, np.bool_
# The columns `_reader.read` returns per table, in its order, with the dtype of each in the model.
_LAYOUT = {
    Samples: (("offsets", _I), ("locations", _U), ("values", _I), ("label_sample", _I), ("label_key", _I),
              ("label_str", _I), ("label_num", _I), ("label_num_unit", _I)),
    Locations: (("id", _U), ("mapping_id", _U), ("address", _U), ("line_offsets", _I), ("line_function_id", _U),
                ("line_line", _I), ("line_column", _I), ("is_folded", _B)),
    Functions: (("id", _U), ("name", _I), ("system_name", _I), ("filename", _I), ("start_line", _I)),
    Mappings: (("id", _U), ("memory_start", _U), ("memory_limit", _U), ("file_offset", _U), ("filename", _I),
               ("build_id", _I), ("has_functions", _B), ("has_filenames", _B), ("has_line_numbers", _B),
               ("has_inline_frames", _B)),
}
_KINDS = tuple(_LAYOUT)


def _columns(kind: type, buffers: tuple[bytearray, ...]) -> dict[str, np.ndarray]:
    """A table's bytearrays as numpy arrays over the same memory (writable, as the bytearrays are)."""
    return {name: np.frombuffer(buffer, dtype) for (name, dtype), buffer in zip(_LAYOUT[kind], buffers, strict=True)}
