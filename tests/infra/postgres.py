"""A Postgres server for the tests and a fresh, empty database per test on it.

The server is the one named by a DSN (for example from `FLAMEWATCH_TEST_POSTGRES_DSN`) or, without one,
a server from the `pgserver` wheel in a temporary directory, started once and deleted at the end.
"""

import contextlib
import shutil
import uuid
import warnings
from collections.abc import Iterator
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from . import leftovers

DATABASE_PREFIX = "flamewatch_test_"


@contextlib.contextmanager
def server(dsn: str | None = None) -> Iterator[str]:
    """Yield an administrative DSN: `dsn` itself, or that of an embedded server run for the duration."""
    if dsn:
        yield dsn
        return
    with _embedded_server() as embedded_dsn:
        yield embedded_dsn


@contextlib.contextmanager
def _embedded_server() -> Iterator[str]:
    with warnings.catch_warnings():
        # pgserver asks platformdirs for a runtime directory at import; without XDG_RUNTIME_DIR that
        # warns (and the tests turn warnings into errors) before falling back to /tmp/runtime-<uid>.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import pgserver  # imported here: only needed when no server was given

    workdir = leftovers.work_dir("postgres")
    try:
        pg = pgserver.get_server(workdir / "pgdata", cleanup_mode="delete")
        try:
            yield pg.get_uri()
        finally:
            pg.cleanup()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def fresh_database(admin_dsn: str) -> Iterator[str]:
    """Create an empty database with a unique name, yield its DSN, and drop it afterwards.

    The drop uses FORCE so that connections a test leaked do not keep the database alive.
    """
    name = DATABASE_PREFIX + uuid.uuid4().hex[:16]
    _execute(admin_dsn, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(admin_dsn, name)
    finally:
        _execute(admin_dsn, sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def with_database(dsn: str, database: str) -> str:
    """The `postgresql://` URI of `dsn` with its database replaced by `database`.

    URIs keep their host, user and query (pgserver's `?host=/socket/dir` included); key=value
    strings are rewritten as a URI with every parameter in the query.
    """
    if dsn.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(dsn)
        return urlunsplit(parts._replace(path="/" + quote(database, safe="")))
    params = {key: value for key, value in conninfo_to_dict(dsn).items() if key != "dbname"}
    return f"postgresql:///{quote(database, safe='')}?{urlencode(params)}"


def _execute(dsn: str, statement: sql.Composable) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statement)
