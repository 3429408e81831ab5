"""The querier's on-disk block cache in front of a real MinIO: a block read once is served from disk,
also after a restart and while MinIO is down; the cache stays within its size."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from infra.minio import MinioServer

from flamewatch.storage.disk_cache import DiskCache
from flamewatch.storage.errors import ObjectNotFound, StorageError, StorageUnavailable
from flamewatch.storage.objstore import S3Config, open_object_store

pytestmark = pytest.mark.s3


@pytest.fixture
def s3(minio: MinioServer, s3_bucket: str):
    store = open_object_store(S3Config(s3_bucket, minio.endpoint, minio.access_key, minio.secret_key, insecure=True))
    yield store
    store.close()


def test_a_block_read_once_is_served_from_disk_when_the_object_store_is_down(s3, minio: MinioServer,
                                                                             tmp_path: Path) -> None:
    s3.put("t/blocks/1/a.parquet", b"A" * 1000)
    cache = DiskCache(s3, tmp_path / "cache", max_bytes=10_000)
    assert cache.get("t/blocks/1/a.parquet") == b"A" * 1000
    minio.stop()
    try:
        restarted = DiskCache(s3, tmp_path / "cache", max_bytes=10_000)  # a new querier process
        assert restarted.get("t/blocks/1/a.parquet") == b"A" * 1000
        # a query reads ranges (`ranged.RangedObject`): from the local copy too
        assert restarted.get_ranges("t/blocks/1/a.parquet", [(0, 10), (995, 10)]) == [b"A" * 10, b"A" * 5]
        assert restarted.get_tail("t/blocks/1/a.parquet", 64) == (b"A" * 64, 1000)
        with pytest.raises(StorageUnavailable):
            restarted.get("t/blocks/1/other.parquet")  # not cached: the store's own error
    finally:
        minio.start()
    with pytest.raises(ObjectNotFound):
        cache.get("t/blocks/1/missing.parquet")
    s3.put("t/blocks/1/b.parquet", b"B" * 3000)
    assert cache.get_range("t/blocks/1/b.parquet", 2990, 100) == b"B" * 10  # fetched whole and kept
    assert cache.nbytes == 4000


def test_the_least_recently_read_blocks_go_first_and_the_bound_holds(s3, tmp_path: Path) -> None:
    for name in "abcd":
        s3.put(name, name.encode() * 400)
    cache = DiskCache(s3, tmp_path / "cache", max_bytes=1000)
    for name in "abca":  # a is read again: b is now the oldest
        cache.get(name)
    cache.get("d")
    assert cache.nbytes <= 1000
    assert len(os.listdir(tmp_path / "cache")) == 2
    s3.delete("b")
    s3.delete("c")
    with pytest.raises(ObjectNotFound):
        cache.get("b")  # evicted, and gone from the store
    assert cache.get("a") == b"a" * 400 and cache.get("d") == b"d" * 400
    reopened = DiskCache(s3, tmp_path / "cache", max_bytes=500)  # a smaller bound on restart evicts at once
    assert reopened.nbytes <= 500


def test_a_torn_write_is_cleaned_up_and_an_unusable_directory_is_named(s3, tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "x.1.partial").write_bytes(b"torn")
    DiskCache(s3, tmp_path / "cache", max_bytes=1000)
    assert os.listdir(tmp_path / "cache") == []
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StorageError, match=f"cannot use {tmp_path / 'file'} as the block cache"):
        DiskCache(s3, tmp_path / "file", max_bytes=1000)
