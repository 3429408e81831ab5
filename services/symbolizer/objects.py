"""One object file opened for symbolization: its symcache (symbolic's compact index of ELF symbol
tables and DWARF line tables with inlined functions), its load segments and, for Go binaries, the
Go line table.

A batch of file offsets is turned into addresses relative to the load address with numpy, made
unique and sorted, and each distinct address is looked up once in the symcache (native code, one
call per address); Go binaries without DWARF lines are answered from `.gopclntab` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from flamewatch.symbolizer.elf import Segments
from flamewatch.symbolizer.errors import DebuginfoError
from flamewatch.symbolizer.frames import Frame
from flamewatch.symbolizer.gopclntab import GoLineTable, go_line_table

if TYPE_CHECKING:
    from symbolic.symcache import SymCache

# symbolic is imported where it is first used, not here: a process that never symbolizes (most starts
# of `flamewatch all`) does not pay for its import (tests/unit/test_lazy_imports.py keeps it so).


@dataclass(frozen=True, eq=False)
class ObjectFile:
    symcache: SymCache
    segments: Segments
    go: GoLineTable | None

    def resolve(self, file_offsets: np.ndarray) -> list[list[Frame]]:
        """Frames per file offset, innermost inlined first ([] where nothing covers it)."""
        # Looked up as they are, as pprof does: a profile holds the pc of the call instruction for callers
        # (Go's runtime writes Frame.PC), so no return-address adjustment is made here.
        relative = self.segments.relative_addresses(np.asarray(file_offsets, np.uint64))
        unique, inverse = np.unique(relative, return_inverse=True)
        looked_up = self._lookup(unique)
        return [looked_up[i] for i in inverse.reshape(-1).tolist()]

    def _lookup(self, addresses: np.ndarray) -> list[list[Frame]]:
        out = [[] if a < 0 else _frames(self.symcache.lookup(int(a))) for a in addresses.tolist()]
        if self.go is None:
            return out
        lineless = [i for i, frames in enumerate(out) if addresses[i] >= 0 and not any(f.line for f in frames)]
        if lineless:
            pcs = addresses[lineless].astype(np.uint64) + np.uint64(self.segments.load_address)
            for i, frames in zip(lineless, self.go.resolve(pcs)):
                out[i] = [Frame(f.function, f.file, max(f.line, 0)) for f in frames] or out[i]
        return out


def _frames(found) -> list[Frame]:
    return [Frame(s.symbol, s.full_path or "", s.line) for s in found]


def build_symcache(data: bytes, name: str) -> bytes:
    """The symcache of an ELF file, serialised (stored beside the file so it is built once)."""
    from symbolic import SymbolicError
    from symbolic.debuginfo import Archive

    try:
        archive = Archive.from_bytes(data)
        obj = next(archive.iter_objects())
        cache = obj.make_symcache()
    except (SymbolicError, StopIteration) as exc:
        raise DebuginfoError(f"{name}: cannot read its symbols or debug information: {exc}") from exc
    return cache.open_stream().read()


def features(data: bytes) -> tuple[str, list[str]]:
    """(kind, features) as symbolic reads them, e.g. ("exe", ["debug", "symtab", "unwind"])."""
    from symbolic import SymbolicError
    from symbolic.debuginfo import Archive

    try:
        obj = next(Archive.from_bytes(data).iter_objects())
    except (SymbolicError, StopIteration) as exc:
        raise DebuginfoError(f"cannot read the file's symbols or debug information: {exc}") from exc
    return obj.kind, sorted(obj.features)


def open_object(debuginfo: bytes, symcache: bytes, segments: Segments) -> ObjectFile:
    from symbolic.symcache import SymCache

    return ObjectFile(SymCache.from_bytes(symcache), segments, go_line_table(debuginfo))
