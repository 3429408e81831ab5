"""Column-wise protobuf encoding of pprof's small messages, and `expand_ranges`.

Every pprof message other than the top-level Profile (Sample, Label, Location, Line, Function,
Mapping) holds only varint fields: scalars, packed scalars and nested messages of scalars. So a message
is a sequence of varint "tokens" (tags, lengths, values), and whole tables are built as token arrays and
varint-encoded in one pass, with no Python object per sample. Decoding is the reader's (`reader/`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WIRE_VARINT = 0
WIRE_LEN = 2
_MAX_VARINT_BYTES = 10
_VARINT_LIMITS = np.array([1 << (7 * k) for k in range(1, 10)], dtype=np.uint64)


def expand_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenate arange(s, s + c) for every (s, c) without a Python loop."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts, counts) + (np.arange(total) - offsets)


# ----------------------------------------------------------------------------------------- encoding


@dataclass(frozen=True)
class Tokens:
    """Varints to write, each owned by a message; tokens of one owner are contiguous and in order."""

    owner: np.ndarray  # int64
    token: np.ndarray  # uint64

    @staticmethod
    def empty() -> Tokens:
        return Tokens(np.zeros(0, np.int64), np.zeros(0, np.uint64))


def varint_sizes(values: np.ndarray) -> np.ndarray:
    return np.searchsorted(_VARINT_LIMITS, values, side="right").astype(np.int64) + 1


def encode_varints(values: np.ndarray) -> bytes:
    values = values.astype(np.uint64, copy=False)
    sizes = varint_sizes(values)
    out = np.zeros(int(sizes.sum()), np.uint8)
    starts = np.cumsum(sizes) - sizes
    for k in range(_MAX_VARINT_BYTES):
        has = np.flatnonzero(sizes > k)
        if not len(has):
            break
        byte = (values[has] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = np.where(sizes[has] > k + 1, 0x80, 0).astype(np.uint64)
        out[starts[has] + k] = (byte | more).astype(np.uint8)
    return out.tobytes()


def concat(parts: list[Tokens]) -> Tokens:
    """Fields of the same messages, one part after the other within each owner."""
    owner = np.concatenate([p.owner for p in parts])
    # Each part is sorted by owner, so a stable sort merges the runs and keeps part order within an owner.
    order = np.argsort(owner, kind="stable")
    return Tokens(owner[order], np.concatenate([p.token for p in parts])[order])


def scalar_field(number: int, owner: np.ndarray, values: np.ndarray, keep_zero: bool = False) -> Tokens:
    """A singular varint field per owner; zero values are omitted as proto3 does."""
    values = np.asarray(values).astype(np.uint64, copy=False)
    if not keep_zero:
        nz = values != 0
        owner, values = owner[nz], values[nz]
    tokens = np.empty(2 * len(values), np.uint64)
    tokens[0::2] = number << 3 | WIRE_VARINT
    tokens[1::2] = values
    return Tokens(np.repeat(owner, 2).astype(np.int64), tokens)


def packed_field(number: int, owner: np.ndarray, values: np.ndarray, n_owners: int) -> Tokens:
    """A packed repeated varint field; `owner` must be sorted. Owners with no values get no field."""
    values = np.asarray(values).astype(np.uint64, copy=False)
    inner = Tokens(owner.astype(np.int64), values)
    return _wrap(number, inner, np.arange(n_owners), n_owners, skip_empty=True)


def message_field(number: int, inner: Tokens, parent: np.ndarray, n_inner: int) -> Tokens:
    """Repeated message field: inner message i (tokens owned by i) becomes a field of parent[i]."""
    return _wrap(number, inner, parent, n_inner, skip_empty=False)


def _wrap(number: int, inner: Tokens, parent: np.ndarray, n_inner: int, skip_empty: bool) -> Tokens:
    sizes = np.bincount(inner.owner, weights=varint_sizes(inner.token), minlength=n_inner).astype(np.int64)
    counts = np.bincount(inner.owner, minlength=n_inner)
    keep = np.flatnonzero(counts > 0) if skip_empty else np.arange(n_inner)
    head_owner = np.repeat(keep, 2)
    head = np.empty(2 * len(keep), np.uint64)
    head[0::2] = number << 3 | WIRE_LEN
    head[1::2] = sizes[keep]
    msg = np.concatenate([head_owner, inner.owner])
    order = np.argsort(msg, kind="stable")  # heads come first in the concatenation, so first per message
    tokens = np.concatenate([head, inner.token])[order]
    return Tokens(np.asarray(parent, np.int64)[msg[order]], tokens)
