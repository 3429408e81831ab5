"""Compaction on a real Postgres and object store, fed real Go profiles through the ingester's writer:
every answer is the same before and after, at every step, also when a job fails half-way."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from e2e.pushes import rewritten

from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.ingester.writer import BlockWriter
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.engine import Querier
from flamewatch.querier.formats import renderer
from flamewatch.querier.paths import PathIndex
from flamewatch.storage import compaction, index
from flamewatch.storage.blockwrite import write_block
from flamewatch.storage.compaction import compact_tenant, tenant_lock
from flamewatch.storage.index import BlockRecord, IndexEntry
from flamewatch.storage.objstore import FilesystemConfig, ObjectStore, open_object_store
from flamewatch.storage.postgres import Database
from flamewatch.storage.sweeper import sweep_orphans

pytestmark = [pytest.mark.postgres, pytest.mark.go]

MIN = 60 * 10**9
HOUR = 60 * MIN
DAY = 24 * HOUR
BASE = int(datetime(2026, 1, 5, 10, tzinfo=UTC).timestamp()) * 10**9  # 10:00 on a Monday
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
HEAP = "memory:inuse_space:bytes:space:bytes"
TENANT = "t"


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return open_object_store(FilesystemConfig(str(tmp_path / "objects")))


def push(db: Database, store: ObjectStore, data: bytes, time_ns: int, instance: str) -> None:
    """One profile flushed as its own block, as the ingester writes it."""
    prepared = prepare({"service_name": "api", "instance": instance}, rewritten(data, time_ns=time_ns),
                       IngestLimits(), time_ns)
    BlockWriter(store, db).write(TENANT, prepared.entries)


def fill(db: Database, store: ObjectStore, go_profiles, times: list[int]) -> None:
    for i, t in enumerate(times):
        push(db, store, go_profiles["cpu"], t, "ab"[i % 2])
        push(db, store, go_profiles["heap"], t, "ab"[i % 2])


def answers(db: Database, store: ObjectStore) -> dict:
    """What a user can ask of the stored profiles, over whole, partial and empty windows."""
    querier = Querier(db, BlockCache(store, 1 << 30, 4, PathIndex()), QuerierConfig())
    out = {}
    windows = [(0, 2**62), (BASE, BASE + HOUR - 1), (BASE + 20 * MIN, BASE + 100 * MIN), (BASE + DAY, BASE + 2 * DAY)]
    for ptype in (CPU, HEAP):
        for selector in ("{}", '{instance="a"}'):
            for start, end in windows:
                merged = querier.merge(TENANT, ptype + selector, start, end)
                out[ptype, selector, start, "profiles"] = merged.profiles
                for fmt in ("flamegraph", "top", "tree"):
                    out[ptype, selector, start, fmt] = renderer(fmt)(merged.tree, 1 << 20)
            series = querier.query_range(TENANT, ptype + selector, BASE - HOUR, BASE + 3 * DAY, 10 * MIN,
                                         ["instance"]).series
            out[ptype, selector, "range"] = [(s.labels, s.timestamps.tolist(), s.values.tolist()) for s in series]
    return out


def live_levels(db: Database) -> list[int]:
    return sorted(b.level for b in compaction.live_blocks(db, TENANT))


def test_flushed_blocks_become_hour_blocks_then_day_blocks_with_the_same_answers(db, store, go_profiles) -> None:
    times = [BASE + i * 15 * MIN for i in range(12)] + [BASE + DAY + 5 * MIN, BASE + DAY + 7 * HOUR]
    fill(db, store, go_profiles, times)
    before = answers(db, store)
    flushed_bytes = sum(b.bytes for b in compaction.live_blocks(db, TENANT))
    assert live_levels(db) == [0] * 28
    # At 12:06 the hours 10:00 and 11:00 are over (by the 5 minutes late profiles are waited for).
    done = compact_tenant(db, store, TENANT, BASE + 2 * HOUR + 6 * MIN)
    assert [(j.level, j.inputs, len(j.outputs)) for j in done] == [(1, 16, 2)]
    assert live_levels(db) == [0] * 12 + [1, 1]
    assert answers(db, store) == before
    # Days later: the other hours (12:00 of day 1, 00:00 and 07:00 of day 2), then each day in one block.
    done = compact_tenant(db, store, TENANT, BASE + 3 * DAY)
    assert [(j.level, j.inputs, len(j.outputs)) for j in done] == [(1, 12, 3), (2, 3, 1), (2, 2, 1)]
    assert live_levels(db) == [2, 2]
    assert answers(db, store) == before
    # The same profiles take less room once their symbols and stacks are stored once.
    assert sum(b.bytes for b in compaction.live_blocks(db, TENANT)) < flushed_bytes / 4
    assert compact_tenant(db, store, TENANT, BASE + 3 * DAY) == []  # nothing more to do


def test_late_profiles_join_the_hour_and_day_blocks_already_written(db, store, go_profiles) -> None:
    fill(db, store, go_profiles, [BASE + 5 * MIN, BASE + 10 * MIN])
    compact_tenant(db, store, TENANT, BASE + 3 * DAY)
    assert live_levels(db) == [2]
    fill(db, store, go_profiles, [BASE + 7 * MIN])  # arrives two days late
    before = answers(db, store)
    compact_tenant(db, store, TENANT, BASE + 3 * DAY)
    assert live_levels(db) == [2]
    assert answers(db, store) == before
    assert answers(db, store)[CPU, "{}", 0, "profiles"] == 3


def test_late_profiles_go_to_a_side_block_beside_the_hour_and_day_blocks(db, store, go_profiles) -> None:
    fill(db, store, go_profiles, [BASE + i * 5 * MIN for i in range(12)])
    compact_tenant(db, store, TENANT, BASE + HOUR + 6 * MIN)
    main = compaction.live_blocks(db, TENANT)
    assert [b.level for b in main] == [1]
    for late in (7 * MIN, 8 * MIN):  # one round each: the hour block stays, one side block takes them
        fill(db, store, go_profiles, [BASE + late])
        before = answers(db, store)
        done = compact_tenant(db, store, TENANT, BASE + 2 * HOUR)
        assert [(j.level, j.inputs) for j in done] == [(1, 2 if late == 7 * MIN else 3)]
        assert main[0] in compaction.live_blocks(db, TENANT) and live_levels(db) == [1, 1]
        assert answers(db, store) == before
    # The day block merges the main and the side block once; a late profile then goes beside the day block.
    assert [(j.level, j.inputs) for j in compact_tenant(db, store, TENANT, BASE + 3 * DAY)] == [(2, 2)]
    day_block = compaction.live_blocks(db, TENANT)
    fill(db, store, go_profiles, [BASE + 9 * MIN])
    before = answers(db, store)
    assert [(j.level, j.inputs) for j in compact_tenant(db, store, TENANT, BASE + 3 * DAY)] == [(1, 2), (2, 1)]
    assert day_block[0] in compaction.live_blocks(db, TENANT) and live_levels(db) == [2, 2]
    assert answers(db, store) == before
    assert answers(db, store)[CPU, "{}", 0, "profiles"] == 15


def test_late_profiles_that_outgrow_the_side_share_rewrite_the_main_block(db, store, go_profiles) -> None:
    fill(db, store, go_profiles, [BASE + i * 5 * MIN for i in range(4)])
    compact_tenant(db, store, TENANT, BASE + HOUR + 6 * MIN)
    fill(db, store, go_profiles, [BASE + 7 * MIN])  # a quarter of the hour's profiles: merged into its block
    before = answers(db, store)
    assert [(j.level, j.inputs) for j in compact_tenant(db, store, TENANT, BASE + 2 * HOUR)] == [(1, 3)]
    assert live_levels(db) == [1]
    assert answers(db, store) == before


class Died(BaseException):
    pass


def test_a_job_that_fails_before_the_switch_changes_no_answer_and_leaves_only_orphans(db, store, go_profiles,
                                                                                     monkeypatch) -> None:
    fill(db, store, go_profiles, [BASE, BASE + 10 * MIN])
    before, objects = answers(db, store), sorted(o.key for o in store.list(f"{TENANT}/"))

    def crash(*args, **kwargs):
        raise Died("the process died here")  # a BaseException: nothing of the job's own clean-up runs

    monkeypatch.setattr(index, "replace_blocks", crash)
    with pytest.raises(Died):
        compact_tenant(db, store, TENANT, BASE + 3 * DAY)
    assert live_levels(db) == [0, 0, 0, 0]
    assert answers(db, store) == before
    orphans = sorted(set(o.key for o in store.list(f"{TENANT}/")) - set(objects))
    assert len(orphans) == 1 and "/blocks/1/" in orphans[0]
    assert sweep_orphans(store, db, grace_ns=0, now_ns=2**62) == orphans
    monkeypatch.undo()
    compact_tenant(db, store, TENANT, BASE + 3 * DAY)  # the next round does the job
    assert live_levels(db) == [2]
    assert answers(db, store) == before


def test_a_profile_stored_twice_by_racing_retries_is_kept_once(db, store, go_profiles) -> None:
    fill(db, store, go_profiles, [BASE])
    once = answers(db, store)
    # The race: a second ingester stored the same push before the first one's index commit was visible.
    stored = compaction.live_blocks(db, TENANT)
    prepared = prepare({"service_name": "api", "instance": "a"}, rewritten(go_profiles["cpu"], time_ns=BASE),
                       IngestLimits(), BASE)
    store.put("t/blocks/0/copy.parquet", write_block(prepared.entries))
    entries = [IndexEntry(e.fingerprint, e.labels, e.profile.profile_type.id, e.time_ns, i, e.profile.total,
                          e.content_hash) for i, e in enumerate(prepared.entries)]
    index.commit_block(db, BlockRecord("copy", TENANT, "t/blocks/0/copy.parquet", BASE, BASE, 0, 1, 2), entries)
    assert answers(db, store)[CPU, "{}", 0, "profiles"] == 2
    done = compact_tenant(db, store, TENANT, BASE + 3 * DAY)
    assert sum(j.duplicates for j in done) == 2  # both sample types of the copy
    assert len(stored) == 2 and live_levels(db) == [2]
    assert answers(db, store) == once


def test_one_compactor_per_tenant_at_a_time(db) -> None:
    held, release, results = threading.Event(), threading.Event(), []

    def first() -> None:
        with tenant_lock(db, TENANT) as mine:
            results.append(mine)
            held.set()
            release.wait(10)

    thread = threading.Thread(target=first)
    thread.start()
    held.wait(10)
    with tenant_lock(db, TENANT) as second, tenant_lock(db, "other") as other:
        results += [second, other]
    release.set()
    thread.join()
    with tenant_lock(db, TENANT) as after:
        results.append(after)
    assert results == [True, False, True, True]


def _sizes(db: Database) -> dict[str, int]:
    with db.connection() as conn:
        return dict(conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c WHERE c.relkind = 'r'"
            " AND (c.relname = 'flush_series' OR c.relname LIKE 'block\\_series\\_%')").fetchall())


def test_compaction_gives_back_the_space_of_the_index_rows_it_replaced(db, store, go_profiles) -> None:
    fill(db, store, go_profiles, [BASE + i * 15 * MIN for i in range(12)])
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM flush_series").fetchone()[0] > 0
    compact_tenant(db, store, TENANT, BASE + 3 * DAY)
    assert live_levels(db) == [2]
    sizes = _sizes(db)
    with db.connection() as conn:
        flush_bytes = conn.execute("SELECT pg_total_relation_size('flush_series')").fetchone()[0]
    assert flush_bytes <= 3 * 8192  # emptied: what is left is the metapage of each index (its TOAST's too)
    day_partition = next(name for name in sizes if name.startswith("block_series_"))
    with db.connection() as conn:
        conn.autocommit = True
        conn.execute(f"VACUUM FULL {day_partition}")
        conn.autocommit = False
    assert _sizes(db)[day_partition] == sizes[day_partition]  # already as small as a rewrite makes it
