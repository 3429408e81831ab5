"""Postgres plumbing: connection pool, embedded server, schema migrations, day partitions.

`open_database` connects (or starts the embedded server from the `pgserver` wheel), applies the SQL
migrations in `flamewatch.storage.migrations` under an advisory lock, and opens a pool. The queries
themselves live in `index.py`; this module owns only getting a healthy, current schema to them.

psycopg's connection errors (`OperationalError`, the pool's `PoolTimeout`) become
`StorageUnavailable` naming the server; other database errors are left to the caller. Outages are
handled by `Reachability`, not by the pool's reconnect backoff: while the server is down a request is
refused at once, and within `PROBE_INTERVAL_S` of it coming back requests get fresh connections.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import subprocess
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import ClassVar

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout

from flamewatch.storage.errors import StorageConfigError, StorageError, StorageUnavailable
from flamewatch.storage.reachability import Reachability

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5  # libpq's connect_timeout, per connection attempt
OPEN_TIMEOUT_S = 10.0  # for the pool to reach pool_min connections at open
ACQUIRE_TIMEOUT_S = 10.0  # for `Database.connection()` to get a connection from a busy pool
PROBE_CONNECT_TIMEOUT_S = 2  # libpq treats anything lower as 2
# A pool slot whose reconnection keeps failing is given up after this long instead of being retried
# with a doubling delay for minutes; the next request grows the pool afresh, with no delay to sit out.
RECONNECT_TIMEOUT_S = 2.0
_MIGRATIONS_PACKAGE = "flamewatch.storage.migrations"
_MIGRATION_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")
_PARTITION_NAME = re.compile(r"^block_series_(\d{8})$")
_DAY_NS = 86_400 * 10**9
_EPOCH_DAY = date(1970, 1, 1)


@dataclass(frozen=True)
class PostgresConfig:
    """A server to connect to (`dsn`), or else an embedded one kept in `data_dir`."""

    dsn: str | None = None
    data_dir: str | None = None
    pool_min: int = 1
    pool_max: int = 8


class EmbeddedPostgres:
    """A Postgres server from the `pgserver` wheel, listening on a Unix socket in `data_dir`.

    The server outlives this process (pgserver's `cleanup_mode=None`), so a crash leaves it running
    and the next start on the same directory simply reuses it; a cold start on an existing directory
    takes a fraction of a second. `stop()` stops it once no other handle needs it: pgserver counts
    the processes using the directory, this class counts the handles within this process. A process
    killed with SIGKILL never leaves pgserver's count, which would keep the server running after every
    later clean stop; so the processes that no longer exist are taken out of it at start and at stop.
    """

    _handles: ClassVar[dict[Path, int]] = {}
    _handles_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, data_dir: str | Path) -> None:
        path = Path(data_dir).resolve()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._handles_lock:
                _forget_dead_handles(path)
                self._server = _pgserver().get_server(path, cleanup_mode=None)
                self._handles[path] = self._handles.get(path, 0) + 1
        except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
            raise StorageUnavailable(f"cannot start embedded Postgres in {path}: {exc}") from exc
        self.data_dir = path
        self._stopped = False

    @property
    def dsn(self) -> str:
        return self._server.get_uri()

    def stop(self) -> None:
        """Release this handle; the last one in the last process stops the server."""
        with self._handles_lock:
            if self._stopped:
                return
            self._stopped = True
            self._handles[self.data_dir] -= 1
            if self._handles[self.data_dir] > 0:
                return
            del self._handles[self.data_dir]
            self._stop_server()

    def _stop_server(self) -> None:
        self._server.cleanup_mode = "stop"
        try:
            _forget_dead_handles(self.data_dir)
            self._server.cleanup()
        except (OSError, subprocess.SubprocessError) as exc:
            raise StorageError(f"cannot stop embedded Postgres in {self.data_dir}: {exc}") from exc
        finally:
            self._server.cleanup_mode = None


class Database:
    """A connection pool on a migrated database, and the embedded server if it started one."""

    def __init__(self, pool: ConnectionPool, dsn: str, embedded: EmbeddedPostgres | None = None) -> None:
        self._pool = pool
        self._dsn = dsn
        self._embedded = embedded
        self.where = describe_dsn(dsn)  # "Postgres at host:port/db", for messages; never holds a password
        self._reachability = Reachability(self.where, self._probe, on_back=pool.drain)

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection; the transaction commits when the block exits cleanly.

        Connection failures (also during the block) raise `StorageUnavailable`, at once while the
        server is known to be down.
        """
        self._reachability.check()
        conn = self._acquire()
        try:
            with conn:
                yield conn
        except psycopg.OperationalError as exc:
            if conn.broken and self._reachability.recheck():
                self._pool.drain()  # a restarted server broke every pooled connection, not only this one
            raise StorageUnavailable(f"{self.where} unavailable: {exc}") from exc
        finally:
            self._pool.putconn(conn)

    @property
    def dsn(self) -> str:
        """What another process connects with to reach the same database (the embedded server's socket
        included). It may hold a password: hand it over in an environment variable, never log it."""
        return self._dsn

    def check_available(self) -> None:
        """Raise `StorageUnavailable` at once if the server is known to be down (no round trip)."""
        self._reachability.check()

    def ping(self) -> None:
        """Connect afresh and raise `StorageUnavailable` unless the server answers (for readiness)."""
        self._reachability.ping()

    def close(self) -> None:
        self._pool.close()
        if self._embedded is not None:
            self._embedded.stop()

    def _acquire(self) -> psycopg.Connection:
        """A pooled connection that answered a round trip. The first one found broken while the server
        answers means the server restarted: the pool is refilled and one more is tried."""
        for _ in range(2):
            conn = self._getconn()
            try:
                ConnectionPool.check_connection(conn)
                return conn
            except psycopg.OperationalError as exc:
                self._pool.putconn(conn)
                if not self._reachability.recheck():
                    raise self._reachability.unavailable() from exc
                self._pool.drain()
                error = exc
        raise StorageUnavailable(f"{self.where} unavailable: {error}") from error

    def _getconn(self) -> psycopg.Connection:
        try:
            return self._pool.getconn(timeout=ACQUIRE_TIMEOUT_S)
        except PoolTimeout as exc:
            if not self._reachability.recheck():
                raise self._reachability.unavailable() from exc
            raise StorageUnavailable(f"{self.where}: no pooled connection free within {ACQUIRE_TIMEOUT_S:.0f} s "
                                     "(every connection is busy)") from exc

    def _probe(self) -> None:
        try:
            psycopg.connect(self._dsn, autocommit=True, connect_timeout=PROBE_CONNECT_TIMEOUT_S).close()
        except psycopg.OperationalError as exc:
            raise StorageUnavailable(_first_line(exc)) from exc


def open_database(config: PostgresConfig) -> Database:
    """Connect to `config.dsn` (or start the embedded server), migrate, and open the pool."""
    embedded = _embedded_for(config)
    dsn = _with_defaults(config.dsn or embedded.dsn)
    where = describe_dsn(dsn)
    try:
        with _connect(dsn, where) as conn:
            migrate(conn)
        pool = _open_pool(dsn, where, config)
    except BaseException:
        if embedded is not None:
            embedded.stop()
        raise
    return Database(pool, dsn, embedded)


def describe_dsn(dsn: str) -> str:
    """`Postgres at host:port/dbname`, safe to log (no user or password)."""
    params = _parse_dsn(dsn)
    host = params.get("host") or params.get("hostaddr") or "localhost"
    return f"Postgres at {host}:{params.get('port') or 5432}/{params.get('dbname') or '(default)'}"


def _embedded_for(config: PostgresConfig) -> EmbeddedPostgres | None:
    if config.dsn:
        return None
    if not config.data_dir:
        raise StorageConfigError("postgres: set either dsn or data_dir (for the embedded server)")
    return EmbeddedPostgres(config.data_dir)


def _forget_dead_handles(pgdata: Path) -> None:
    """Take the processes that no longer exist out of pgserver's list of the processes using `pgdata`
    (its `.handle_pids.json`, kept under its inter-process lock), so the last live one stops the server."""
    handles = pgdata / ".handle_pids.json"
    with _pgserver().postgres_server.PostgresServer._lock:
        try:
            pids = json.loads(handles.read_text())
        except (OSError, ValueError):
            return  # no list yet (a new directory), or one pgserver will rewrite
        alive = [pid for pid in pids if _process_exists(pid)]
        if alive != pids:
            handles.write_text(json.dumps(alive))
            logger.info("embedded Postgres in %s: forgot the processes %s, which ended without stopping it",
                        pgdata, sorted(set(pids) - set(alive)))


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _pgserver() -> ModuleType:
    """Import pgserver lazily: it starts nothing at import, but warns when XDG_RUNTIME_DIR is unset."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import pgserver
    return pgserver


def _first_line(exc: Exception) -> str:
    """libpq's reason without its hints on further lines ("Is the server running on that host...")."""
    return str(exc).strip().split("\n", 1)[0]


def _parse_dsn(dsn: str) -> dict[str, str]:
    try:
        return {key: str(value) for key, value in conninfo_to_dict(dsn).items()}
    except psycopg.ProgrammingError as exc:
        raise StorageConfigError(f"postgres: invalid dsn: {exc}") from exc


def _with_defaults(dsn: str) -> str:
    params = _parse_dsn(dsn)
    params.setdefault("connect_timeout", str(CONNECT_TIMEOUT_S))
    params.setdefault("application_name", "flamewatch")
    # Text is UTF-8 on our side whatever the database says: a SQL_ASCII database would otherwise make the
    # client encoding SQL_ASCII too, and every text column would come back as bytes.
    params["client_encoding"] = "UTF8"
    return make_conninfo("", **params)


@contextlib.contextmanager
def _connect(dsn: str, where: str) -> Iterator[psycopg.Connection]:
    """One direct connection, so a refused or failed login reports libpq's own reason."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            yield conn
    except psycopg.OperationalError as exc:
        raise StorageUnavailable(f"cannot connect to {where}: {exc}") from exc


def _open_pool(dsn: str, where: str, config: PostgresConfig) -> ConnectionPool:
    pool = ConnectionPool(
        dsn,
        min_size=config.pool_min,
        max_size=config.pool_max,
        open=False,
        reconnect_timeout=RECONNECT_TIMEOUT_S,
        name="flamewatch",
    )
    try:
        pool.open(wait=True, timeout=OPEN_TIMEOUT_S)
    except psycopg.OperationalError as exc:
        pool.close()
        raise StorageUnavailable(f"cannot connect to {where}: {exc}") from exc
    return pool


# --- migrations -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    """The SQL files shipped in `flamewatch.storage.migrations`, in version order."""
    found = []
    for entry in resources.files(_MIGRATIONS_PACKAGE).iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise StorageError(f"duplicate migration versions in {_MIGRATIONS_PACKAGE}: {versions}")
    return found


def migrate(conn: psycopg.Connection) -> list[int]:
    """Apply the migrations missing from `schema_migrations`, each in its own transaction.

    Runs under a session advisory lock, so replicas starting together apply each one exactly once.
    Returns the versions applied by this call.
    """
    with _autocommit(conn), _advisory_lock(conn, "schema_migrations"):
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        return [_apply(conn, m) for m in migrations() if m.version not in done]


def _apply(conn: psycopg.Connection, migration: Migration) -> int:
    label = f"{migration.version:04d}_{migration.name}"
    try:
        with conn.transaction():
            # Without parameters psycopg sends the text as written, so a file may hold many statements.
            conn.execute(migration.sql.encode())
            conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
    except psycopg.OperationalError:
        raise
    except psycopg.Error as exc:
        raise StorageError(f"migration {label} failed: {exc}") from exc
    logger.info("applied schema migration %s", label)
    return migration.version


@contextlib.contextmanager
def _autocommit(conn: psycopg.Connection) -> Iterator[None]:
    """Autocommit for the block, so each `conn.transaction()` is a real transaction."""
    if conn.info.transaction_status != TransactionStatus.IDLE:
        raise StorageError("this needs a connection outside any transaction")
    previous = conn.autocommit
    conn.autocommit = True
    try:
        yield
    finally:
        if not conn.closed:
            conn.autocommit = previous


@contextlib.contextmanager
def _advisory_lock(conn: psycopg.Connection, name: str) -> Iterator[None]:
    """A session lock; if the connection breaks, the server releases it with the session."""
    key = advisory_key(name)
    conn.execute("SELECT pg_advisory_lock(%s)", (key,))
    try:
        yield
    finally:
        with contextlib.suppress(psycopg.OperationalError):
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


@contextlib.contextmanager
def try_lock(db: Database, name: str) -> Iterator[bool]:
    """Try to take the cluster-wide lock `name` without waiting; yields whether this process holds it.
    The lock lives in a pooled connection's session and is released when the block exits."""
    key = advisory_key(name)
    with db.connection() as conn:
        mine = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
        try:
            yield mine
        finally:
            if mine:
                with contextlib.suppress(psycopg.OperationalError):
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


def advisory_key(name: str) -> int:
    """A stable signed 64-bit advisory lock key for `name`, namespaced to Flamewatch."""
    digest = hashlib.blake2b(f"flamewatch:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


# --- day partitions of `block_series` ----------------------------------------------------------------

PARTITIONED = "block_series"  # the index table partitioned by UTC day, so retention is a DROP TABLE
_known_partitions: set[tuple[str, str]] = set()  # (database identity, partition name)


def partition_name(day: date) -> str:
    return f"{PARTITIONED}_{day:%Y%m%d}"


def ensure_day_partition(conn: psycopg.Connection, day_start_ns: int) -> str:
    """Create the partition for the UTC day containing `day_start_ns` if missing.

    Safe when several writers race. Call it before the write transaction, not inside it: creating a
    partition locks the whole parent table until the transaction that did it ends.
    Returns the partition's name.
    """
    day = utc_day(day_start_ns)
    name = partition_name(day)
    cache_key = (_database_identity(conn), name)
    if cache_key in _known_partitions:
        return name
    start = _day_start_ns(day)
    create = sql.SQL("CREATE TABLE IF NOT EXISTS {} PARTITION OF {} FOR VALUES FROM ({}) TO ({})")
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_key(name),))
        conn.execute(create.format(sql.Identifier(name), sql.Identifier(PARTITIONED), sql.Literal(start),
                                   sql.Literal(start + _DAY_NS)))
    _known_partitions.add(cache_key)
    return name


def vacuum(db: Database, table: str, full: bool = False, lock_timeout_s: float = 2.0) -> bool:
    """VACUUM a table (FULL: rewrite it, returning all dead space to the system), waiting at most
    `lock_timeout_s` for its lock so readers are never held up behind it; returns whether it ran."""
    statement = sql.SQL("VACUUM (FULL) {}" if full else "VACUUM {}").format(sql.Identifier(table))
    with db.connection() as conn, _autocommit(conn):
        conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(f"{int(lock_timeout_s * 1000)}ms")))
        try:
            conn.execute(statement)
        except psycopg.errors.LockNotAvailable:
            logger.info("vacuum of %s skipped: the table was busy", table)
            return False
        finally:
            conn.execute("RESET lock_timeout")
    return True


def truncate_if_empty(db: Database, table: str, lock_timeout_s: float = 2.0) -> bool:
    """TRUNCATE a table that holds no live row, returning its pages and its indexes' pages at once
    (VACUUM leaves index pages allocated); the lock held meanwhile keeps writers out, and is waited for
    at most `lock_timeout_s`. Returns whether it truncated."""
    name = sql.Identifier(table)
    with db.connection() as conn:
        try:
            with conn.transaction():
                timeout = sql.Literal(f"{int(lock_timeout_s * 1000)}ms")
                conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(timeout))
                conn.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(name))
                if conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(name)).fetchone()[0]:
                    return False
                conn.execute(sql.SQL("TRUNCATE {}").format(name))
        except psycopg.errors.LockNotAvailable:
            logger.info("truncating %s skipped: the table was busy", table)
            return False
    return True


def forget_partition(conn: psycopg.Connection, name: str) -> None:
    """Tell the cache of known partitions that `name` was dropped."""
    _known_partitions.discard((_database_identity(conn), name))


def day_partitions(conn: psycopg.Connection) -> list[tuple[str, date]]:
    """The day partitions that exist, oldest first."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_inherits i"
        " JOIN pg_class c ON c.oid = i.inhrelid"
        " WHERE i.inhparent = %s::regclass", (PARTITIONED,)
    ).fetchall()
    found = [(name, _PARTITION_NAME.match(name)) for (name,) in rows]
    days = [(name, datetime.strptime(m[1], "%Y%m%d").date()) for name, m in found if m]
    return sorted(days, key=lambda item: item[1])


def utc_day(time_ns: int) -> date:
    return _EPOCH_DAY + timedelta(days=time_ns // _DAY_NS)


def _day_start_ns(day: date) -> int:
    return (day - _EPOCH_DAY).days * _DAY_NS


def _database_identity(conn: psycopg.Connection) -> str:
    info = conn.info
    return f"{info.host}:{info.port}/{info.dbname}"
