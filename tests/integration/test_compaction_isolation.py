"""A block compaction cannot merge (here one already stored with a profile dated INT64_MIN, as data
accepted before ingest checked times was) fails its own job only: the round compacts every other hour
and tenant, logs the bad job once with its blocks and what to do, deletes what the failed job wrote,
and does not try it again every round."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from e2e.pushes import rewritten
from infra.minio import MinioServer
from prometheus_client import REGISTRY

from flamewatch.ingester import compactor
from flamewatch.ingester.compactor import Maintenance
from flamewatch.ingester.config import IngestLimits, MaintenanceConfig
from flamewatch.ingester.prepare import prepare
from flamewatch.storage import compaction, index
from flamewatch.storage.blockwrite import write_block
from flamewatch.storage.compaction import CompactionConfig
from flamewatch.storage.errors import StorageFull
from flamewatch.storage.index import BlockRecord, IndexEntry
from flamewatch.storage.keys import block_key
from flamewatch.storage.objstore import FilesystemConfig, ObjectStore, S3Config, open_object_store
from flamewatch.storage.postgres import Database

pytestmark = [pytest.mark.postgres, pytest.mark.go]

MIN = 60 * 10**9
HOUR = 60 * MIN
DAY = 24 * HOUR
BASE = int(datetime(2026, 1, 5, 10, tzinfo=UTC).timestamp()) * 10**9
INT64_MIN = -(2**63)
NOW = BASE + 3 * DAY


@pytest.fixture(params=["filesystem", pytest.param("s3", marks=pytest.mark.s3)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    if request.param == "filesystem":
        backend = open_object_store(FilesystemConfig(str(tmp_path / "objects")))
    else:
        minio: MinioServer = request.getfixturevalue("minio")
        backend = open_object_store(S3Config(bucket=request.getfixturevalue("s3_bucket"), endpoint=minio.endpoint,
                                             access_key=minio.access_key, secret_key=minio.secret_key, insecure=True))
    yield backend
    backend.close()


def stored_block(db: Database, store: ObjectStore, tenant: str, data: bytes, times: list[int], block_id: str) -> str:
    """A flush block written straight into the store and the index, with no check of its times (as
    blocks stored before ingest checked them are); returns its key."""
    prepared = prepare({"service_name": "api"}, rewritten(data, time_ns=BASE), IngestLimits(), BASE)
    entries = [dataclasses.replace(e, time_ns=t) for t in times for e in prepared.entries]
    key = block_key(tenant, 0, max(min(times), 0), block_id)
    body = write_block(entries)
    store.put(key, body)
    index.commit_block(db, BlockRecord(block_id, tenant, key, min(times), max(times), 0, len(body), len(entries)),
                       [IndexEntry(e.fingerprint, e.labels, e.profile.profile_type.id, e.time_ns, i,
                                   e.profile.total, e.content_hash) for i, e in enumerate(entries)])
    return key


def levels(db: Database, tenant: str) -> list[int]:
    return sorted(b.level for b in compaction.live_blocks(db, tenant))


def object_keys(store: ObjectStore) -> set[str]:
    return {o.key for tenant in store.list_prefixes("") for o in store.list(tenant)}


def indexed_keys(db: Database) -> set[str]:
    with db.connection() as conn:
        return {key for (key,) in conn.execute("SELECT key FROM blocks")}


def test_a_block_that_cannot_be_compacted_stops_only_its_own_job(db, store, go_profiles, caplog) -> None:
    cpu = go_profiles["cpu"]
    bad = stored_block(db, store, "a", cpu, [INT64_MIN, BASE + 3 * MIN], "0" * 25 + "1")
    stored_block(db, store, "a", cpu, [BASE + 5 * MIN], "0" * 25 + "2")  # a good hour of the same tenant
    stored_block(db, store, "a", cpu, [BASE + DAY + 5 * MIN], "0" * 25 + "3")  # and another day
    stored_block(db, store, "b", cpu, [BASE + 7 * MIN, BASE + 9 * MIN], "0" * 25 + "4")  # a tenant after it
    written = object_keys(store)
    maintenance = Maintenance(MaintenanceConfig(compaction=CompactionConfig()), store, db)

    with caplog.at_level(logging.INFO, logger="flamewatch"):
        maintenance.run_once(NOW)
    # The bad block stays as it is; every other profile is in a day block.
    assert [b.key for b in compaction.live_blocks(db, "a") if b.level == 0] == [bad]
    assert levels(db, "a") == [0, 2, 2]
    assert levels(db, "b") == [2]
    assert REGISTRY.get_sample_value("flamewatch_compaction_skipped_blocks") == 1
    failures = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(failures) == 1
    message = failures[0].getMessage()
    assert "tenant a" in message and bad in message and "bigint out of range" in message
    # What the failed jobs wrote is gone at once: every object left is in the index (live, or retired
    # by compaction until its grace period ends), and every block stored at first is still there.
    assert object_keys(store) == indexed_keys(db)
    assert written <= object_keys(store)
    assert len(indexed_keys(db)) == 4 + 3 + 3  # the blocks stored, the hour blocks and the day blocks

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="flamewatch"):
        maintenance.run_once(NOW + 10 * MIN)  # the next round leaves the bad block alone, quietly
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert levels(db, "a") == [0, 2, 2] and levels(db, "b") == [2]
    assert object_keys(store) == indexed_keys(db) and len(indexed_keys(db)) == 10

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="flamewatch"):
        maintenance.run_once(NOW + 2 * HOUR)  # after its back-off it is tried once more, and fails again
    tried = [r.getMessage() for r in caplog.records if bad in r.getMessage()]
    assert len(tried) == 1 and "tries it again in 2 h (failure 2)" in tried[0]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert levels(db, "a") == [0, 2, 2] and object_keys(store) == indexed_keys(db)

    # What the message says to do to drop the block now works: retention takes it out, rows and object.
    advice = tried[0][tried[0].index("UPDATE blocks"):]
    with db.connection() as conn:
        conn.execute(advice)
    Maintenance(MaintenanceConfig(compaction=CompactionConfig(), retired_grace_s=0), store, db).run_once(NOW)
    assert levels(db, "a") == [2, 2] and bad not in object_keys(store) and bad not in indexed_keys(db)
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM flush_series").fetchone()[0] == 0


def test_a_store_failure_mid_job_ends_the_round_and_deletes_what_the_job_wrote(db, store, go_profiles,
                                                                             monkeypatch) -> None:
    for i, t in enumerate([BASE + 5 * MIN, BASE + HOUR + 5 * MIN, BASE + 2 * HOUR + 5 * MIN]):
        stored_block(db, store, "a", go_profiles["cpu"], [t], "0" * 25 + str(i))
    before = object_keys(store)
    put, puts = store.put_file, []

    def full_after_two(key: str, file, size: int) -> None:
        puts.append(key)
        if len(puts) > 2:
            raise StorageFull("no space left on device")
        put(key, file, size)

    monkeypatch.setattr(store, "put_file", full_after_two)
    with pytest.raises(StorageFull):
        compaction.compact_tenant(db, store, "a", NOW)
    assert len(puts) == 3  # one job of three hours: two hour blocks written, the third refused
    assert object_keys(store) == before  # the two written are deleted at once, not left for the sweeper
    assert levels(db, "a") == [0, 0, 0]
    monkeypatch.undo()
    compaction.compact_tenant(db, store, "a", NOW)  # space is back: the next round does the job
    assert levels(db, "a") == [2]


def test_a_failed_retention_or_tenant_does_not_stop_the_others(db, store, go_profiles, monkeypatch, caplog) -> None:
    for tenant, block_id in (("a", "0" * 26), ("b", "1" * 26)):
        stored_block(db, store, tenant, go_profiles["cpu"], [BASE + 5 * MIN], block_id)
    real = compactor.compact_tenant

    def fails_for_a(db, store, tenant, *args):
        if tenant == "a":
            raise ValueError("something unforeseen in tenant a")
        return real(db, store, tenant, *args)

    def retention_fails(*args):
        raise ValueError("something unforeseen in retention")

    monkeypatch.setattr(compactor, "compact_tenant", fails_for_a)
    monkeypatch.setattr(compactor, "expire", retention_fails)
    with caplog.at_level(logging.WARNING, logger="flamewatch"):
        Maintenance(MaintenanceConfig(compaction=CompactionConfig()), store, db).run_once(NOW)
    assert levels(db, "a") == [0] and levels(db, "b") == [2]
    assert [r.getMessage() for r in caplog.records] == [
        "retention failed: ValueError: something unforeseen in retention",
        "compaction of tenant a failed: ValueError: something unforeseen in tenant a"]
