"""Errors raised by the storage layer.

Backend libraries (minio, urllib3, psycopg, the filesystem) never leak out of `flamewatch.storage`:
their exceptions are translated at the boundary with ``raise ... from exc`` into this tree::

    StorageError                  anything the storage layer refuses or fails to do
     ├── StorageUnavailable       the backend cannot be reached or failed transiently (connection
     │    │                       refused, timeout, HTTP 5xx, SlowDown); worth retrying later.
     │    │                       Callers map it to gRPC UNAVAILABLE / HTTP 503.
     │    └── StorageFull         the backend has no space left (a full disk); writes fail until
     │                            space is freed, reads still work
     ├── ObjectNotFound           `get` of a key that does not exist
     ├── BlocksMissing            the index lists blocks whose objects are gone (lost or deleted
     │                            by hand): a query over them cannot be answered in full
     ├── UnreadableBlock          a stored block in a format version this build does not read (one
     │                            written by a newer Flamewatch, read after a downgrade)
     └── StorageConfigError       the configuration cannot work (unknown backend, bad key, bad DSN)
"""

from collections.abc import Sequence

_LISTED_KEYS = 5


class StorageError(Exception):
    """Base class of every error raised by `flamewatch.storage`."""


class StorageUnavailable(StorageError):
    """The backend cannot be reached or failed transiently; the request may succeed later."""


class StorageFull(StorageUnavailable):
    """The backend has no space left for a write."""


class ObjectNotFound(StorageError):
    """The object store holds no object under the requested key."""

    def __init__(self, key: str) -> None:
        super().__init__(f"object not found: {key}")
        self.key = key


class StorageConfigError(StorageError):
    """The storage configuration is unusable."""


class BlocksMissing(StorageError):
    """Blocks a query needs are listed in the index but missing from the object store."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = sorted(keys)
        listed = ", ".join(self.keys[:_LISTED_KEYS])
        if len(self.keys) > _LISTED_KEYS:
            listed += f" and {len(self.keys) - _LISTED_KEYS} more"
        what = "1 block" if len(self.keys) == 1 else f"{len(self.keys)} blocks"
        super().__init__(f"the object store is missing {what} this query needs, so it cannot be answered in "
                         f"full: {listed}. The Postgres index still lists them: restore the objects, or delete "
                         "their rows from the index to query without them")


class UnreadableBlock(StorageError):
    """A stored block is in a format version this build does not read: a newer Flamewatch wrote it.
    Not the request's fault (INTERNAL / 500, as any failure of our own); the operator upgrades."""

    def __init__(self, version: object, readable: Sequence[int], key: str | None = None) -> None:
        self.version, self.key = version, key
        which = f"the block {key}" if key else "a stored block"
        super().__init__(f"{which} has format version {version}, and this build reads versions "
                         f"{', '.join(map(str, readable))}: it was written by a newer Flamewatch; run that "
                         "version (or a later one) to read it")
