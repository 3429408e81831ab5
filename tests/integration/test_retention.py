"""Retention on a real Postgres and object store: whole day partitions go, per-tenant overrides hold,
objects are deleted only after the grace period, once nothing in the index points at them, and events
(incidents) go with the profiles they point at."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from flamewatch.events.model import Event
from flamewatch.events.store import list_events, record
from flamewatch.ingester.compactor import Maintenance
from flamewatch.ingester.config import MaintenanceConfig
from flamewatch.storage import index
from flamewatch.storage.index import BlockRecord, IndexEntry
from flamewatch.storage.objstore import FilesystemConfig, ObjectStore, open_object_store
from flamewatch.storage.postgres import Database, day_partitions
from flamewatch.storage.retention import RetentionPolicy, delete_retired, expire

pytestmark = pytest.mark.postgres

DAY = 86_400 * 10**9
NOW = int(datetime(2026, 5, 20, 12, tzinfo=UTC).timestamp()) * 10**9
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return open_object_store(FilesystemConfig(str(tmp_path / "objects")))


def stored_block(db: Database, store: ObjectStore, tenant: str, block_id: str, *times: int, level: int = 1) -> str:
    """A compacted block (level 1, indexed in the day partitions) or, with level 0, a flush block."""
    labels = {"service_name": "api", "__profile_type__": CPU}
    entries = [IndexEntry(7, labels, CPU, t, row, 1) for row, t in enumerate(times)]
    key = f"{tenant}/blocks/{level}/{block_id}.parquet"
    store.put(key, b"block")
    index.commit_block(db, BlockRecord(block_id, tenant, key, min(times), max(times), level, 5, len(times)), entries)
    return key


def indexed_times(db: Database, tenant: str) -> list[int]:
    ids = [s.id for s in index.find_series(db, tenant, [], 0, 2**62)]
    return index.profile_rows(db, ids, 0, 2**62).time.tolist()


def states(db: Database) -> dict[str, str]:
    with db.connection() as conn:
        return dict(conn.execute("SELECT id, state FROM blocks").fetchall())


def partitions(db: Database) -> list[str]:
    with db.connection() as conn:
        return [name for name, _ in day_partitions(conn)]


def test_blocks_past_the_retention_leave_the_index_and_whole_days_are_dropped(db, store) -> None:
    stored_block(db, store, "t", "old", NOW - 40 * DAY)
    stored_block(db, store, "t", "edge", NOW - 31 * DAY + 1, NOW - 29 * DAY)  # newest profile is kept
    stored_block(db, store, "t", "new", NOW - DAY)
    result = expire(db, RetentionPolicy(default_ns=30 * DAY), NOW)
    assert result.blocks == 1
    assert result.partitions_dropped == ["block_series_20260410"]
    assert indexed_times(db, "t") == [NOW - 31 * DAY + 1, NOW - 29 * DAY, NOW - DAY]
    assert states(db) == {"old": "expired", "edge": "live", "new": "live"}
    assert partitions(db) == ["block_series_20260419", "block_series_20260519"]


def test_a_partition_shared_with_kept_blocks_loses_only_the_expired_rows(db, store) -> None:
    stored_block(db, store, "short", "a", NOW - 3 * DAY)
    stored_block(db, store, "long", "b", NOW - 3 * DAY)
    result = expire(db, RetentionPolicy(default_ns=None, per_tenant_ns={"short": DAY}), NOW)
    assert (result.blocks, result.partitions_dropped, result.partitions_trimmed) == (1, [], ["block_series_20260517"])
    assert indexed_times(db, "short") == []
    assert indexed_times(db, "long") == [NOW - 3 * DAY]


def test_a_tenant_override_keeps_longer_or_for_ever(db, store) -> None:
    for tenant in ("default", "longer", "forever"):
        stored_block(db, store, tenant, f"{tenant}-1", NOW - 10 * DAY)
    policy = RetentionPolicy(default_ns=7 * DAY, per_tenant_ns={"longer": 14 * DAY, "forever": None})
    assert expire(db, policy, NOW).blocks == 1
    assert [indexed_times(db, t) for t in ("default", "longer", "forever")] == [[], [NOW - 10 * DAY], [NOW - 10 * DAY]]


def test_objects_go_only_after_the_grace_period(db, store) -> None:
    key = stored_block(db, store, "t", "old", NOW - 40 * DAY)
    expire(db, RetentionPolicy(default_ns=30 * DAY), NOW)
    assert delete_retired(db, store, grace_ns=3600 * 10**9) == []  # a query may still be reading it
    assert store.get(key) == b"block"
    with db.connection() as conn:
        conn.execute("UPDATE blocks SET retired_at = now() - interval '2 hours'")
    assert delete_retired(db, store, grace_ns=3600 * 10**9) == [key]
    assert states(db) == {}
    assert not list(store.list("t/"))


def test_an_expired_block_whose_rows_are_still_indexed_keeps_its_object(db, store) -> None:
    # A run that stopped between marking the block expired and clearing its rows: the next run clears them.
    key = stored_block(db, store, "t", "old", NOW - 40 * DAY)
    with db.connection() as conn:
        conn.execute("UPDATE blocks SET state = 'expired', retired_at = now() - interval '2 hours'")
    assert delete_retired(db, store, grace_ns=3600 * 10**9) == []
    assert store.get(key) == b"block"
    assert expire(db, RetentionPolicy(default_ns=30 * DAY), NOW).partitions_dropped == ["block_series_20260410"]
    with db.connection() as conn:
        conn.execute("UPDATE blocks SET retired_at = now() - interval '2 hours'")
    assert delete_retired(db, store, grace_ns=3600 * 10**9) == [key]


def test_an_expired_flush_block_leaves_the_flush_index_too(db: Database, store: ObjectStore) -> None:
    stored_block(db, store, "t", "old-flush", NOW - 40 * DAY, level=0)
    stored_block(db, store, "t", "new-flush", NOW - DAY, level=0)
    result = expire(db, RetentionPolicy(default_ns=30 * DAY), NOW)
    assert result.blocks == 1 and "flush_series" in result.partitions_trimmed
    assert indexed_times(db, "t") == [NOW - DAY]
    with db.connection() as conn:
        assert conn.execute("SELECT block_id FROM flush_series").fetchall() == [("new-flush",)]


def test_events_older_than_their_tenants_retention_are_deleted_by_the_maintenance_round(db, store) -> None:
    labels = {"service_name": "api"}
    for tenant in ("short", "forever"):
        record(db, tenant, [Event("oom_kill", NOW - age, labels).keyed() for age in (9 * DAY, DAY)], NOW)
    policy = RetentionPolicy(default_ns=7 * DAY, per_tenant_ns={"forever": None})
    Maintenance(MaintenanceConfig(retention=policy), store, db).run_once(NOW)
    left = {t: sorted((NOW - r.event.time_ns) // DAY for r in list_events(db, t, 0, 2**62))
            for t in ("short", "forever")}
    assert left == {"short": [1], "forever": [1, 9]}
