"""pprof bytes written the way Go's runtime/pprof writes them, for tests of decoders.

Zero scalars are left out, repeated scalars with at most two elements are written unpacked (longer ones
packed), fields come in Go's order, and locations and functions are written just before the first
sample that uses them. Built from a reference `profile_pb2.Profile`.
"""

from collections.abc import Callable

from flamewatch.api.perftools.profiles import profile_pb2 as pb

U64 = (1 << 64) - 1


class GoWriter:
    """Protobuf written as Go's runtime/pprof `protobuf` type writes it."""

    def __init__(self) -> None:
        self.data = bytearray()

    def varint(self, x: int) -> None:
        x &= U64
        while x >= 0x80:
            self.data.append(x & 0x7F | 0x80)
            x >>= 7
        self.data.append(x)

    def scalar(self, tag: int, x: int) -> None:
        self.varint(tag << 3)
        self.varint(x)  # int64 values are written as their two's complement uint64

    def scalar_opt(self, tag: int, x: int) -> None:
        if x:
            self.scalar(tag, x)

    def repeated(self, tag: int, xs: list[int]) -> None:
        if len(xs) > 2:  # packed: one length-delimited field
            inner = GoWriter()
            for x in xs:
                inner.varint(x)
            self.field(tag, bytes(inner.data))
        else:  # unpacked: one tag per element
            for x in xs:
                self.scalar(tag, x)

    def field(self, tag: int, payload: bytes) -> None:
        self.varint(tag << 3 | 2)
        self.varint(len(payload))
        self.data += payload

    def message(self, tag: int, build: Callable[["GoWriter"], None]) -> None:
        inner = GoWriter()
        build(inner)
        self.field(tag, bytes(inner.data))


def go_bytes(ref: pb.Profile) -> bytes:
    """The reference profile written in Go's layout and field order."""
    w = GoWriter()
    w.scalar_opt(9, ref.time_nanos)
    for vt in ref.sample_type:
        w.message(1, lambda m, vt=vt: (m.scalar(1, vt.type), m.scalar(2, vt.unit)))
    w.scalar_opt(10, ref.duration_nanos)
    if ref.HasField("period_type"):
        w.message(11, lambda m: (m.scalar(1, ref.period_type.type), m.scalar(2, ref.period_type.unit)))
    w.scalar_opt(12, ref.period)
    locations = {loc.id: loc for loc in ref.location}
    functions = {fn.id: fn for fn in ref.function}
    for sample in ref.sample:  # Go emits a stack's new locations (and their new functions) before the sample
        for loc_id in sample.location_id:
            if loc_id in locations:
                _go_location(w, locations.pop(loc_id), functions)
        w.message(2, lambda m, s=sample: _go_sample(m, s))
    for loc in list(locations.values()):
        _go_location(w, loc, functions)
    for fn in list(functions.values()):
        w.message(5, lambda m, fn=fn: _go_function(m, fn))
    for mp in ref.mapping:
        w.message(3, lambda m, mp=mp: _go_mapping(m, mp))
    for s in ref.string_table:
        w.field(6, s.encode())
    w.repeated(13, list(ref.comment))
    for tag, value in ((7, ref.drop_frames), (8, ref.keep_frames), (14, ref.default_sample_type), (15, ref.doc_url)):
        w.scalar_opt(tag, value)
    return bytes(w.data)


def _go_sample(m: GoWriter, s: pb.Sample) -> None:
    m.repeated(2, list(s.value))
    m.repeated(1, list(s.location_id))
    for label in s.label:
        m.message(3, lambda lm, lb=label: [lm.scalar_opt(t, v) for t, v in enumerate(
            (lb.key, lb.str, lb.num, lb.num_unit), 1)])


def _go_location(w: GoWriter, loc: pb.Location, functions: dict) -> None:
    def build(m: GoWriter) -> None:
        m.scalar_opt(1, loc.id)
        m.scalar_opt(3, loc.address)
        for line in loc.line:
            m.message(4, lambda lm, ln=line: [lm.scalar_opt(t, v) for t, v in enumerate(
                (ln.function_id, ln.line, ln.column), 1)])
        m.scalar_opt(2, loc.mapping_id)  # Go writes the mapping after the lines
        m.scalar_opt(5, int(loc.is_folded))
    w.message(4, build)
    for line in loc.line:
        if line.function_id in functions:
            fn = functions.pop(line.function_id)
            w.message(5, lambda m, fn=fn: _go_function(m, fn))


def _go_function(m: GoWriter, fn: pb.Function) -> None:
    for tag, value in enumerate((fn.id, fn.name, fn.system_name, fn.filename, fn.start_line), 1):
        m.scalar_opt(tag, value)


def _go_mapping(m: GoWriter, mp: pb.Mapping) -> None:
    for tag, value in enumerate((mp.id, mp.memory_start, mp.memory_limit, mp.file_offset, mp.filename, mp.build_id,
                                 mp.has_functions, mp.has_filenames, mp.has_line_numbers, mp.has_inline_frames), 1):
        m.scalar_opt(tag, int(value))
