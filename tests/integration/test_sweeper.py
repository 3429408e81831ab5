"""The sweeper deletes block objects left without index rows by a crashed write, and nothing else."""

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from infra.minio import MinioServer

from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.objstore import ObjectStore, S3Config, open_object_store
from flamewatch.storage.postgres import Database
from flamewatch.storage.sweeper import sweep_orphans

pytestmark = pytest.mark.postgres


@pytest.fixture(params=["filesystem", pytest.param("s3", marks=pytest.mark.s3)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    if request.param == "filesystem":
        backend: ObjectStore = FilesystemObjectStore(tmp_path / "objects")
    else:
        minio: MinioServer = request.getfixturevalue("minio")
        backend = open_object_store(S3Config(
            bucket=request.getfixturevalue("s3_bucket"), endpoint=minio.endpoint,
            access_key=minio.access_key, secret_key=minio.secret_key, insecure=True,
        ))
    yield backend
    backend.close()


def block_key(tenant: str, ulid: str) -> str:
    return f"{tenant}/blocks/0/2023/11/14/{ulid}.parquet"


def index_block(db: Database, tenant: str, key: str) -> None:
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO blocks (id, tenant, key, min_time, max_time, level, bytes, profiles)"
            " VALUES (%s, %s, %s, 0, 1, 0, 5, 1)",
            (key.rsplit("/", 1)[1].removesuffix(".parquet"), tenant, key),
        )


def modified_ns(store: ObjectStore, key: str) -> int:
    return next(info.last_modified_ns for info in store.list(key) if info.key == key)


def test_only_old_orphans_are_deleted(
    store: ObjectStore, db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    old_orphan = block_key("tenant-a", "01HF3Z6W00000000000000000A")
    indexed = block_key("tenant-b", "01HF3Z6W00000000000000000B")
    not_a_block = "tenant-a/blocks/notes.txt"
    for key in (old_orphan, indexed, not_a_block):
        store.put(key, b"block")
    index_block(db, "tenant-b", indexed)
    time.sleep(0.3)
    young_orphan = block_key("tenant-a", "01HF3Z6W00000000000000000C")
    store.put(young_orphan, b"block")

    # Ages come from the store's own clock: the young orphan is half the grace old, the rest older.
    gap = modified_ns(store, young_orphan) - modified_ns(store, old_orphan)
    assert gap > 0
    now_ns = modified_ns(store, young_orphan) + gap // 4
    with caplog.at_level(logging.INFO, logger="flamewatch.storage.sweeper"):
        deleted = sweep_orphans(store, db, grace_ns=gap // 2, now_ns=now_ns)

    assert deleted == [old_orphan]
    assert sorted(info.key for info in store.list("")) == sorted([indexed, not_a_block, young_orphan])
    assert old_orphan in caplog.text


def test_nothing_to_sweep_in_an_empty_store(store: ObjectStore, db: Database) -> None:
    assert sweep_orphans(store, db, grace_ns=0, now_ns=time.time_ns()) == []
