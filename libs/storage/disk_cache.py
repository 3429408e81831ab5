"""A bounded on-disk cache of objects in front of a slower store (S3): blocks fetched once are read
from local disk afterwards, also by a restarted querier.

Objects never change once written (a block has a new key when rewritten), so a cached copy is always
valid and needs no revalidation. The cache keeps at most `max_bytes`: the least recently read objects
are removed first. Files are written to a temporary name and renamed, so a crash leaves no torn
object; leftovers of a crash are removed when the cache opens.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from flamewatch.storage.errors import StorageError

log = logging.getLogger(__name__)

_PARTIAL = ".partial"


class Source(Protocol):
    def get(self, key: str) -> bytes: ...


class DiskCache:
    """`get(key)` from `directory` if cached there, else from `source` (and then cached)."""

    def __init__(self, source: Source, directory: str | Path, max_bytes: int):
        self._source = source
        self._dir = Path(directory)
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._files: OrderedDict[str, int] = OrderedDict()  # file name -> size, least recently read first
        self._bytes = 0
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
            self._load()
        except OSError as exc:
            raise StorageError(f"cannot use {self._dir} as the block cache: {exc.strerror or exc}") from exc

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, key: str) -> bytes:
        parts, _ = self._parts(key, lambda size: [(0, size)])
        return parts[0]

    def get_range(self, key: str, start: int, length: int) -> bytes:
        return self.get_ranges(key, [(start, length)])[0]

    def get_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Ranges of the object, which is fetched whole into the cache first if it is not there: the disk
        holds whole objects, so a query after a restart reads every range from local disk."""
        return self._parts(key, lambda size: ranges)[0]

    def get_tail(self, key: str, length: int) -> tuple[bytes, int]:
        parts, size = self._parts(key, lambda size: [(max(0, size - length), length)])
        return parts[0], size

    def _parts(self, key: str, where: Callable[[int], list[tuple[int, int]]]) -> tuple[list[bytes], int]:
        """The bytes at each (start, length) of `where(size)` of the cached object, or of the object fetched
        from the source and cached; and the object's size."""
        name = _file_name(key)
        got = self._read(name, where)
        if got is not None:
            return got
        data = self._source.get(key)
        self._write(name, data)
        return [data[start:start + max(length, 0)] for start, length in where(len(data))], len(data)

    def _load(self) -> None:
        entries = []
        for path in self._dir.iterdir():
            if path.name.endswith(_PARTIAL):
                path.unlink(missing_ok=True)  # a write a crash interrupted
            elif path.is_file():
                stat = path.stat()
                entries.append((stat.st_mtime_ns, path.name, stat.st_size))
        for _, name, size in sorted(entries):
            self._files[name] = size
            self._bytes += size
        self._evict()

    def _read(self, name: str, where: Callable[[int], list[tuple[int, int]]]) -> tuple[list[bytes], int] | None:
        with self._lock:
            if name not in self._files:
                return None
            self._files.move_to_end(name)
        try:
            with open(self._dir / name, "rb") as file:
                size = os.fstat(file.fileno()).st_size
                parts = [os.pread(file.fileno(), max(0, min(length, size - start)), start)
                         for start, length in where(size)]
        except OSError:  # evicted by another thread, or the disk failed: fetch it again
            return None
        os.utime(self._dir / name)  # recency survives a restart
        return parts, size

    def _write(self, name: str, data: bytes) -> None:
        if len(data) > self._max_bytes:
            return
        partial = self._dir / f"{name}.{threading.get_ident()}{_PARTIAL}"
        try:
            partial.write_bytes(data)
            os.replace(partial, self._dir / name)
        except OSError as exc:  # a full or failing cache disk must not fail the query
            partial.unlink(missing_ok=True)
            log.warning("block cache: cannot write %s: %s", self._dir / name, exc.strerror or exc)
            return
        with self._lock:
            self._bytes += len(data) - self._files.pop(name, 0)
            self._files[name] = len(data)
            self._evict()

    def _evict(self) -> None:
        while self._bytes > self._max_bytes and self._files:
            name, size = self._files.popitem(last=False)
            self._bytes -= size
            (self._dir / name).unlink(missing_ok=True)


def _file_name(key: str) -> str:
    """A flat, safe file name for any key (keys hold slashes and tenant names)."""
    return hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
