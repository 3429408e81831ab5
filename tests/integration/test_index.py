"""The profile index on a real Postgres: a row per (block, series) with packed profile arrays."""

import dataclasses
from datetime import UTC, datetime

import numpy as np
import psycopg
import pytest

from flamewatch.storage import index, mergeplan
from flamewatch.storage.index import BlockRecord, IndexEntry
from flamewatch.storage.postgres import Database, PostgresConfig, migrations, open_database

pytestmark = pytest.mark.postgres

T0 = int(datetime(2026, 3, 1, 23, 59, 50, tzinfo=UTC).timestamp()) * 10**9
S = 10**9
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"


def entry(instance: str, time_ns: int, row: int, total: int, content_hash: int = 0) -> IndexEntry:
    labels = {"service_name": "api", "instance": instance, "__profile_type__": CPU}
    return IndexEntry(hash(instance) & 0x7FFFFFFF, labels, CPU, time_ns, row, total, content_hash)


def block(block_id: str, entries: list[IndexEntry], level: int = 0) -> BlockRecord:
    times = [e.time_ns for e in entries]
    return BlockRecord(block_id, "t", f"t/blocks/{level}/{block_id}", min(times), max(times), level, 100,
                       len(entries))


def series_ids(db: Database) -> dict[str, int]:
    return {s.labels["instance"]: s.id for s in index.find_series(db, "t", [], 0, 2**62)}


def commit(db: Database, block_id: str, entries: list[IndexEntry], level: int = 0) -> None:
    index.commit_block(db, block(block_id, entries, level), entries)


def test_profiles_come_back_in_time_order_with_their_block_rows_and_totals(db: Database) -> None:
    commit(db, "b1", [entry("a", T0 + 20 * S, 0, 5), entry("a", T0, 1, 7), entry("b", T0 + 10 * S, 2, 11)])
    commit(db, "b2", [entry("a", T0 + 30 * S, 0, 13)])
    ids = series_ids(db)
    rows = index.profile_rows(db, list(ids.values()), T0, T0 + 25 * S)
    assert rows.time.tolist() == [T0, T0 + 10 * S, T0 + 20 * S]
    assert rows.block_id.tolist() == ["b1", "b1", "b1"]
    assert rows.row.tolist() == [1, 2, 0]
    assert rows.total.tolist() == [7, 11, 5]
    assert rows.series_id.tolist() == [ids["a"], ids["b"], ids["a"]]
    only_a = index.profile_rows(db, [ids["a"]], T0 + 1, 2**62)
    assert list(zip(only_a.block_id.tolist(), only_a.total.tolist())) == [("b1", 5), ("b2", 13)]


def test_a_block_is_one_index_row_per_series_in_the_partition_of_its_first_profile(db: Database) -> None:
    # The block straddles midnight: its series' rows sit in the day of their first profile.
    commit(db, "b1", [entry("a", T0 + i * S, i, 1) for i in range(20)] + [entry("b", T0 + 15 * S, 20, 1)], level=1)
    with db.connection() as conn:
        found = conn.execute("SELECT tableoid::regclass::text, profiles FROM block_series ORDER BY 1").fetchall()
    assert found == [("block_series_20260301", 20), ("block_series_20260302", 1)]


def test_flush_blocks_are_indexed_apart_from_compacted_ones_and_read_with_them(db: Database) -> None:
    commit(db, "flushed", [entry("a", T0, 0, 3), entry("b", T0, 1, 4)])
    commit(db, "hourly", [entry("a", T0 + S, 0, 5)], level=1)
    with db.connection() as conn:
        tables = conn.execute("SELECT 'flush', count(*) FROM flush_series UNION ALL "
                              "SELECT 'compacted', count(*) FROM block_series").fetchall()
    assert dict(tables) == {"flush": 2, "compacted": 1}
    rows = index.profile_rows(db, list(series_ids(db).values()), 0, 2**62)
    assert sorted(zip(rows.block_id.tolist(), rows.total.tolist())) == [("flushed", 3), ("flushed", 4), ("hourly", 5)]
    index.replace_blocks(db, [], ["flushed"])
    assert index.profile_rows(db, list(series_ids(db).values()), 0, 2**62).block_id.tolist() == ["hourly"]


def test_the_nearest_profile_is_found_across_blocks_and_at_the_ends_of_time(db: Database) -> None:
    commit(db, "b1", [entry("a", T0, 0, 1), entry("a", T0 + 10 * S, 1, 2)])
    commit(db, "b2", [entry("a", T0 + 100 * S, 0, 3)])
    ids = list(series_ids(db).values())
    assert index.nearest_profile(db, ids, T0 + 4 * S).total.tolist() == [1]
    assert index.nearest_profile(db, ids, T0 + 6 * S).total.tolist() == [2]
    assert index.nearest_profile(db, ids, T0 + 70 * S).total.tolist() == [3]
    assert index.nearest_profile(db, ids, -(2**63)).total.tolist() == [1]
    assert index.nearest_profile(db, ids, 2**63 - 1).total.tolist() == [3]
    assert len(index.nearest_profile(db, [], T0)) == 0


def test_stored_profiles_tells_a_retry_from_a_new_profile(db: Database) -> None:
    commit(db, "b1", [entry("a", T0, 0, 1, content_hash=-42), entry("a", T0 + S, 1, 1, content_hash=7)])
    fp = entry("a", 0, 0, 0).fingerprint
    asked = [(fp, T0, -42), (fp, T0, 43), (fp, T0 + S, 7), (fp + 1, T0, -42)]
    assert index.stored_profiles(db, "t", asked) == {(fp, T0, -42), (fp, T0 + S, 7)}
    assert index.stored_profiles(db, "other-tenant", asked) == set()


def test_replacing_blocks_switches_the_index_in_one_step(db: Database) -> None:
    first, second = [entry("a", T0, 0, 1)], [entry("a", T0 + S, 0, 2), entry("b", T0 + S, 1, 4)]
    commit(db, "b1", first)
    commit(db, "b2", second)
    ids = list(series_ids(db).values())
    old = index.profile_rows(db, ids, 0, 2**62)
    merged = old.take(np.arange(len(old)))
    merged = index.ProfileRows(merged.series_id, merged.time, merged.block, np.arange(len(old)), merged.total,
                               merged.content_hash, merged.blocks)
    index.replace_blocks(db, [(block("c1", first + second, level=1), merged)], ["b1", "b2"])
    rows = index.profile_rows(db, ids, 0, 2**62)
    assert sorted(zip(rows.block_id.tolist(), rows.row.tolist(), rows.total.tolist())) == \
        [("c1", 0, 1), ("c1", 1, 2), ("c1", 2, 4)]
    with db.connection() as conn:
        states = dict(conn.execute("SELECT id, state FROM blocks").fetchall())
    assert states == {"b1": "compacted", "b2": "compacted", "c1": "live"}


def test_the_per_profile_index_of_earlier_versions_is_carried_over(postgres_dsn: str) -> None:
    first = next(m for m in migrations() if m.version == 1)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(first.sql.encode())
        conn.execute("CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL,"
                     " applied_at timestamptz NOT NULL DEFAULT now())")
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES (1, 'initial')")
        conn.execute("INSERT INTO series (tenant, fingerprint, profile_type, labels, first_seen, last_seen)"
                     " VALUES ('t', 1, %s, '{\"instance\": \"a\"}', %s, %s)", (CPU, T0, T0 + 20 * S))
        for day in (T0 - T0 % (86_400 * S), T0 - T0 % (86_400 * S) + 86_400 * S):
            conn.execute(f"CREATE TABLE profiles_{day} PARTITION OF profiles FOR VALUES FROM ({day})"
                         f" TO ({day + 86_400 * S})")
        conn.execute("INSERT INTO blocks (id, tenant, key, min_time, max_time, level, bytes, profiles)"
                     " VALUES ('b1', 't', 'k1', %s, %s, 0, 1, 3)", (T0, T0 + 20 * S))
        for row, (t, total) in enumerate([(T0 + 20 * S, 5), (T0, 7), (T0 + 10 * S, 2**40)]):
            conn.execute("INSERT INTO profiles (tenant, series_id, time, block_id, row_in_block, total)"
                         " SELECT 't', id, %s, 'b1', %s, %s FROM series", (t, row, total))
    database = open_database(PostgresConfig(dsn=postgres_dsn))
    try:
        rows = index.profile_rows(database, list(series_ids(database).values()), 0, 2**62)
        assert rows.time.tolist() == [T0, T0 + 10 * S, T0 + 20 * S]
        assert rows.row.tolist() == [1, 2, 0]
        assert rows.total.tolist() == [7, 2**40, 5]
        assert np.array_equal(rows.block_id, ["b1"] * 3)
        with database.connection() as conn:
            assert conn.execute("SELECT to_regclass('profiles')").fetchone()[0] is None
    finally:
        database.close()


def test_totals_for_time_series_are_the_profiles_totals_without_where_they_are_stored(db: Database) -> None:
    commit(db, "b1", [entry("a", T0 + 20 * S, 0, 5), entry("a", T0, 1, 7), entry("b", T0 + 10 * S, 2, 11)])
    commit(db, "b2", [entry("a", T0 + 30 * S, 0, 13)])
    ids = list(series_ids(db).values())
    full = index.profile_rows(db, ids, T0 + 1, T0 + 30 * S)
    totals = index.profile_totals(db, ids, T0 + 1, T0 + 30 * S)
    order = np.argsort(totals.time)
    assert totals.time[order].tolist() == full.time.tolist()
    assert totals.series_id[order].tolist() == full.series_id.tolist()
    assert totals.total[order].tolist() == full.total.tolist() == [11, 5, 13]
    assert set(totals.block_id.tolist()) == {""} and set(totals.row.tolist()) == {-1}
    assert len(index.profile_totals(db, [], 0, 2**62)) == 0


def profiles_of(rows: index.ProfileRows) -> list[tuple]:
    return sorted(zip(rows.series_id.tolist(), rows.time.tolist(), rows.block_id.tolist(), rows.row.tolist()))


def test_a_merge_reads_the_same_profiles_by_block_and_series_without_totals(db: Database) -> None:
    commit(db, "b2", [entry("a", T0 + 30 * S, 0, 13), entry("b", T0 + 31 * S, 1, 17)])
    commit(db, "b1", [entry("a", T0 + 20 * S, 0, 5), entry("a", T0, 1, 7), entry("b", T0 + 10 * S, 2, 11)])
    ids = list(series_ids(db).values())
    full = index.profile_rows(db, ids, T0 + 1, T0 + 30 * S)
    merge = index.merge_rows(db, ids, T0 + 1, T0 + 30 * S)
    assert profiles_of(merge) == profiles_of(full) and len(merge) == 3  # T0 and T0 + 31 s are outside
    assert merge.block_id.tolist() == ["b1", "b1", "b2"]  # blocks in order, each block's rows together
    assert merge.total.tolist() == merge.content_hash.tolist() == [0, 0, 0]
    assert len(index.merge_rows(db, [], 0, 2**62)) == 0


def test_rows_name_their_blocks_by_codes_into_one_sorted_table(db: Database) -> None:
    commit(db, "b2", [entry("a", T0 + 30 * S, 0, 1), entry("b", T0 + 40 * S, 1, 1)])
    commit(db, "b1", [entry("a", T0, 0, 1)])
    commit(db, "b3", [entry("b", T0 + 50 * S, 0, 1)])
    rows = index.merge_rows(db, list(series_ids(db).values()), 0, 2**62)
    assert rows.blocks.tolist() == ["b1", "b2", "b3"] and rows.block.dtype == np.int32
    assert rows.block_id.tolist() == ["b1", "b2", "b2", "b3"]
    later = rows.take(np.flatnonzero(rows.time >= T0 + 40 * S))
    assert later.blocks.tolist() == ["b1", "b2", "b3"]  # the table is kept; the rows use part of it
    blocks, at = later.used_blocks()
    assert blocks.tolist() == ["b2", "b3"] and at.tolist() == [0, 1]
    built = index.ProfileRows.of(rows.series_id, rows.time, rows.block_id, rows.row, rows.total, rows.content_hash)
    assert built.blocks.tolist() == rows.blocks.tolist() and built.block.tolist() == rows.block.tolist()


def test_a_series_row_changes_once_an_hour_not_on_every_block(db: Database) -> None:
    hour = T0 - T0 % (3600 * S) + 3600 * S  # 00:00 of the next day, a whole hour ahead
    commit(db, "b1", [entry("a", hour + 5 * S, 0, 1)])

    def row() -> tuple:
        with db.connection() as conn:
            return conn.execute("SELECT xmin::text, first_seen, last_seen FROM series").fetchone()

    first = row()
    assert first[1:] == (hour, hour + 3600 * S - 1)
    commit(db, "b2", [entry("a", hour + 50 * 60 * S, 0, 1)])
    assert row() == first  # the same row version: no update, no dead tuple
    commit(db, "b3", [entry("a", hour + 70 * 60 * S, 0, 1)])
    assert row()[1:] == (hour, hour + 2 * 3600 * S - 1)
    ids = series_ids(db)
    assert index.find_series(db, "t", [], hour + 55 * 60 * S, hour + 56 * 60 * S)[0].id == ids["a"]
    assert index.time_bounds(db, "t") == (hour + 5 * S, hour + 70 * 60 * S)


def _seen(db: Database, fingerprint: int) -> tuple[int, int]:
    with db.connection() as conn:
        return conn.execute("SELECT first_seen, last_seen FROM series WHERE fingerprint = %s",
                            (fingerprint,)).fetchone()


def test_a_flush_of_series_known_within_their_hours_does_not_write_them_again(db: Database) -> None:
    known = index.KnownSeries()
    a = entry("a", T0 - 30 * S, 0, 1)  # T0 is 10 s before midnight: these are in the hour 23:00-24:00
    index.commit_block(db, block("b1", [a]), [a], known)
    hour = _seen(db, a.fingerprint)
    with db.connection() as conn:  # the row narrowed behind the cache's back: a write would widen it again
        conn.execute("UPDATE series SET last_seen = first_seen WHERE fingerprint = %s", (a.fingerprint,))
    later = entry("a", T0, 0, 2)  # the same hour: known, not written
    index.commit_block(db, block("b2", [later]), [later], known)
    assert _seen(db, a.fingerprint) == (hour[0], hour[0])
    next_hour = entry("a", T0 + 20 * S, 0, 3)  # past the known range: written, widened
    index.commit_block(db, block("b3", [next_hour]), [next_hour], known)
    assert _seen(db, a.fingerprint) == (hour[0], hour[1] + 3600 * S)
    ids = series_ids(db)
    rows = index.profile_rows(db, [ids["a"]], 0, 2**62)
    assert rows.block_id.tolist() == ["b1", "b2", "b3"] and rows.total.tolist() == [1, 2, 3]


def test_series_of_a_block_whose_transaction_failed_are_not_taken_as_known(db: Database) -> None:
    known = index.KnownSeries()
    a = entry("a", T0, 0, 1)
    index.commit_block(db, block("b1", [a]), [a], known)
    b = entry("b", T0, 0, 1)
    with pytest.raises(psycopg.errors.UniqueViolation):
        index.commit_block(db, block("b1", [b]), [b], known)  # the block id is taken: all of it rolls back
    assert "b" not in series_ids(db)
    assert known.ids("t", {b.fingerprint: (0, 0)}) == ({}, [b.fingerprint])
    index.commit_block(db, block("b2", [b]), [b], known)
    assert set(series_ids(db)) == {"a", "b"}


def test_counts_are_the_profiles_each_row_holds_in_the_range_cut_at_its_ends(db: Database) -> None:
    commit(db, "b1", [entry("a", T0 + i * S, i, 1) for i in range(10)] + [entry("b", T0 + 3 * S, 10, 1)])
    commit(db, "b2", [entry("a", T0 + 20 * S, 0, 1)], level=1)
    ids = series_ids(db)
    for start, end in ((0, 2**62), (T0 + 2 * S, T0 + 20 * S), (T0 + 4 * S, T0 + 6 * S), (T0 + 11 * S, T0 + 19 * S)):
        counts = index.profile_counts(db, list(ids.values()), start, end)
        rows = index.profile_rows(db, list(ids.values()), start, end)
        got = {(s, b): (int(c), int(f), int(la)) for s, b, c, f, la in zip(
            counts.series_id.tolist(), counts.block_id.tolist(), counts.count, counts.first, counts.last)}
        want = {}
        for s, b, t in zip(rows.series_id.tolist(), rows.block_id.tolist(), rows.time.tolist()):
            c, f, la = want.get((s, b), (0, t, t))
            want[s, b] = (c + 1, min(f, t), max(la, t))
        assert got == want, (start, end)
    assert len(index.profile_counts(db, [], 0, 2**62)) == 0


def test_a_merge_plan_takes_rows_in_whole_hours_of_blocks_with_trees_whole_and_sends_the_rest(db: Database) -> None:
    hour = 3600 * S
    h0 = T0 - T0 % hour + hour  # an hour's start after T0
    index.commit_block(db, dataclasses.replace(block("trees", [entry("a", h0, 0, 1)], 1), max_time=h0 + hour - S,
                                               trees=True),
                       [entry("a", h0 + i * S, i, 1) for i in range(5)] + [entry("b", h0 + hour - S, 5, 1)])
    commit(db, "plain", [entry("a", h0 + 10 * S, 0, 1)], level=1)  # in a whole hour, but without trees
    index.commit_block(db, dataclasses.replace(block("late", [entry("a", h0 + hour, 0, 1)], 1), trees=True),
                       [entry("a", h0 + hour + i * S, i, 1) for i in range(4)])  # cut by the range's end
    ids = series_ids(db)
    span = (h0, h0 + hour - 1)
    plan = mergeplan.merge_plan(db, list(ids.values()), h0 - 5 * S, h0 + hour + 2 * S, span)
    whole = sorted(zip(plan.whole.series_id.tolist(), plan.whole.blocks[plan.whole.block].tolist(),
                       plan.whole.count.tolist(), plan.whole.fingerprint.tolist()))
    fp = {name: entry(name, 0, 0, 0).fingerprint for name in "ab"}
    assert whole == sorted([(ids["a"], "trees", 5, fp["a"]), (ids["b"], "trees", 1, fp["b"])])
    assert profiles_of(plan.rows) == sorted([(ids["a"], h0 + 10 * S, "plain", 0)] + [
        (ids["a"], h0 + hour + i * S, "late", i) for i in range(3)])  # the fourth is past the end
    only_b = mergeplan.merge_plan(db, list(ids.values()), h0 - 5 * S, h0 + hour + 2 * S, span, tree_series=[ids["b"]])
    assert only_b.whole.series_id.tolist() == [ids["b"]]
    assert len(only_b.rows) == 5 + 1 + 3  # a's rows of the trees block come as profiles
    nothing_whole = mergeplan.merge_plan(db, list(ids.values()), h0 + S, h0 + hour + 2 * S, (h0 + hour, h0 + hour - 1))
    assert len(nothing_whole.whole) == 0
    assert profiles_of(nothing_whole.rows) == profiles_of(index.merge_rows(db, list(ids.values()), h0 + S,
                                                                           h0 + hour + 2 * S))
    assert len(mergeplan.merge_plan(db, [], 0, 2**62, span).whole) == 0
    for (start, end), whole_span in (((h0 - 5 * S, h0 + hour + 2 * S), span),
                                     ((h0 + S, h0 + hour + 2 * S), (h0 + hour, h0 + hour - 1)),
                                     ((0, 2**62), (h0, h0 + 2 * hour - 1))):
        # a plan's counts are what the index counts (a split weighs a merge by them)
        assert by_row(mergeplan.merge_plan(db, list(ids.values()), start, end, whole_span).counts()) == by_row(
            index.profile_counts(db, list(ids.values()), start, end)), (start, end)


def by_row(counts: index.EntryCounts) -> dict:
    return {(s, b): (int(c), int(f), int(la)) for s, b, c, f, la in zip(
        counts.series_id.tolist(), counts.block_id.tolist(), counts.count, counts.first, counts.last)}
