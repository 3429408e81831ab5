"""Postgres plumbing against a real server: migrations, day partitions, failures, the embedded server."""

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from infra import leftovers
from infra.ports import free_port
from infra.postgres import with_database

from flamewatch.storage import postgres
from flamewatch.storage.errors import StorageUnavailable
from flamewatch.storage.postgres import (
    Database,
    PostgresConfig,
    day_partitions,
    ensure_day_partition,
    migrate,
    migrations,
    open_database,
)

pytestmark = pytest.mark.postgres

NOV_14_NS = int(datetime(2023, 11, 14, tzinfo=UTC).timestamp()) * 10**9
DAY_NS = 86_400 * 10**9


def applied(conn: psycopg.Connection) -> list[tuple[int, str, datetime]]:
    return conn.execute("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").fetchall()


def run_together(count: int, work: Callable[[], object]) -> list[BaseException]:
    """Run `work` in `count` threads released at the same moment; return what they raised."""
    barrier, errors = threading.Barrier(count), []

    def run() -> None:
        barrier.wait()
        try:
            work()
        except BaseException as exc:  # reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


# Migrations


def test_open_applies_every_migration_once(db: Database) -> None:
    with db.connection() as conn:
        assert [(v, n) for v, n, _ in applied(conn)] == [(m.version, m.name) for m in migrations()]
        tables = {row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert {"series", "blocks", "block_series", "schema_migrations"} <= tables


def test_a_second_open_is_a_no_op(postgres_dsn: str, db: Database) -> None:
    with db.connection() as conn:
        before = applied(conn)
    open_database(PostgresConfig(dsn=postgres_dsn)).close()
    with db.connection() as conn:
        assert applied(conn) == before
    with psycopg.connect(postgres_dsn) as conn:
        assert migrate(conn) == []


def test_concurrent_migrators_apply_each_migration_once(postgres_dsn: str) -> None:
    def migrate_on_own_connection() -> None:
        with psycopg.connect(postgres_dsn) as conn:
            migrate(conn)

    assert run_together(4, migrate_on_own_connection) == []
    with psycopg.connect(postgres_dsn) as conn:
        assert [v for v, _, _ in applied(conn)] == [m.version for m in migrations()]


def test_concurrent_opens_all_succeed(postgres_dsn: str) -> None:
    opened: list[Database] = []
    assert run_together(3, lambda: opened.append(open_database(PostgresConfig(dsn=postgres_dsn)))) == []
    for database in opened:
        database.close()


# Day partitions


def partition_of(conn: psycopg.Connection, time_ns: int) -> str:
    conn.execute(
        "INSERT INTO block_series (block_id, series_id, min_time, max_time, profiles, times, rows, totals, hashes)"
        " VALUES ('b', 1, %s, %s, 1, '', '', '', '')",
        (time_ns, time_ns),
    )
    return conn.execute("SELECT tableoid::regclass::text FROM block_series WHERE min_time = %s",
                        (time_ns,)).fetchone()[0]


def test_rows_land_in_the_partition_of_their_utc_day(db: Database) -> None:
    with db.connection() as conn:
        assert ensure_day_partition(conn, NOV_14_NS) == "block_series_20231114"
        assert ensure_day_partition(conn, NOV_14_NS + DAY_NS - 1) == "block_series_20231114"
        assert ensure_day_partition(conn, NOV_14_NS + DAY_NS) == "block_series_20231115"
        assert partition_of(conn, NOV_14_NS) == "block_series_20231114"
        assert partition_of(conn, NOV_14_NS + DAY_NS - 1) == "block_series_20231114"
        assert partition_of(conn, NOV_14_NS + DAY_NS) == "block_series_20231115"


def test_a_row_without_its_partition_is_refused(db: Database) -> None:
    with db.connection() as conn, pytest.raises(psycopg.errors.CheckViolation, match="no partition"):
        partition_of(conn, NOV_14_NS)


def test_concurrent_writers_create_a_partition_once(db: Database, postgres_dsn: str) -> None:
    def ensure_on_own_connection() -> None:
        with psycopg.connect(postgres_dsn) as conn:
            ensure_day_partition(conn, NOV_14_NS)

    postgres._known_partitions.clear()  # every thread must really try to create it
    assert run_together(4, ensure_on_own_connection) == []
    with db.connection() as conn:
        assert [name for name, _ in day_partitions(conn)] == ["block_series_20231114"]


def test_known_partitions_are_not_created_again(db: Database, postgres_dsn: str) -> None:
    with db.connection() as conn:
        ensure_day_partition(conn, NOV_14_NS)
        conn.execute("SET lock_timeout = '50ms'")
        with psycopg.connect(postgres_dsn) as other:  # holds the lock a creation would need
            other.execute("LOCK TABLE block_series IN ACCESS EXCLUSIVE MODE")
            assert ensure_day_partition(conn, NOV_14_NS + 3600 * 10**9) == "block_series_20231114"


# Failures


def test_an_unreachable_server_gives_storage_unavailable_naming_the_host() -> None:
    port = free_port()
    started = time.monotonic()
    with pytest.raises(StorageUnavailable, match=f"Postgres at 127.0.0.1:{port}/flamewatch"):
        open_database(PostgresConfig(dsn=f"postgresql://flamewatch@127.0.0.1:{port}/flamewatch"))
    assert time.monotonic() - started < 5


def test_a_connection_broken_mid_use_gives_storage_unavailable(db: Database) -> None:
    with pytest.raises(StorageUnavailable, match="Postgres at"), db.connection() as conn:
        conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
    with db.connection() as conn:  # the pool replaced the broken connection
        assert conn.execute("SELECT 1").fetchone() == (1,)


# The embedded server


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A directory outside pytest's tmp_path: run as root, pgserver starts Postgres as the user
    `pgserver` and opens up every parent folder to it, but each new pytest session (another run at the
    same time) resets the tmp_path root to 0700."""
    directory = leftovers.work_dir("embedded")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_embedded_mode_starts_in_an_empty_directory_and_reuses_it(data_dir: Path) -> None:
    config = PostgresConfig(data_dir=str(data_dir / "data" / "postgres"))
    first = open_database(config)
    with first.connection() as conn:
        migrated = applied(conn)
        conn.execute("CREATE TABLE kept (x int)")
    first.close()
    assert not (data_dir / "data" / "postgres" / "postmaster.pid").exists()

    second = open_database(config)
    with second.connection() as conn:
        assert applied(conn) == migrated
        assert conn.execute("SELECT count(*) FROM kept").fetchone() == (0,)
    second.close()


def test_the_embedded_server_stops_with_its_last_handle(data_dir: Path) -> None:
    config = PostgresConfig(data_dir=str(data_dir / "postgres"))
    first, second = open_database(config), open_database(config)
    first.close()
    with second.connection() as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    second.close()
    assert not (data_dir / "postgres" / "postmaster.pid").exists()


def test_a_sql_ascii_database_still_gives_text(_postgres_server: str) -> None:
    """A database created with SQL_ASCII (no encoding checks) makes libpq's client encoding SQL_ASCII too,
    and psycopg then hands back bytes where Flamewatch expects text; every connection asks for UTF8."""
    name = f"flamewatch_test_ascii_{time.time_ns()}"
    with psycopg.connect(_postgres_server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" ENCODING \'SQL_ASCII\' LC_COLLATE \'C\' LC_CTYPE \'C\' '
                      "TEMPLATE template0")
    try:
        database = open_database(PostgresConfig(dsn=with_database(_postgres_server, name)))
        try:
            with database.connection() as conn:
                assert conn.execute("SHOW server_encoding").fetchone()[0] == "SQL_ASCII"
                assert conn.execute("SELECT %s::text", ["café ☕"]).fetchone()[0] == "café ☕"
        finally:
            database.close()
    finally:
        with psycopg.connect(_postgres_server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
