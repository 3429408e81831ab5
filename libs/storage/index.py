"""The profile index in Postgres: series, blocks and one row per stored profile.

Writes happen in one transaction per block, after the block object is durable in the object store,
so an index row never points at a missing object. Reads select series by label matchers and return
profile rows as numpy columns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from psycopg.types.json import Jsonb

from flamewatch.labels.selector import Matcher
from flamewatch.storage.postgres import Database, ensure_day_partition

_DAY_NS = 86_400 * 10**9


@dataclass(frozen=True)
class BlockRecord:
    id: str
    tenant: str
    key: str
    min_time: int
    max_time: int
    level: int
    bytes: int
    profiles: int


@dataclass(frozen=True)
class IndexEntry:
    """One profile of a block: its series and where it sits."""

    fingerprint: int
    labels: dict[str, str]
    profile_type: str
    time_ns: int
    row: int
    total: int


@dataclass(frozen=True)
class Series:
    id: int
    labels: dict[str, str]


def commit_block(db: Database, block: BlockRecord, entries: Sequence[IndexEntry]) -> None:
    """Index a block whose object is already stored: series, block row and profile rows, atomically."""
    days = {t - t % _DAY_NS for t in (e.time_ns for e in entries)}
    with db.connection() as conn:
        for day in sorted(days):
            ensure_day_partition(conn, day)
    with db.connection() as conn, conn.transaction():
        ids = _upsert_series(conn, block.tenant, entries)
        conn.execute(
            "INSERT INTO blocks (id, tenant, key, min_time, max_time, level, bytes, profiles)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (block.id, block.tenant, block.key, block.min_time, block.max_time, block.level, block.bytes,
             block.profiles),
        )
        with conn.cursor().copy(
            "COPY profiles (tenant, series_id, time, block_id, row_in_block, total) FROM STDIN"
        ) as copy:
            for e in entries:
                copy.write_row((block.tenant, ids[e.fingerprint], e.time_ns, block.id, e.row, e.total))


def _upsert_series(conn, tenant: str, entries: Sequence[IndexEntry]) -> dict[int, int]:
    first: dict[int, IndexEntry] = {}
    span: dict[int, tuple[int, int]] = {}
    for e in entries:
        first.setdefault(e.fingerprint, e)
        lo, hi = span.get(e.fingerprint, (e.time_ns, e.time_ns))
        span[e.fingerprint] = (min(lo, e.time_ns), max(hi, e.time_ns))
    fps = sorted(first)  # a stable order keeps concurrent upserts from deadlocking
    rows = conn.execute(
        "INSERT INTO series (tenant, fingerprint, profile_type, labels, first_seen, last_seen)"
        " SELECT %s, * FROM unnest(%s::bigint[], %s::text[], %s::jsonb[], %s::bigint[], %s::bigint[])"
        " ON CONFLICT (tenant, fingerprint) DO UPDATE SET"
        "  first_seen = LEAST(series.first_seen, excluded.first_seen),"
        "  last_seen = GREATEST(series.last_seen, excluded.last_seen)"
        " RETURNING fingerprint, id",
        (tenant, fps, [first[f].profile_type for f in fps], [Jsonb(first[f].labels) for f in fps],
         [span[f][0] for f in fps], [span[f][1] for f in fps]),
    ).fetchall()
    return dict(rows)


# ------------------------------------------------------------------------------------------ reading


def find_series(db: Database, tenant: str, matchers: Sequence[Matcher], start: int, end: int,
                profile_type: str | None = None) -> list[Series]:
    """Series with a profile in [start, end] whose labels satisfy every matcher."""
    sql = ["SELECT id, labels FROM series WHERE tenant = %s AND last_seen >= %s AND first_seen <= %s"]
    args: list = [tenant, start, end]
    if profile_type is not None:
        sql.append("AND profile_type = %s")
        args.append(profile_type)
    equal = {m.name: m.value for m in matchers if m.op == "=" and m.value}
    if equal:
        sql.append("AND labels @> %s::jsonb")  # served by the GIN index; the rest is checked below
        args.append(json.dumps(equal))
    with db.connection() as conn:
        rows = conn.execute(" ".join(sql) + " ORDER BY id", args).fetchall()
    return [Series(i, labels) for i, labels in rows if all(m.matches(labels.get(m.name)) for m in matchers)]


@dataclass(frozen=True, eq=False)
class ProfileRows:
    series_id: np.ndarray  # int64
    time: np.ndarray  # int64 ns
    block_id: np.ndarray  # object (str)
    row: np.ndarray  # int64
    total: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.series_id)


def profile_rows(db: Database, series_ids: Sequence[int], start: int, end: int) -> ProfileRows:
    return _rows(db, "time BETWEEN %s AND %s ORDER BY time", [list(series_ids), start, end])


def nearest_profile(db: Database, series_ids: Sequence[int], time_ns: int) -> ProfileRows:
    """The one profile closest to time_ns among the series (empty if they have none)."""
    # numeric: a time near either end of the int64 range would overflow bigint subtraction.
    return _rows(db, "TRUE ORDER BY abs(time::numeric - %s) LIMIT 1", [list(series_ids), time_ns])


def _rows(db: Database, where: str, args: list) -> ProfileRows:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT series_id, time, block_id, row_in_block, total FROM profiles"
            " WHERE series_id = ANY(%s) AND " + where, args
        ).fetchall()
    cols = list(zip(*rows, strict=True)) if rows else [(), (), (), (), ()]
    return ProfileRows(np.array(cols[0], np.int64), np.array(cols[1], np.int64), np.array(cols[2], object),
                       np.array(cols[3], np.int64), np.array(cols[4], np.int64))


def block_keys(db: Database, block_ids: Sequence[str]) -> dict[str, str]:
    with db.connection() as conn:
        return dict(conn.execute("SELECT id, key FROM blocks WHERE id = ANY(%s)", [list(block_ids)]).fetchall())


def profile_types(db: Database, tenant: str, start: int, end: int) -> list[str]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT DISTINCT profile_type FROM series WHERE tenant = %s AND last_seen >= %s AND first_seen <= %s"
            " ORDER BY 1", [tenant, start, end]
        ).fetchall()
    return [r[0] for r in rows]
