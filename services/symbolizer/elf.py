"""The few ELF facts the symbolizer needs, read from the headers alone: the GNU build ID, the loadable
segments (to turn a file offset into a virtual address) and the object's load address.

A profile locates a frame by the file offset of its address (pprof's mapping start, limit and offset);
the debug tables are keyed by virtual address relative to the load address (the first PT_LOAD
segment's address, 0 for PIE executables and shared libraries, 0x400000 for a classic executable).
Separate `.debug` files made by `objcopy --only-keep-debug` keep the program headers of their
executable, so the same translation works on them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from flamewatch.symbolizer.errors import NoBuildId, NotElf, TruncatedElf

_MAGIC = b"\x7fELF"
_PT_LOAD, _PT_NOTE = 1, 4
_SHT_NOTE = 7
_NT_GNU_BUILD_ID = 3
_ET_NAMES = {1: "relocatable", 2: "executable", 3: "shared object or PIE executable", 4: "core dump"}


@dataclass(frozen=True, eq=False)
class Segments:
    """The PT_LOAD segments: file offset, virtual address and file size of each, in file order."""

    offset: np.ndarray  # uint64
    vaddr: np.ndarray  # uint64
    filesz: np.ndarray  # uint64
    memsz: np.ndarray  # uint64

    @property
    def load_address(self) -> int:
        return int(self.vaddr[0]) if len(self.vaddr) else 0

    def relative_addresses(self, file_offsets: np.ndarray) -> np.ndarray:
        """Per file offset, its address relative to the load address (int64; -1 outside every segment)."""
        offsets = np.asarray(file_offsets, np.uint64)
        out = np.full(len(offsets), -1, np.int64)
        if not len(self.offset):
            return out
        order = np.argsort(self.offset, kind="stable")
        seg = order[np.maximum(np.searchsorted(self.offset[order], offsets, side="right") - 1, 0)]
        inside = (offsets >= self.offset[seg]) & (offsets < self.offset[seg] + np.maximum(self.filesz[seg], 1))
        vaddr = offsets[inside] - self.offset[seg[inside]] + self.vaddr[seg[inside]]
        out[inside] = (vaddr - np.uint64(self.load_address)).astype(np.int64)
        return out

    def assumed_offsets(self) -> Segments:
        """For a `.debug` file, whose segments keep no file contents: the usual linker layout, each
        segment at file offset (address - load address), as GNU ld and lld lay out code."""
        return Segments(self.vaddr - np.uint64(self.load_address), self.vaddr, self.memsz, self.memsz)


@dataclass(frozen=True, eq=False)
class ElfInfo:
    build_id: str  # lower-case hex
    kind: str
    segments: Segments


@dataclass(frozen=True)
class _Layout:
    """Where the header fields live for one ELF class and byte order."""

    endian: str
    is64: bool

    @property
    def word(self) -> str:
        return "Q" if self.is64 else "I"


def read_elf(data: bytes, name: str = "file") -> ElfInfo:
    """Build ID, kind and loadable segments of an ELF file; clear errors for anything else."""
    layout = _layout(data, name)
    e_type = _unpack(data, layout.endian + "H", 16, name, "ELF header")[0]
    segments, notes = _program_headers(data, layout, name)
    build_id = _build_id(data, layout, notes, name)
    return ElfInfo(build_id, _ET_NAMES.get(e_type, f"type {e_type}"), segments)


def _layout(data: bytes, name: str) -> _Layout:
    if data[:4] != _MAGIC:
        raise NotElf(f"{name} is not an ELF file (it starts with {data[:4]!r}, not {_MAGIC!r})")
    if len(data) < 52:
        raise TruncatedElf(f"{name} is a truncated ELF file: {len(data)} bytes, shorter than an ELF header")
    if data[4] not in (1, 2) or data[5] not in (1, 2):
        raise NotElf(f"{name} has an unknown ELF class {data[4]} or byte order {data[5]}")
    return _Layout("<" if data[5] == 1 else ">", data[4] == 2)


def _unpack(data: bytes, fmt: str, at: int, name: str, what: str) -> tuple:
    end = at + struct.calcsize(fmt)
    if at < 0 or end > len(data):
        raise TruncatedElf(f"{name} is a truncated ELF file: its {what} at byte {at} ends at {end}, "
                           f"past the file's {len(data)} bytes")
    return struct.unpack_from(fmt, data, at)


def _program_headers(data: bytes, layout: _Layout, name: str) -> tuple[Segments, list[tuple[int, int]]]:
    """The PT_LOAD segments and the (offset, size) of each PT_NOTE."""
    e = layout.endian
    if layout.is64:
        phoff, = _unpack(data, e + "Q", 32, name, "ELF header")
        phentsize, phnum = _unpack(data, e + "HH", 54, name, "ELF header")
        fmt, fields = e + "IIQQQQQQ", (0, 2, 3, 5, 6)  # type, flags, offset, vaddr, paddr, filesz, memsz, align
    else:
        phoff, = _unpack(data, e + "I", 28, name, "ELF header")
        phentsize, phnum = _unpack(data, e + "HH", 42, name, "ELF header")
        fmt, fields = e + "IIIIIIII", (0, 1, 2, 4, 5)  # type, offset, vaddr, paddr, filesz, memsz, flags, align
    loads, notes = [], []
    for i in range(phnum):  # a handful of headers, never per address
        row = _unpack(data, fmt, phoff + i * phentsize, name, f"program header {i}")
        kind, offset, vaddr, filesz, memsz = (row[f] for f in fields)
        if kind == _PT_LOAD:
            loads.append((offset, vaddr, filesz, memsz))
        elif kind == _PT_NOTE:
            notes.append((offset, filesz))
    table = np.array(loads, np.uint64).reshape(-1, 4)
    return Segments(table[:, 0], table[:, 1], table[:, 2], table[:, 3]), notes


def _build_id(data: bytes, layout: _Layout, notes: list[tuple[int, int]], name: str) -> str:
    """The GNU build-id note, looked for in PT_NOTE segments and then in SHT_NOTE sections (a separate
    .debug file's note segment may point at bytes objcopy dropped)."""
    for offset, size in notes + _note_sections(data, layout, name):
        found = _find_build_id(data, layout.endian, offset, size, name)
        if found:
            return found
    raise NoBuildId(f"{name} has no GNU build ID note (link with -Wl,--build-id; Go: -ldflags=-B=gobuildid)")


def _note_sections(data: bytes, layout: _Layout, name: str) -> list[tuple[int, int]]:
    e = layout.endian
    if layout.is64:
        shoff, = _unpack(data, e + "Q", 40, name, "ELF header")
        shentsize, shnum = _unpack(data, e + "HH", 58, name, "ELF header")
        fmt, fields = e + "IIQQQQIIQQ", (1, 4, 5)  # name, type, flags, addr, offset, size, ...
    else:
        shoff, = _unpack(data, e + "I", 32, name, "ELF header")
        shentsize, shnum = _unpack(data, e + "HH", 46, name, "ELF header")
        fmt, fields = e + "IIIIIIIIII", (1, 4, 5)
    out = []
    for i in range(shnum if shoff else 0):
        kind, offset, size = (_unpack(data, fmt, shoff + i * shentsize, name, f"section header {i}")[f]
                              for f in fields)
        if kind == _SHT_NOTE:
            out.append((offset, size))
    return out


def _find_build_id(data: bytes, endian: str, offset: int, size: int, name: str) -> str | None:
    at, end = offset, offset + size
    if end > len(data):
        return None  # a note segment whose bytes a .debug file left out; the sections are tried next
    while at + 12 <= end:
        namesz, descsz, kind = _unpack(data, endian + "III", at, name, "note header")
        name_at = at + 12
        desc_at = name_at + (namesz + 3) // 4 * 4
        if kind == _NT_GNU_BUILD_ID and data[name_at:name_at + namesz].rstrip(b"\0") == b"GNU":
            if desc_at + descsz > len(data):
                raise TruncatedElf(f"{name} is a truncated ELF file: its build ID note ends past the file")
            return data[desc_at:desc_at + descsz].hex()
        at = desc_at + (descsz + 3) // 4 * 4
    return None


@dataclass(frozen=True)
class Section:
    addr: int
    offset: int
    size: int


def sections(data: bytes, name: str = "file") -> dict[str, Section]:
    """Every section by name (address, file offset, size), from the section headers."""
    layout = _layout(data, name)
    e = layout.endian
    if layout.is64:
        shoff, = _unpack(data, e + "Q", 40, name, "ELF header")
        shentsize, shnum, shstrndx = _unpack(data, e + "HHH", 58, name, "ELF header")
        fmt, fields = e + "IIQQQQIIQQ", (0, 3, 4, 5)
    else:
        shoff, = _unpack(data, e + "I", 32, name, "ELF header")
        shentsize, shnum, shstrndx = _unpack(data, e + "HHH", 46, name, "ELF header")
        fmt, fields = e + "IIIIIIIIII", (0, 3, 4, 5)
    rows = [[_unpack(data, fmt, shoff + i * shentsize, name, f"section header {i}")[f] for f in fields]
            for i in range(shnum if shoff else 0)]
    if not rows or shstrndx >= len(rows):
        return {}
    names_at = rows[shstrndx][2]
    out = {}
    for name_off, addr, offset, size in rows:
        at = names_at + name_off
        out[data[at:data.index(b"\0", at)].decode(errors="replace")] = Section(addr, offset, size)
    return out


def symbol_address(data: bytes, found: dict[str, Section], symbol: str) -> int | None:
    """The value of one symbol of .symtab (64-bit little-endian files), None when absent."""
    symtab, strtab = found.get(".symtab"), found.get(".strtab")
    if symtab is None or strtab is None or data[4] != 2 or data[5] != 1:
        return None
    names = data[strtab.offset:strtab.offset + strtab.size]
    at = names.find(b"\0" + symbol.encode() + b"\0")
    if at < 0:
        return None
    table = np.frombuffer(data, np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"),
                                          ("value", "<u8"), ("size", "<u8")]),
                          count=symtab.size // 24, offset=symtab.offset)
    hit = np.flatnonzero(table["name"] == at + 1)
    return int(table["value"][hit[0]]) if len(hit) else None
