"""Go's own line table (`.gopclntab`), for Go binaries whose DWARF was stripped (`-ldflags=-w`).

The table holds, per function, its name, its entry address and pc-value tables that map every pc to
a file, a line and an inlining index; the inlining tree (FUNCDATA_InlTree, under the `go:func.*`
symbol) gives the functions inlined at a pc, as the Go runtime unwinds them. Only the functions that
the requested addresses fall in are decoded, each once, into arrays looked up with searchsorted; the
format read is Go 1.20's and later's (magic 0xfffffff1), the one Go still writes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from flamewatch.symbolizer.elf import Section, sections, symbol_address
from flamewatch.symbolizer.frames import Frame

_MAGIC_120 = 0xFFFFFFF1
_PCDATA_INL_TREE_INDEX = 2
_FUNCDATA_INL_TREE = 3
_FUNC_FIXED = 44  # bytes of a _func before its pcdata and funcdata offsets
_NO_DATA = 0xFFFFFFFF


@dataclass(frozen=True, eq=False)
class _Func:
    entry: int
    name: str
    file_pcs: tuple[np.ndarray, np.ndarray]  # (end pc of each run, value)
    line_pcs: tuple[np.ndarray, np.ndarray]
    inl_pcs: tuple[np.ndarray, np.ndarray] | None
    inl_tree: int | None  # file offset of the inline tree
    cu_offset: int


class GoLineTable:
    def __init__(self, data: bytes, pclntab: Section, text_addr: int, gofunc_offset: int | None):
        self._data = data
        self._base = pclntab.offset
        magic, _, _, self._min_lc, ptr = struct.unpack_from("<IBBBB", data, self._base)
        if magic != _MAGIC_120 or ptr != 8:
            raise ValueError(f"unsupported .gopclntab (magic {magic:#x}, pointer size {ptr})")
        fields = struct.unpack_from("<8Q", data, self._base + 8)
        nfunc, _, text_start, self._funcname, self._cu, self._filetab, self._pctab, self._pcln = fields
        self._text = text_start or text_addr
        self._gofunc = gofunc_offset
        functab = np.frombuffer(data, "<u4", count=2 * (nfunc + 1), offset=self._base + self._pcln)
        self._entries = functab[0::2].astype(np.uint64) + np.uint64(self._text)
        self._func_offsets = functab[1::2]
        self._cached = lru_cache(maxsize=65536)(self._func)

    def resolve(self, pcs: np.ndarray) -> list[list[Frame]]:
        """Frames of each pc (absolute), innermost inlined first; [] for a pc in no function."""
        pcs = np.asarray(pcs, np.uint64)
        index = np.searchsorted(self._entries, pcs, side="right") - 1
        valid = (index >= 0) & (index < len(self._entries) - 1)
        out: list[list[Frame]] = [[] for _ in range(len(pcs))]
        for i in np.flatnonzero(valid).tolist():  # one step per address; each function decoded once
            out[i] = self._frames(self._cached(int(index[i])), int(pcs[i]))
        return out

    def _frames(self, f: _Func, pc: int) -> list[Frame]:
        frames = []
        while f.inl_pcs is not None and f.inl_tree is not None:
            ix = _value_at(f.inl_pcs, pc)
            if ix < 0:
                break
            _, name_off, parent_pc, _ = struct.unpack_from("<IiiI", self._data, f.inl_tree + 16 * ix)
            name = self._string(self._funcname + name_off)
            frames.append(Frame(name, self._file(f, pc), _value_at(f.line_pcs, pc)))
            pc = f.entry + parent_pc
        frames.append(Frame(f.name, self._file(f, pc), _value_at(f.line_pcs, pc)))
        return frames

    def _file(self, f: _Func, pc: int) -> str:
        fileno = _value_at(f.file_pcs, pc)
        if fileno < 0:
            return ""
        off, = struct.unpack_from("<I", self._data, self._base + self._cu + 4 * (f.cu_offset + fileno))
        return self._string(self._filetab + off) if off != _NO_DATA else ""

    def _string(self, at: int) -> str:
        start = self._base + at
        return self._data[start:self._data.index(b"\0", start)].decode(errors="replace")

    def _func(self, index: int) -> _Func:
        at = self._base + self._pcln + int(self._func_offsets[index])
        entry_off, name_off, _, _, _, pcfile, pcln, npcdata, cu_offset, _ = struct.unpack_from("<IiiIIIIIIi",
                                                                                                  self._data, at)
        nfuncdata = self._data[at + _FUNC_FIXED - 1]
        pcdata = struct.unpack_from(f"<{npcdata}I", self._data, at + _FUNC_FIXED)
        funcdata = struct.unpack_from(f"<{nfuncdata}I", self._data, at + _FUNC_FIXED + 4 * npcdata)
        entry = self._text + entry_off
        inl_pcs, inl_tree = None, None
        if (npcdata > _PCDATA_INL_TREE_INDEX and pcdata[_PCDATA_INL_TREE_INDEX] and nfuncdata > _FUNCDATA_INL_TREE
                and funcdata[_FUNCDATA_INL_TREE] != _NO_DATA and self._gofunc is not None):
            inl_pcs = self._pcvalues(pcdata[_PCDATA_INL_TREE_INDEX], entry)
            inl_tree = self._gofunc + funcdata[_FUNCDATA_INL_TREE]
        return _Func(entry, self._string(self._funcname + name_off), self._pcvalues(pcfile, entry),
                     self._pcvalues(pcln, entry), inl_pcs, inl_tree, cu_offset)

    def _pcvalues(self, offset: int, entry: int) -> tuple[np.ndarray, np.ndarray]:
        """A pc-value table as (end pc of each run, its value): pairs of varints, value delta (zig-zag)
        then pc delta, ended by a zero value delta after the first pair."""
        data, at = self._data, self._base + self._pctab + offset
        ends, values = [], []
        pc, value, first = entry, -1, True
        while offset:
            uv, at = _varint(data, at)
            if uv == 0 and not first:
                break
            value += -((uv >> 1) + 1) if uv & 1 else uv >> 1
            delta, at = _varint(data, at)
            pc += delta * self._min_lc
            ends.append(pc)
            values.append(value)
            first = False
        return np.array(ends, np.uint64), np.array(values, np.int64)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        b = data[at]
        at += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, at
        shift += 7


def _value_at(table: tuple[np.ndarray, np.ndarray], pc: int) -> int:
    ends, values = table
    i = int(np.searchsorted(ends, np.uint64(pc), side="right"))
    return int(values[i]) if i < len(values) else -1


def go_line_table(data: bytes) -> GoLineTable | None:
    """The table of a Go ELF binary, None when the file has none (not Go, or not a format read here)."""
    found = sections(data)
    pclntab = found.get(".gopclntab")
    if pclntab is None or pclntab.offset + 8 > len(data):
        return None
    text = found.get(".text")
    gofunc = symbol_address(data, found, "go:func.*")
    gofunc_offset = _file_offset(found, gofunc) if gofunc is not None else None
    try:
        return GoLineTable(data, pclntab, text.addr if text else 0, gofunc_offset)
    except (ValueError, struct.error):
        return None


def _file_offset(found: dict[str, Section], addr: int) -> int | None:
    for s in found.values():
        if s.addr and s.addr <= addr < s.addr + s.size:
            return s.offset + addr - s.addr
    return None
