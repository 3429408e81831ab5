"""Errors raised by the storage layer.

Backend libraries (minio, urllib3, psycopg, the filesystem) never leak out of `flamewatch.storage`:
their exceptions are translated at the boundary with ``raise ... from exc`` into this tree::

    StorageError                  anything the storage layer refuses or fails to do
     ├── StorageUnavailable       the backend cannot be reached or failed transiently (connection
     │                            refused, timeout, HTTP 5xx, SlowDown); worth retrying later.
     │                            Callers map it to gRPC UNAVAILABLE / HTTP 503.
     ├── ObjectNotFound           `get` of a key that does not exist
     └── StorageConfigError       the configuration cannot work (unknown backend, bad key, bad DSN)
"""


class StorageError(Exception):
    """Base class of every error raised by `flamewatch.storage`."""


class StorageUnavailable(StorageError):
    """The backend cannot be reached or failed transiently; the request may succeed later."""


class ObjectNotFound(StorageError):
    """The object store holds no object under the requested key."""

    def __init__(self, key: str) -> None:
        super().__init__(f"object not found: {key}")
        self.key = key


class StorageConfigError(StorageError):
    """The storage configuration is unusable."""
