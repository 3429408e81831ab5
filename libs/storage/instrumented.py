"""An object store that counts what is asked of it, for `/metrics`: how many operations of each kind, how
many failed, how long they took, and the bytes read and written.

On S3 a request is billed whatever its size, and a querier reads a block in byte ranges, so the figure
an operator wants is how many ranges are read: `flamewatch_objstore_read_ranges_total` counts each range
of a `get_ranges` call (S3 asks for each), a `get_range`, a `get_tail` and a whole `get` as one, which on
S3 is one GET request each. Names and labels follow the object-store metrics Prometheus users know from
Thanos and Pyroscope (`objstore_bucket_operations_total`, `..._operation_failures_total`,
`..._operation_duration_seconds`), under Flamewatch's prefix with the backend as a label.

A key that is not there (`ObjectNotFound`) is an answer, not a failure: readers ask for objects that may
be gone (a block retired by compaction), and counting those would page someone for nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from prometheus_client import Counter, Histogram

from flamewatch.storage.errors import ObjectNotFound
from flamewatch.storage.objstore import ObjectInfo, ObjectStore

OPERATIONS = Counter("flamewatch_objstore_operations_total", "Calls of the object store, by operation",
                     ["backend", "operation"])
FAILURES = Counter("flamewatch_objstore_operation_failures_total",
                   "Calls of the object store that raised an error (a missing key is not one), by operation",
                   ["backend", "operation"])
DURATION = Histogram("flamewatch_objstore_operation_duration_seconds",
                     "Time the object store took to answer a call, by operation", ["backend", "operation"],
                     buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
READ_RANGES = Counter("flamewatch_objstore_read_ranges_total",
                      "Objects or byte ranges of objects read: on S3, one GET request each", ["backend"])
READ_BYTES = Counter("flamewatch_objstore_read_bytes_total", "Bytes read from the object store", ["backend"])
WRITTEN_BYTES = Counter("flamewatch_objstore_written_bytes_total", "Bytes written to the object store",
                        ["backend"])


class InstrumentedStore:
    """`store` with every call counted under `backend` ("s3", "filesystem"). Attributes the store has
    beyond the protocol (its range policy, `range_open_bytes` and `range_hole_bytes`) are its own."""

    def __init__(self, store: ObjectStore, backend: str) -> None:
        self._store = store
        self._backend = backend
        self._ranges = READ_RANGES.labels(backend)
        self._read = READ_BYTES.labels(backend)
        self._written = WRITTEN_BYTES.labels(backend)

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def put(self, key: str, data: bytes) -> None:
        with self._timed("put"):
            self._store.put(key, data)
        self._written.inc(len(data))

    def put_file(self, key: str, file: BinaryIO, size: int) -> None:
        with self._timed("put"):
            self._store.put_file(key, file, size)
        self._written.inc(size)

    def get(self, key: str) -> bytes:
        with self._timed("get"):
            data = self._store.get(key)
        return self._got(1, len(data), data)

    def get_range(self, key: str, start: int, length: int) -> bytes:
        with self._timed("get_range"):
            data = self._store.get_range(key, start, length)
        return self._got(1, len(data), data)

    def get_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        with self._timed("get_ranges"):
            parts = self._store.get_ranges(key, ranges)
        return self._got(len(ranges), sum(len(p) for p in parts), parts)

    def get_tail(self, key: str, length: int) -> tuple[bytes, int]:
        with self._timed("get_tail"):
            data, size = self._store.get_tail(key, length)
        self._got(1, len(data), data)
        return data, size

    def delete(self, key: str) -> None:
        with self._timed("delete"):
            self._store.delete(key)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        # A listing is a generator read page by page: timed from the call to its last object
        with self._timed("list"):
            yield from self._store.list(prefix)

    def list_prefixes(self, prefix: str) -> list[str]:
        with self._timed("list_prefixes"):
            return self._store.list_prefixes(prefix)

    def ping(self) -> None:
        with self._timed("ping"):
            self._store.ping()

    def close(self) -> None:
        self._store.close()

    def _got(self, ranges: int, nbytes: int, result):
        self._ranges.inc(ranges)
        self._read.inc(nbytes)
        return result

    @contextmanager
    def _timed(self, operation: str) -> Iterator[None]:
        OPERATIONS.labels(self._backend, operation).inc()
        start = time.perf_counter()
        try:
            yield
        except ObjectNotFound:
            raise
        except Exception:
            FAILURES.labels(self._backend, operation).inc()
            raise
        finally:
            DURATION.labels(self._backend, operation).observe(time.perf_counter() - start)

