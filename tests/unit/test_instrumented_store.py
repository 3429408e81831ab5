"""The object store's calls as /metrics counts them: operations, failures (a missing key is not one), the
ranges and bytes read, the bytes written; and the store's own range policy seen through the wrapper."""

from __future__ import annotations

import io
import uuid

import pytest
from prometheus_client import REGISTRY

from flamewatch.storage.errors import ObjectNotFound, StorageError
from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.instrumented import InstrumentedStore
from flamewatch.storage.ranged import RangedObject


def _value(name: str, backend: str, operation: str | None = None) -> float:
    labels = {"backend": backend} | ({"operation": operation} if operation else {})
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def counted(tmp_path):
    backend = f"test-{uuid.uuid4().hex[:8]}"  # labels of its own: other tests' calls do not count here
    return InstrumentedStore(FilesystemObjectStore(tmp_path), backend), backend


def test_reads_and_writes_are_counted_by_operation_ranges_and_bytes(counted):
    store, backend = counted
    store.put("a/one", b"x" * 1000)
    store.put_file("a/two", io.BytesIO(b"y" * 500), 500)
    assert store.get("a/one") == b"x" * 1000
    assert store.get_range("a/two", 100, 50) == b"y" * 50
    assert store.get_ranges("a/one", [(0, 10), (500, 20), (990, 10)]) == [b"x" * 10, b"x" * 20, b"x" * 10]
    assert store.get_tail("a/one", 64) == (b"x" * 64, 1000)
    assert [info.key for info in store.list("a/")] == ["a/one", "a/two"]
    store.delete("a/two")

    assert _value("flamewatch_objstore_operations_total", backend, "put") == 2
    for operation in ("get", "get_range", "get_ranges", "get_tail", "list", "delete"):
        assert _value("flamewatch_objstore_operations_total", backend, operation) == 1, operation
    assert _value("flamewatch_objstore_read_ranges_total", backend) == 1 + 1 + 3 + 1  # get_ranges: one a range
    assert _value("flamewatch_objstore_read_bytes_total", backend) == 1000 + 50 + 40 + 64
    assert _value("flamewatch_objstore_written_bytes_total", backend) == 1500
    assert _value("flamewatch_objstore_operation_duration_seconds_count", backend, "put") == 2
    assert _value("flamewatch_objstore_operation_failures_total", backend, "get") == 0


def test_a_missing_key_is_an_answer_and_a_refused_call_a_failure(counted):
    store, backend = counted
    with pytest.raises(ObjectNotFound):
        store.get("missing/key")
    with pytest.raises(StorageError, match="invalid object key"):
        store.put("../outside", b"no")
    assert _value("flamewatch_objstore_operations_total", backend, "get") == 1
    assert _value("flamewatch_objstore_operation_failures_total", backend, "get") == 0
    assert _value("flamewatch_objstore_operation_failures_total", backend, "put") == 1
    assert _value("flamewatch_objstore_read_ranges_total", backend) == 0
    assert _value("flamewatch_objstore_written_bytes_total", backend) == 0


def test_a_listing_left_early_is_timed_and_not_a_failure(counted):
    store, backend = counted
    for n in range(3):
        store.put(f"k/{n}", b"z")
    listing = store.list("k/")
    assert next(listing).key == "k/0"
    listing.close()
    assert _value("flamewatch_objstore_operation_duration_seconds_count", backend, "list") == 1
    assert _value("flamewatch_objstore_operation_failures_total", backend, "list") == 0


def test_the_store_range_policy_is_its_own_through_the_wrapper(counted, tmp_path):
    store, backend = counted
    data = bytes(range(256)) * 1024  # 256 KiB
    store.put("block", data)

    class Policy(FilesystemObjectStore):
        range_open_bytes, range_hole_bytes = 1 << 20, 1 << 20  # as S3's: the whole object at open

    wide = InstrumentedStore(Policy(tmp_path), backend)
    assert wide.range_open_bytes == 1 << 20
    assert not hasattr(store, "range_open_bytes")  # the filesystem store has none: the reader's defaults apply
    before = _value("flamewatch_objstore_read_ranges_total", backend)
    obj = RangedObject(wide, "block")
    obj.fetch([(0, 100), (200_000, 100)])
    assert _value("flamewatch_objstore_read_ranges_total", backend) - before == 1  # it came whole at open
