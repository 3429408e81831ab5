"""The object store: one protocol, its configs, and the one list of built-in backends.

Blocks and debuginfo are written once under a key and read back whole or, by a query, in the byte
ranges of the columns it takes, so the interface is a flat key → bytes map with S3 semantics: keys are
`/`-separated, `list` is recursive and ordered by key, `list_prefixes` goes one level down (like an S3
listing with delimiter "/").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

from flamewatch.storage.errors import StorageConfigError, StorageError


@dataclass(frozen=True)
class ObjectInfo:
    """One object as listed: its key (without any store prefix), size in bytes, and mtime in ns."""

    key: str
    size: int
    last_modified_ns: int


@dataclass(frozen=True)
class S3Config:
    """An S3-compatible bucket; `prefix` puts every key under a folder of a shared bucket."""

    bucket: str
    endpoint: str  # host:port, no scheme
    access_key: str
    secret_key: str = field(repr=False)  # never in logs
    region: str | None = None
    insecure: bool = False  # plain HTTP
    prefix: str = ""


@dataclass(frozen=True)
class FilesystemConfig:
    """A local directory (the embedded default)."""

    directory: str


class ObjectStore(Protocol):
    """What Flamewatch needs from an object store. Every method may raise `StorageError`."""

    def put(self, key: str, data: bytes) -> None:
        """Store `data` under `key`, replacing any object; atomic: readers see all of it or none."""

    def put_file(self, key: str, file: BinaryIO, size: int) -> None:
        """`put` the `size` bytes `file` holds from its position, read a piece at a time: a compacted
        block need not be in memory whole to be stored."""

    def get(self, key: str) -> bytes:
        """The object's bytes; `ObjectNotFound` if there is none."""

    def get_range(self, key: str, start: int, length: int) -> bytes:
        """`length` bytes of the object from `start` (fewer only past its end); `ObjectNotFound` if
        there is none. A query reads a block's columns this way (`ranged.RangedObject`)."""

    def get_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        """`get_range` of each (start, length), in one call: the filesystem store reads them through one open
        file, S3 asks for each."""

    def get_tail(self, key: str, length: int) -> tuple[bytes, int]:
        """The object's last `length` bytes (all of it if shorter) and its size, in one request."""

    def delete(self, key: str) -> None:
        """Remove the object; deleting a missing key is not an error."""

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Every object whose key starts with `prefix`, recursively, in key order."""

    def list_prefixes(self, prefix: str) -> list[str]:
        """The distinct `<prefix><name>/` folders one level below `prefix`, sorted."""

    def ping(self) -> None:
        """Raise `StorageError` unless the store answers and holds its bucket or directory (readiness)."""

    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""


def check_key(key: str) -> str:
    """Reject keys that are empty, absolute, or have empty, `.` or `..` segments."""
    if not key or key.startswith("/") or "\0" in key or "\\" in key:
        raise StorageError(f"invalid object key {key!r}")
    if any(part in ("", ".", "..") for part in key.split("/")):
        raise StorageError(f"invalid object key {key!r}: empty, '.' or '..' segment")
    return key


def check_prefix(prefix: str) -> str:
    """A listing prefix is "" or anything that would be a valid start of a key."""
    if prefix:
        check_key(prefix.removesuffix("/") or "/")
    return prefix


def open_object_store(config: S3Config | FilesystemConfig) -> ObjectStore:
    """Open the backend that `config` describes."""
    opener = _backends().get(type(config))
    if opener is None:
        raise StorageConfigError(f"no object store backend for {type(config).__name__}")
    return opener(config)


def backend_name(config: S3Config | FilesystemConfig) -> str:
    """The backend's name in logs and metrics: "s3" or "filesystem"."""
    return {S3Config: "s3", FilesystemConfig: "filesystem"}[type(config)]


def _backends() -> dict[type, Callable[..., ObjectStore]]:
    """The one list of built-in backends, config type → opener."""
    return {
        S3Config: _open_s3,
        FilesystemConfig: _open_filesystem,
    }


# Each backend is imported when it is opened rather than at the top: each imports this module's types, and
# the S3 client takes a few hundred milliseconds to import that a process on the filesystem never needs.


def _open_s3(config: S3Config) -> ObjectStore:
    from flamewatch.storage.s3 import S3ObjectStore

    return S3ObjectStore(config)


def _open_filesystem(config: FilesystemConfig) -> ObjectStore:
    from flamewatch.storage.filesystem import FilesystemObjectStore

    return FilesystemObjectStore.from_config(config)
