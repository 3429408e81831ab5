"""Encode a columnar `Profile` back into pprof bytes.

The small scalar fields and the string table go through the protobuf runtime; the large tables are
written as varint token streams by `wire` and appended (protobuf concatenation merges repeated
fields), so no Python object is built per sample.
"""

from __future__ import annotations

import gzip

import numpy as np

from flamewatch.api.flamewatch.v1 import pprof_envelope_pb2
from flamewatch.pprof import wire
from flamewatch.pprof.model import Functions, Locations, Mappings, Profile, Samples


def encode(profile: Profile, compress: bool = True) -> bytes:
    body = _header(profile) + wire.encode_varints(
        wire.concat(
            [
                _one(2, _samples(profile.samples), len(profile.samples)),
                _one(3, _mappings(profile.mappings), len(profile.mappings)),
                _one(4, _locations(profile.locations), len(profile.locations)),
                _one(5, _functions(profile.functions), len(profile.functions)),
            ]
        ).token
    )
    return gzip.compress(body, compresslevel=1) if compress else body


def _header(p: Profile) -> bytes:
    env = pprof_envelope_pb2.ProfileEnvelope(
        string_table=[s.encode() for s in p.strings],
        time_nanos=p.time_nanos, duration_nanos=p.duration_nanos, period=p.period,
        drop_frames=p.drop_frames, keep_frames=p.keep_frames,
        default_sample_type=p.default_sample_type, doc_url=p.doc_url, comment=p.comments.tolist(),
    )
    for t, u in p.sample_types.tolist():
        env.sample_type.add(type=t, unit=u)
    if p.period_type != (0, 0):
        env.period_type.type, env.period_type.unit = p.period_type
    return env.SerializeToString()


def _one(number: int, inner: wire.Tokens, n: int) -> wire.Tokens:
    """Every message of a table becomes one repeated field of the single top-level Profile."""
    return wire.message_field(number, inner, np.zeros(n, np.int64), n)


def _owners(offsets: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def _samples(s: Samples) -> wire.Tokens:
    n, k = s.values.shape
    labels = wire.concat([
        wire.scalar_field(1, np.arange(len(s.label_key)), s.label_key),
        wire.scalar_field(2, np.arange(len(s.label_key)), s.label_str),
        wire.scalar_field(3, np.arange(len(s.label_key)), s.label_num),
        wire.scalar_field(4, np.arange(len(s.label_key)), s.label_num_unit),
    ])
    return wire.concat([
        wire.packed_field(1, _owners(s.offsets), s.locations, n),
        wire.packed_field(2, np.repeat(np.arange(n), k), s.values.reshape(-1).view(np.uint64), n),
        wire.message_field(3, labels, s.label_sample, len(s.label_key)),
    ])


def _locations(loc: Locations) -> wire.Tokens:
    n, m = len(loc), len(loc.line_function_id)
    rows, lines = np.arange(n), np.arange(m)
    line_tokens = wire.concat([
        wire.scalar_field(1, lines, loc.line_function_id),
        wire.scalar_field(2, lines, loc.line_line.view(np.uint64)),
        wire.scalar_field(3, lines, loc.line_column.view(np.uint64)),
    ])
    return wire.concat([
        wire.scalar_field(1, rows, loc.id),
        wire.scalar_field(2, rows, loc.mapping_id),
        wire.scalar_field(3, rows, loc.address),
        wire.message_field(4, line_tokens, _owners(loc.line_offsets), m),
        wire.scalar_field(5, rows, loc.is_folded.astype(np.uint64)),
    ])


def _functions(f: Functions) -> wire.Tokens:
    rows = np.arange(len(f))
    return wire.concat([
        wire.scalar_field(1, rows, f.id),
        *(wire.scalar_field(i, rows, col.view(np.uint64))
          for i, col in ((2, f.name), (3, f.system_name), (4, f.filename), (5, f.start_line))),
    ])


def _mappings(mp: Mappings) -> wire.Tokens:
    rows = np.arange(len(mp))
    cols = (mp.id, mp.memory_start, mp.memory_limit, mp.file_offset, mp.filename.view(np.uint64),
            mp.build_id.view(np.uint64), mp.has_functions, mp.has_filenames, mp.has_line_numbers,
            mp.has_inline_frames)
    return wire.concat([wire.scalar_field(i, rows, np.asarray(c).astype(np.uint64)) for i, c in enumerate(cols, 1)])
