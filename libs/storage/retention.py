"""What leaves the store, and when: blocks older than their tenant's retention, and retired blocks'
objects once no query can still be reading them.

A block leaves in three steps, each safe to crash after:
1. `expire` marks the tenant's blocks whose newest profile is older than the retention `expired` and
   takes their profiles out of the index: a day partition holding nothing else is dropped whole, else
   its expired rows are deleted. Queries stop seeing the block; its object stays.
2. (Compaction retires blocks the same way, as `compacted`.)
3. `delete_retired` deletes the objects of blocks retired longer ago than a grace period (longer than
   any query runs), then their rows. A crash in between leaves a retired row whose object is gone,
   which the next run removes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from psycopg import sql

from flamewatch.storage.objstore import ObjectStore
from flamewatch.storage.postgres import Database, day_partitions, forget_partition

log = logging.getLogger(__name__)

_DAY_NS = 86_400 * 10**9


@dataclass(frozen=True)
class RetentionPolicy:
    """How long each tenant's profiles are kept, in ns; None keeps them for ever."""

    default_ns: int | None = None
    per_tenant_ns: Mapping[str, int | None] = field(default_factory=dict)

    def of(self, tenant: str) -> int | None:
        return self.per_tenant_ns.get(tenant, self.default_ns)


@dataclass(frozen=True)
class Expired:
    blocks: int
    partitions_dropped: list[str]
    partitions_trimmed: list[str]


def expire(db: Database, policy: RetentionPolicy, now_ns: int) -> Expired:
    """Take out of the index every block past its tenant's retention (see the module docstring)."""
    with db.connection() as conn:
        tenants = [t for (t,) in conn.execute("SELECT DISTINCT tenant FROM blocks WHERE state = 'live'")]
    blocks = sum(_expire_tenant(db, tenant, now_ns - keep) for tenant in tenants
                 if (keep := policy.of(tenant)) is not None)
    with db.connection() as conn:  # also after a run that stopped between marking and clearing
        pending = conn.execute("SELECT EXISTS (SELECT 1 FROM blocks WHERE state = 'expired')").fetchone()[0]
    dropped, trimmed = _clear_partitions(db) if pending else ([], [])
    return Expired(blocks, dropped, trimmed)


def _expire_tenant(db: Database, tenant: str, cutoff_ns: int) -> int:
    with db.connection() as conn:
        found = conn.execute(
            "UPDATE blocks SET state = 'expired', retired_at = now()"
            " WHERE tenant = %s AND state = 'live' AND max_time < %s RETURNING id", (tenant, cutoff_ns)
        ).fetchall()
    if found:
        log.info("retention: tenant %s: %d block(s) older than the retention expired", tenant, len(found))
    return len(found)


def _clear_partitions(db: Database) -> tuple[list[str], list[str]]:
    """Drop each day partition that holds only expired blocks' rows; delete those rows from the others."""
    dropped, trimmed = [], []
    with db.connection() as conn:
        for name, _day in day_partitions(conn):
            table = sql.Identifier(name)
            live = conn.execute(sql.SQL(
                "SELECT EXISTS (SELECT 1 FROM {} p JOIN blocks b ON b.id = p.block_id WHERE b.state <> 'expired')"
            ).format(table)).fetchone()[0]
            if not live:
                with conn.transaction():
                    conn.execute(sql.SQL("DROP TABLE {}").format(table))
                forget_partition(conn, name)
                dropped.append(name)
                continue
            deleted = conn.execute(sql.SQL(
                "DELETE FROM {} p USING blocks b WHERE b.id = p.block_id AND b.state = 'expired'"
            ).format(table)).rowcount
            conn.commit()
            if deleted:
                trimmed.append(name)
        flushed = conn.execute("DELETE FROM flush_series p USING blocks b WHERE b.id = p.block_id"
                               " AND b.state = 'expired'").rowcount
        conn.commit()
        if flushed:
            trimmed.append("flush_series")
    if dropped or trimmed:
        log.info("retention: dropped day partitions %s; deleted expired rows from %s", dropped or "none",
                 trimmed or "none")
    return dropped, trimmed


def delete_retired(db: Database, store: ObjectStore, grace_ns: int) -> list[str]:
    """Delete the objects, then the rows, of blocks retired more than `grace_ns` ago; returns their keys."""
    with db.connection() as conn:
        found = conn.execute(
            "SELECT id, key FROM blocks b WHERE state <> 'live' AND retired_at < now() - make_interval(secs => %s)"
            " AND NOT EXISTS (SELECT 1 FROM index_series bs WHERE bs.block_id = b.id)", (grace_ns / 1e9,)
        ).fetchall()
    for _, key in found:
        store.delete(key)  # a no-op for an object an earlier run deleted before it stopped
    if found:
        with db.connection() as conn:
            conn.execute("DELETE FROM blocks WHERE id = ANY(%s)", ([i for i, _ in found],))
        log.info("deleted %d retired block(s) and their objects", len(found))
    return [key for _, key in found]
