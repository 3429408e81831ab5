"""An object read in the byte ranges its reader asks for: a query that takes a block's pre-merged trees
fetches its footer, symbols, trees and profile columns, not its profiles' entries.

A compacted hour block of a 100-series fleet is 1.26 MB, of which the profiles' entries (nodes, label
sets, values) are 1.1 MB; a query over the block's trees needs 0.25 MB of it. Fetched whole, a week of
such blocks took 3-4 times `flamewatch all`'s 256 MiB cache, and every warm query of the week fetched and
parsed them all again (1.6 s where 0.1 s answer it when the blocks fit).

The object is a buffer of its size in an anonymous memory map, whose pages take memory only once
written, holding the ranges fetched so far (an object that came whole with its tail, a flush block, is
kept as it came). The Parquet reader reads it as memory, natively: through a Python file object it called
back into Python for every read, and blocks read in parallel threads waited on each other for the
interpreter. So the reader says first which ranges a read takes (`fetch`): the footer's, each column
chunk's. The object opens with its last `TAIL_BYTES` (one request, which also gives its size), where the
footer is. Ranges asked for together are fetched in one call of the store, in as few requests as their
gaps allow: gaps of up to 8 KiB from a local file (read through one open file), of up to 1 MiB from S3,
where a request's round trip costs what a megabyte does (the bytes of a gap are dropped, not kept). A
range fetched stays, since a block is immutable, and entries a query decoded and let go of are decoded
again without a fetch. A local file is not mapped in place: a map holds an open file descriptor, and a
cache of a few thousand blocks would reach the process's limit on them.

A block is read after it was opened only while the index lists it, or by a query that began before
compaction retired it, and a retired block's object is deleted 10 minutes later (`retired_grace_s`, longer
than any query): a range a query asks for is there. A store that fails meanwhile fails that read with its
own error (`StorageUnavailable`), as a fetch of the whole block would have.
"""

from __future__ import annotations

import bisect
import mmap
import threading
from collections.abc import Iterable
from typing import Protocol

import pyarrow as pa

from flamewatch.storage.errors import StorageError

# A Parquet footer and, in a compacted block, the trees row group before it, in the request that opens it
TAIL_BYTES = 64 * 1024
# Ranges asked for together whose gap is at most this are fetched in one request (as pyarrow coalesces
# reads), unless the store says otherwise (`range_hole_bytes`: S3, where a request costs what a megabyte does)
HOLE_BYTES = 8 * 1024
_PAGE = mmap.PAGESIZE


class RangeSource(Protocol):
    """What reading an object in ranges needs from a store (see `objstore.ObjectStore`)."""

    def get_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]: ...

    def get_tail(self, key: str, length: int) -> tuple[bytes, int]: ...


class RangedObject:
    """One object of `source`, held where fetched; `ObjectNotFound` at open if the object is missing."""

    def __init__(self, source: RangeSource, key: str, tail: int = TAIL_BYTES):
        self.key = key
        self._source = source
        self._held: list[tuple[int, int]] = []  # [start, end) ranges fetched: sorted, apart
        self._lock = threading.Lock()
        # A store whose requests cost more (S3) sends up to `range_open_bytes` at open, whole blocks mostly:
        # the reader's first fetches are served from it (`close_window`), and only what they took is kept
        opening = max(tail, getattr(source, "range_open_bytes", tail))
        data, self.size = source.get_tail(key, opening)
        self.fetches = 1
        if self.size <= tail:
            # The whole object came with its tail (a flush block): kept as it came, not in a map of its own,
            # of which a process may have some 65,000 (vm.max_map_count) while a cache holds thousands of these
            self._map: bytes | mmap.mmap = data
            self._held = [(0, self.size)]
            self._window: tuple[int, bytes] | None = None
        else:
            self._map = mmap.mmap(-1, self.size)
            self._window = (self.size - len(data), data)
            self._put(self.size - min(tail, len(data)), data[len(data) - min(tail, len(data)):])
        self.buffer = pa.py_buffer(self._map)

    def close_window(self) -> None:
        """Drop what came at open beyond the tail and was not fetched since (`range_open_bytes`)."""
        self._window = None

    @property
    def held_bytes(self) -> int:
        """Memory the fetched ranges take: the pages of the map they were written to."""
        if isinstance(self._map, bytes):
            return self.size
        with self._lock:
            return sum(-(-end // _PAGE) * _PAGE - start // _PAGE * _PAGE for start, end in self._held)

    def read(self, start: int, length: int) -> bytes:
        """`length` bytes from `start`, fetched first unless held."""
        self.fetch([(start, length)])
        return self._map[start:min(start + length, self.size)]

    def fetch(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Fetch the (start, length) ranges not held yet and keep them: in one call of the store, one
        request for each run of ranges whose gaps are at most the store's `range_hole_bytes` (the bytes
        of a gap are fetched with them and dropped)."""
        hole = getattr(self._source, "range_hole_bytes", HOLE_BYTES)
        wanted = sorted((max(0, s), min(s + n, self.size)) for s, n in ranges if n > 0 and s < self.size)
        missing = [gap for start, end in wanted for gap in self._missing(start, end)]
        requests: list[list[tuple[int, int]]] = []  # the missing parts each request brings
        for start, end in missing:
            if requests and start - requests[-1][-1][1] <= hole:
                requests[-1].append((start, end))
            else:
                requests.append([(start, end)])
        if not requests:
            return
        spans = [(parts[0][0], max(end for _, end in parts)) for parts in requests]
        window = self._window
        if window is not None and all(window[0] <= start for start, _ in spans):  # it came at open
            got = [window[1][start - window[0]:end - window[0]] for start, end in spans]
        else:
            got = self._source.get_ranges(self.key, [(start, end - start) for start, end in spans])
            self.fetches += len(spans)
        for (first, end), parts, data in zip(spans, requests, got, strict=True):
            if len(data) != end - first:
                raise StorageError(f"object {self.key}: asked for {end - first} bytes at {first} of {self.size}, "
                                   f"got {len(data)} (was it replaced while being read?)")
            for start, stop in parts:
                self._put(start, data[start - first:stop - first])

    def _missing(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of [start, end) not held."""
        with self._lock:
            gaps, at = [], start
            for held_start, held_end in self._held[max(0, bisect.bisect_right(self._held, (start,)) - 1):]:
                if held_start >= end:
                    break
                if held_start > at:
                    gaps.append((at, held_start))
                at = max(at, held_end)
            if at < end:
                gaps.append((at, end))
            return gaps

    def _put(self, start: int, data: bytes) -> None:
        end = start + len(data)
        with self._lock:
            self._map[start:end] = data  # type: ignore[index]
            held = self._held
            i = bisect.bisect_left(held, (start,))
            if i and held[i - 1][1] >= start:  # touches the range before: join it
                i -= 1
                start = held[i][0]
            j = i
            while j < len(held) and held[j][0] <= end:
                end = max(end, held[j][1])
                j += 1
            held[i:j] = [(start, end)]
