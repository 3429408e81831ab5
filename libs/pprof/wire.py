"""Column-wise protobuf wire codec for pprof's small messages.

Every pprof message other than the top-level Profile (Sample, Label, Location, Line, Function,
Mapping) holds only varint fields: scalars, packed scalars and nested messages of scalars. So a run of
such messages is, byte for byte, a sequence of varints. We split it into varints once with numpy and
then walk the fields of all messages together, one field per round, instead of building one Python
object per sample. Rounds are bounded by the number of fields in the longest message, not by the
number of messages.

Encoding is the mirror image: a message is a sequence of varint "tokens" (tags, lengths, values), so
whole tables are built as token arrays and varint-encoded in one pass.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from flamewatch.pprof.errors import DecodeError

WIRE_VARINT = 0
WIRE_LEN = 2
_MAX_VARINT_BYTES = 10
_MAX_FIELD_NUMBER = (1 << 29) - 1  # protobuf's largest; 0 is never valid
_VARINT_LIMITS = np.array([1 << (7 * k) for k in range(1, 10)], dtype=np.uint64)


@dataclass(frozen=True)
class Varints:
    """A buffer split into varints: their values and the byte offset where each starts."""

    values: np.ndarray  # uint64
    padded: np.ndarray  # int64 byte offset where each starts, then nbytes (so index n is the end)
    nbytes: int

    @property
    def starts(self) -> np.ndarray:
        """The byte offset where each varint starts."""
        return self.padded[:-1]

    def index_of_byte(self, offsets: np.ndarray, what: str) -> np.ndarray:
        """Varint index starting at each byte offset (nbytes maps past the end); misaligned is corrupt."""
        idx = np.searchsorted(self.starts, offsets)
        at_end = offsets == self.nbytes
        ok = at_end | (self.padded[idx] == offsets)
        if not ok.all():
            raise DecodeError(f"{what}: a field boundary falls inside a varint (truncated or corrupt data)")
        return np.where(at_end, len(self.starts), idx)


def split_varints(buf: np.ndarray) -> Varints:
    """Split a uint8 buffer made only of varints."""
    if len(buf) == 0:
        return Varints(np.zeros(0, np.uint64), np.zeros(1, np.int64), 0)
    ends = np.flatnonzero(buf < 0x80)
    if len(ends) == 0 or ends[-1] != len(buf) - 1:
        raise DecodeError("truncated varint at the end of the data")
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    if lengths.max() > _MAX_VARINT_BYTES:
        raise DecodeError("varint longer than 10 bytes")
    # Most varints are one or two bytes: add the k-th byte only to those that have one.
    values = (buf[starts] & 0x7F).astype(np.uint64)
    longer = np.flatnonzero(lengths > 1)
    for k in range(1, _MAX_VARINT_BYTES):
        if not len(longer):
            break
        byte = (buf[starts[longer] + k] & 0x7F).astype(np.uint64)
        values[longer] |= byte << np.uint64(7 * k)
        longer = longer[lengths[longer] > k + 1]
    return Varints(values, np.append(starts, len(buf)).astype(np.int64), len(buf))

@dataclass(frozen=True)
class Fields:
    """Every field of a set of messages, in stream order.

    For a varint field `value` is the value and `start == end == -1`; for a length-delimited field
    `[start, end)` is the varint index range of its payload.
    """

    message: np.ndarray  # int64 index of the owning message
    number: np.ndarray  # int64 field number
    wire: np.ndarray  # int64 wire type
    value: np.ndarray  # uint64
    position: np.ndarray  # int64 varint index of the value (or payload start)
    start: np.ndarray
    end: np.ndarray

    def slice(self, lo: int, hi: int, first_message: int) -> Fields:
        """Fields `lo:hi`, their owners counted from `first_message` (the fields of a run of messages)."""
        return Fields(self.message[lo:hi] - first_message, self.number[lo:hi], self.wire[lo:hi],
                      self.value[lo:hi], self.position[lo:hi], self.start[lo:hi], self.end[lo:hi])

    def split(self, first_messages: np.ndarray) -> list[Fields]:
        """The fields of messages [first_messages[i], first_messages[i + 1]) for each i, owners counted
        from the first of each run (fields are in stream order, so their owners never decrease)."""
        cuts = np.searchsorted(self.message, first_messages).tolist()
        firsts = first_messages.tolist()
        return [self.slice(lo, hi, first) for lo, hi, first in zip(cuts[:-1], cuts[1:], firsts[:-1], strict=True)]


def walk_messages(v: Varints, first: np.ndarray, last: np.ndarray, what: str) -> Fields:
    """Read the fields of messages spanning varints [first[i], last[i])."""
    owner = np.flatnonzero(first < last)
    at, stop = first[owner].astype(np.int64), last[owner]
    rounds: list[tuple[np.ndarray, ...]] = []
    while len(owner):
        tag, value_at, after = _read_one_field(v, at, stop, what)
        rounds.append((owner, tag, value_at, after))
        more = after < stop
        if more.all():
            at = after
        else:
            owner, at, stop = owner[more], after[more], stop[more]
    if not rounds:
        return _no_fields()
    message, tag, position, after = (np.concatenate(c) for c in zip(*rounds, strict=True))
    order = np.argsort(position, kind="stable")
    message, tag, position, after = message[order], tag[order], position[order], after[order]
    wire = (tag & np.uint64(7)).astype(np.int64)
    is_len = wire == WIRE_LEN
    return Fields(message, (tag >> np.uint64(3)).astype(np.int64), wire, v.values[position], position,
                  np.where(is_len, position + 1, -1), np.where(is_len, after, -1))


def walk_scalar_messages(v: Varints, first: np.ndarray, last: np.ndarray, what: str) -> Fields:
    """`walk_messages` for messages whose fields are all varints, as pprof's functions, mappings, labels
    and lines are: there every other varint is a tag, so all their fields are read in a fixed number of
    numpy calls, not one round per field. Messages of any other shape (a length-delimited field, a tag
    without a value, a bad tag) are read by `walk_messages`, which names what is wrong."""
    sizes = last - first
    if (sizes & 1).any():
        return walk_messages(v, first, last, what)
    counts = sizes >> 1
    message = np.repeat(np.arange(len(first)), counts)
    tag_at = first[message] + 2 * (np.arange(len(message)) - (np.cumsum(counts) - counts)[message])
    tag = v.values[tag_at]
    if (((tag - _MIN_TAG) > _TAG_SPAN) | ((tag & np.uint64(7)) != 0)).any():
        return walk_messages(v, first, last, what)
    none = np.full(len(tag_at), -1, np.int64)
    return Fields(message, (tag >> np.uint64(3)).astype(np.int64), np.zeros(len(tag_at), np.int64),
                  v.values[tag_at + 1], tag_at + 1, none, none)


def _no_fields() -> Fields:
    empty = np.zeros(0, np.int64)
    return Fields(empty, empty, empty, np.zeros(0, np.uint64), empty, empty, empty)


# A tag is valid when its field number is in 1.._MAX_FIELD_NUMBER (tag - _MIN_TAG <= _TAG_SPAN, as unsigned) and
# its wire type is 0 or 2 (bits 0 and 2 clear).
_MIN_TAG, _MAX_TAG, _WIRE_BITS_OTHER = np.uint64(1 << 3), np.uint64(_MAX_FIELD_NUMBER << 3 | 7), np.uint64(5)
_TAG_SPAN = _MAX_TAG - _MIN_TAG


def _read_one_field(v: Varints, at: np.ndarray, stop: np.ndarray, what: str):
    """One field of each message whose next field starts at varint `at` (its end is `stop`): the tag, where
    the value is and where the field ends. Each round costs a fixed number of numpy calls whatever its size,
    so checks are fused and payload ends are only looked up in rounds that have a payload."""
    value_at = at + 1
    if (value_at >= stop).any():
        raise DecodeError(f"{what}: a field has no value (truncated message)")
    tag = v.values[at]
    if (((tag - _MIN_TAG) > _TAG_SPAN) | ((tag & _WIRE_BITS_OTHER) != 0)).any():
        _refuse_tag(tag, what)
    after = value_at + 1
    is_len = (tag & np.uint64(WIRE_LEN)) != 0
    if is_len.any():
        after[is_len] = _payload_end(v, after[is_len], v.values[value_at[is_len]], stop[is_len], what)
    return tag, value_at, after


def _refuse_tag(tag: np.ndarray, what: str) -> None:
    number, wire = (tag >> np.uint64(3)).astype(np.int64), (tag & np.uint64(7)).astype(np.int64)
    bad_number = (number < 1) | (number > _MAX_FIELD_NUMBER)
    if bad_number.any():
        raise DecodeError(f"{what}: field number {number[bad_number][0]} is outside 1..{_MAX_FIELD_NUMBER}")
    bad = (wire != WIRE_VARINT) & (wire != WIRE_LEN)
    raise DecodeError(f"{what}: field {number[bad][0]} has unsupported wire type {wire[bad][0]}")


def _payload_end(v: Varints, start: np.ndarray, length: np.ndarray, last: np.ndarray, what: str):
    end_byte = v.padded[start] + length.astype(np.int64)
    limit = v.padded[last]
    if (end_byte > limit).any() or (length > np.uint64(v.nbytes)).any():
        raise DecodeError(f"{what}: a length-delimited field runs past the end of its message")
    return v.index_of_byte(end_byte, what)


_ANY_WIRE = -1


@functools.lru_cache(maxsize=64)
def _expected_wires(varints: tuple[int, ...], messages: tuple[int, ...]) -> np.ndarray:
    """Wire type pprof gives field number i (index i), _ANY_WIRE for numbers it leaves free; the last
    entry stands for every larger number."""
    table = np.full(max((*varints, *messages, 0)) + 2, _ANY_WIRE, np.int64)
    table[list(varints)] = WIRE_VARINT
    table[list(messages)] = WIRE_LEN
    return table


def check_wire_types(f: Fields, what: str, varints: tuple[int, ...] = (), messages: tuple[int, ...] = ()) -> None:
    """Refuse a known field sent with another wire type than pprof's: a singular scalar (`varints`) as
    bytes, or a message (`messages`) as a varint. Reading past it would lose the value silently, and
    `go tool pprof` refuses such a profile ("type mismatch"). Repeated scalars may be packed or not."""
    table = _expected_wires(varints, messages)
    expected = table[np.minimum(f.number, len(table) - 1)]
    wrong = (expected != _ANY_WIRE) & (f.wire != expected)
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        raise DecodeError(f"{what}: field {f.number[i]} has wire type {f.wire[i]}, but pprof's field {f.number[i]} "
                          f"has wire type {expected[i]}")


def scalars(v: Varints, f: Fields, number: int) -> tuple[np.ndarray, np.ndarray]:
    """A repeated scalar field, packed or not: (owning message, value) in stream order."""
    pick = f.number == number
    plain = pick & (f.wire == WIRE_VARINT)
    packed = np.flatnonzero(pick & (f.wire == WIRE_LEN))
    counts = f.end[packed] - f.start[packed]
    positions = np.concatenate([f.position[plain], expand_ranges(f.start[packed], counts)])
    owners = np.concatenate([f.message[plain], np.repeat(f.message[packed], counts)])
    order = np.argsort(positions, kind="stable")
    return owners[order], v.values[positions[order]]


def singulars(f: Fields, count: int, n: int) -> np.ndarray:
    """Singular scalar fields 1..`count` of `n` messages as one array: row i is field i per message (last
    occurrence wins, absent is 0). One scatter for all of a table's fields, not one per field."""
    pick = (f.wire == WIRE_VARINT) & (f.number <= count)
    out = np.zeros((count + 1, n), np.uint64)
    out[f.number[pick], f.message[pick]] = f.value[pick]
    return out


def submessages(f: Fields, number: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A repeated message field: (owning message, first varint, end varint) in stream order."""
    pick = (f.number == number) & (f.wire == WIRE_LEN)
    return f.message[pick], f.start[pick], f.end[pick]


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
