"""The object store as a local directory: key `a/b/c` is the file `<directory>/a/b/c`.

`put` is durable and atomic: the bytes go to a temp file in the target folder, which is fsynced,
renamed over the key and the folder fsynced, so a crash leaves the old object or the new one and a
reader never sees half a block. Temp files start with `.tmp-`; listings skip them and keys may not
use that name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from flamewatch.storage.errors import ObjectNotFound, StorageError, StorageFull
from flamewatch.storage.objstore import FilesystemConfig, ObjectInfo, check_key, check_prefix

_TEMP_PREFIX = ".tmp-"
_MKDIR_ATTEMPTS = 3  # a concurrent delete may remove an empty folder we just created


class FilesystemObjectStore:
    """An `ObjectStore` in a local directory, created if missing."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self._root = Path(directory).resolve()
        with _storage_errors(f"cannot create object directory {self._root}"):
            self._root.mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_config(cls, config: FilesystemConfig) -> FilesystemObjectStore:
        return cls(config.directory)

    def put(self, key: str, data: bytes) -> None:
        self._put(key, lambda file: file.write(data))

    def put_file(self, key: str, file: BinaryIO, size: int) -> None:
        self._put(key, lambda out: _copy(file, out, size))

    def _put(self, key: str, write: Callable[[BinaryIO], object]) -> None:
        path = self._path(key)
        with _storage_errors(f"cannot write object {key}", full=f"object directory {self._root} is full"):
            fd, temp = self._create_temp(path)
            try:
                _write_all(fd, write)
                os.replace(temp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
            _fsync_dir(path.parent)

    def get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise ObjectNotFound(key) from exc
        except OSError as exc:
            raise StorageError(f"cannot read object {key}: {exc}") from exc

    def get_range(self, key: str, start: int, length: int) -> bytes:
        return self.get_ranges(key, [(start, length)])[0]

    def get_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        with self._open(key) as file:
            return [os.pread(file.fileno(), max(length, 0), start) for start, length in ranges]

    def get_tail(self, key: str, length: int) -> tuple[bytes, int]:
        with self._open(key) as file:
            size = os.fstat(file.fileno()).st_size
            start = max(0, size - length)
            return os.pread(file.fileno(), size - start, start), size

    @contextlib.contextmanager
    def _open(self, key: str) -> Iterator[BinaryIO]:
        try:
            file = self._path(key).open("rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise ObjectNotFound(key) from exc
        except OSError as exc:
            raise StorageError(f"cannot read object {key}: {exc}") from exc
        with file, _storage_errors(f"cannot read object {key}"):
            yield file

    def delete(self, key: str) -> None:
        path = self._path(key)
        with _storage_errors(f"cannot delete object {key}"):
            path.unlink(missing_ok=True)
        self._prune_empty_parents(path.parent)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        folder, _, name_prefix = check_prefix(prefix).rpartition("/")
        with _storage_errors(f"cannot list objects under {prefix!r}"):
            yield from self._walk(self._root / folder, _as_base(folder), name_prefix)

    def list_prefixes(self, prefix: str) -> list[str]:
        folder, _, name_prefix = check_prefix(prefix).rpartition("/")
        with _storage_errors(f"cannot list prefixes under {prefix!r}"):
            entries = _scandir(self._root / folder)
        names = (e.name for e in entries if e.name.startswith(name_prefix) and e.is_dir())
        return sorted(f"{_as_base(folder)}{name}/" for name in names)

    def ping(self) -> None:
        if not self._root.is_dir():
            raise StorageError(f"object directory {self._root} does not exist")
        if not os.access(self._root, os.R_OK | os.W_OK | os.X_OK):
            raise StorageError(f"object directory {self._root} is not readable and writable by this process")

    def close(self) -> None:
        """Nothing to release; present for the protocol."""

    def _path(self, key: str) -> Path:
        check_key(key)
        if any(part.startswith(_TEMP_PREFIX) for part in key.split("/")):
            raise StorageError(f"invalid object key {key!r}: {_TEMP_PREFIX!r} names are reserved")
        return self._root / key

    def _create_temp(self, path: Path) -> tuple[int, str]:
        """Create the key's folders and an open temp file beside the key."""
        for _ in range(_MKDIR_ATTEMPTS - 1):
            self._make_parents(path.parent)
            with contextlib.suppress(FileNotFoundError):
                return _mkstemp(path.parent)
        self._make_parents(path.parent)
        return _mkstemp(path.parent)

    def _make_parents(self, folder: Path) -> None:
        """mkdir -p, fsyncing each folder that gains an entry so the new path survives a crash."""
        missing = []
        while not folder.is_dir():
            missing.append(folder)
            folder = folder.parent
        for new in reversed(missing):
            new.mkdir(exist_ok=True)
            _fsync_dir(new.parent)

    def _prune_empty_parents(self, folder: Path) -> None:
        """Remove folders left empty by a delete, so listings match an S3 bucket's."""
        while folder != self._root:
            try:
                folder.rmdir()
            except OSError:
                return  # not empty, or already gone
            folder = folder.parent

    def _walk(self, folder: Path, base: str, name_prefix: str = "") -> Iterator[ObjectInfo]:
        """Objects below `folder` in key order (a folder `d` sorts as `d/`)."""
        entries = [e for e in _scandir(folder) if e.name.startswith(name_prefix)]
        entries.sort(key=lambda e: e.name + "/" if e.is_dir() else e.name)
        for entry in entries:
            if entry.is_dir():
                yield from self._walk(Path(entry.path), f"{base}{entry.name}/")
            elif not entry.name.startswith(_TEMP_PREFIX):
                info = _info(entry, f"{base}{entry.name}")
                if info is not None:
                    yield info


def _as_base(folder: str) -> str:
    return f"{folder}/" if folder else ""


def _scandir(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _info(entry: os.DirEntry[str], key: str) -> ObjectInfo | None:
    """The object's info, or None if a concurrent delete removed it since the folder was read."""
    try:
        stat = entry.stat()
    except FileNotFoundError:
        return None
    return ObjectInfo(key=key, size=stat.st_size, last_modified_ns=stat.st_mtime_ns)


def _mkstemp(folder: Path) -> tuple[int, str]:
    fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=folder)
    os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide blocks from other local readers
    return fd, temp


def _write_all(fd: int, write: Callable[[BinaryIO], object]) -> None:
    with open(fd, "wb", closefd=True) as file:
        write(file)
        file.flush()
        os.fsync(file.fileno())


def _copy(source: BinaryIO, out: BinaryIO, size: int) -> None:
    """`size` bytes from `source` to `out`, a MiB at a time."""
    left = size
    while left > 0:
        piece = source.read(min(left, 1 << 20))
        if not piece:
            raise StorageError(f"the file to store ended {left} bytes short of its {size}")
        out.write(piece)
        left -= len(piece)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _storage_errors(what: str, full: str = "") -> Iterator[None]:
    """OSError → StorageError naming `what`; out of space (or quota) → StorageFull, led by `full`."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StorageFull(f"{full or 'no space left'}: {what}: {exc.strerror}") from exc
        raise StorageError(f"{what}: {exc}") from exc
