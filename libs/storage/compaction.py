"""Compaction: a tenant's small flushed blocks become one block per hour, and hours one block per day.

The ingester writes a block per tenant about every second, so a day is tens of thousands of small
objects and a query over it would fetch them all. Compaction rewrites them in two steps:

- hour: the flushed blocks (level 0) whose newest profile lies in an hour that ended `hour_delay`
  ago are merged, with the hour blocks already written for the hours they touch (late profiles), into
  one block per hour of profile time (level 1);
- day: the hour blocks of a day that ended `day_delay` ago, with that day's block if late profiles
  made new hour blocks after it, become one day block (level 2).

Symbols, label sets and stacks are de-duplicated across the merged profiles (`block.compact`), which
are ordered by profile type, service, series and time (`block.series_order`) so that one service's
query reads few of the new block's row groups; and a profile stored twice (same series, time and content hash: retried pushes that raced each other) is
kept once. Each job writes its new objects first and then switches the index in one transaction
(`index.replace_blocks`); the old objects are deleted after a grace period by
`retention.delete_retired`. A crash before the switch leaves objects nothing points at, which the
orphan sweeper removes; after it, nothing is lost and nothing counted twice. Callers run one compactor
per tenant at a time (`tenant_lock`). After its jobs, a round gives the space of the index rows they
replaced back to Postgres (`_reclaim`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from ulid import ULID

from flamewatch.storage import index
from flamewatch.storage.block import BlockReader, compact, series_order
from flamewatch.storage.index import BlockRecord, ProfileRows
from flamewatch.storage.keys import LEVEL_DAY, LEVEL_FLUSH, LEVEL_HOUR, block_key
from flamewatch.storage.objstore import ObjectStore
from flamewatch.storage.postgres import Database, partition_name, truncate_if_empty, try_lock, utc_day, vacuum

log = logging.getLogger(__name__)

HOUR_NS = 3600 * 10**9
DAY_NS = 24 * HOUR_NS
MiB = 1 << 20


@dataclass(frozen=True)
class CompactionConfig:
    hour_delay_ns: int = 5 * 60 * 10**9  # wait this long after an hour ends for late profiles
    day_delay_ns: int = HOUR_NS
    max_job_bytes: int = 256 * MiB  # of input objects per job: bounds the compactor's memory
    fetch_concurrency: int = 8


@dataclass(frozen=True)
class StoredBlock:
    id: str
    key: str
    level: int
    min_time: int
    max_time: int
    bytes: int


@dataclass(frozen=True)
class Compacted:
    """What one job did."""

    level: int
    inputs: int
    input_bytes: int
    outputs: list[BlockRecord]
    profiles: int
    duplicates: int
    seconds: float


def compact_tenant(db: Database, store: ObjectStore, tenant: str, now_ns: int,
                   config: CompactionConfig = CompactionConfig()) -> list[Compacted]:
    """Run every hour job, then every day job, that is due for the tenant."""
    done = []
    for level, planner in ((LEVEL_HOUR, hour_job), (LEVEL_DAY, day_job)):
        while job := planner(live_blocks(db, tenant), now_ns, config):
            done.append(run_job(db, store, tenant, job, level, config))
    _reclaim(db, done)
    return done


def _reclaim(db: Database, done: Sequence[Compacted]) -> None:
    """Give back the space of the index rows the jobs deleted: the flush index is emptied when no flush
    block awaits compaction, else vacuumed (its space is reused by the next flushes), and each day
    partition whose hour blocks became a day block is rewritten, so an ended day keeps only its few
    live rows."""
    if any(job.level == LEVEL_HOUR for job in done) and not truncate_if_empty(db, "flush_series"):
        vacuum(db, "flush_series")
    days = {_start_of(r.min_time, DAY_NS) for job in done if job.level == LEVEL_DAY for r in job.outputs}
    for day in sorted(days):
        vacuum(db, partition_name(utc_day(day)), full=True)


def live_blocks(db: Database, tenant: str) -> list[StoredBlock]:
    with db.connection() as conn:
        rows = conn.execute("SELECT id, key, level, min_time, max_time, bytes FROM blocks"
                            " WHERE tenant = %s AND state = 'live' ORDER BY min_time, id", (tenant,)).fetchall()
    return [StoredBlock(*row) for row in rows]


def tenants_with_blocks(db: Database) -> list[str]:
    with db.connection() as conn:
        return [t for (t,) in conn.execute("SELECT DISTINCT tenant FROM blocks WHERE state = 'live' ORDER BY 1")]


# ------------------------------------------------------------------------------------------ planning


def hour_job(blocks: Sequence[StoredBlock], now_ns: int, config: CompactionConfig) -> list[StoredBlock]:
    """The oldest flushed blocks whose hours are over (up to `max_job_bytes`), with the hour blocks of
    the hours they span."""
    over = now_ns - config.hour_delay_ns
    due = [b for b in blocks if b.level == LEVEL_FLUSH and _end_of(b.max_time, HOUR_NS) <= over]
    chosen = _up_to_bytes(due, config.max_job_bytes)
    if not chosen:
        return []
    spans = [(_start_of(b.min_time, HOUR_NS), _start_of(b.max_time, HOUR_NS)) for b in chosen]
    earlier = [b for b in blocks if b.level == LEVEL_HOUR
               and any(lo <= _start_of(b.min_time, HOUR_NS) <= hi for lo, hi in spans)]
    return chosen + earlier


def day_job(blocks: Sequence[StoredBlock], now_ns: int, config: CompactionConfig) -> list[StoredBlock]:
    """The hour blocks of the oldest day that is over and has some, with that day's block if any."""
    over = now_ns - config.day_delay_ns
    due = [b for b in blocks if b.level == LEVEL_HOUR and _end_of(b.min_time, DAY_NS) <= over]
    if not due:
        return []
    day = _start_of(due[0].min_time, DAY_NS)
    inputs = [b for b in blocks if b.level in (LEVEL_HOUR, LEVEL_DAY) and _start_of(b.min_time, DAY_NS) == day]
    if sum(b.bytes for b in inputs) > 4 * config.max_job_bytes:
        log.warning("compaction: the day %s of %d hour blocks (%d MiB) is too big for one day block; it stays "
                    "in hour blocks", time.strftime("%Y-%m-%d", time.gmtime(day // 10**9)), len(inputs),
                    sum(b.bytes for b in inputs) // MiB)
        return []
    return inputs


def _up_to_bytes(blocks: Sequence[StoredBlock], limit: int) -> list[StoredBlock]:
    """The first blocks that fit in `limit` bytes (at least one)."""
    sizes = np.cumsum([b.bytes for b in blocks])
    return list(blocks[: max(1, int(np.searchsorted(sizes, limit, side="right")))]) if blocks else []


def _start_of(t: int, period: int) -> int:
    return t - t % period


def _end_of(t: int, period: int) -> int:
    return _start_of(t, period) + period


# ------------------------------------------------------------------------------------------ running


def run_job(db: Database, store: ObjectStore, tenant: str, inputs: Sequence[StoredBlock], level: int,
            config: CompactionConfig) -> Compacted:
    """Merge `inputs` into one new block per hour (level 1) or day (level 2) of profile time."""
    started = time.perf_counter()
    rows = index.block_rows(db, [b.id for b in inputs])
    rows, duplicates = _without_duplicates(rows)
    readers = _fetch(store, inputs, config.fetch_concurrency)
    period = HOUR_NS if level == LEVEL_HOUR else DAY_NS
    buckets = rows.time - rows.time % period
    outputs = [_write_bucket(store, tenant, level, rows.take(np.flatnonzero(buckets == b)), readers)
               for b in np.unique(buckets)]
    index.replace_blocks(db, outputs, [b.id for b in inputs])
    done = Compacted(level, len(inputs), sum(b.bytes for b in inputs), [r for r, _ in outputs], len(rows),
                     duplicates, time.perf_counter() - started)
    log.info("compaction: tenant %s: %d block(s), %.1f MiB -> %d %s block(s), %.1f MiB, %d profiles%s in %.1f s",
             tenant, done.inputs, done.input_bytes / MiB, len(done.outputs), "hour" if level == LEVEL_HOUR else "day",
             sum(r.bytes for r in done.outputs) / MiB, done.profiles,
             f" ({duplicates} stored twice, kept once)" if duplicates else "", done.seconds)
    return done


def _without_duplicates(rows: ProfileRows) -> tuple[ProfileRows, int]:
    """The first of each (series, time, content hash) when the hash is known; rows stay in their order."""
    known = rows.content_hash != 0
    keys = np.stack([rows.series_id, rows.time, rows.content_hash], axis=1)[known]
    _, first = np.unique(keys, axis=0, return_index=True)
    keep = np.zeros(len(rows), bool)
    keep[~known] = True
    keep[np.flatnonzero(known)[first]] = True
    return rows.take(np.flatnonzero(keep)), int((~keep).sum())


def _fetch(store: ObjectStore, blocks: Sequence[StoredBlock], concurrency: int) -> dict[str, BlockReader]:
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="compaction-fetch") as pool:
        return dict(zip([b.id for b in blocks], pool.map(lambda b: BlockReader(store.get(b.key)), blocks)))


def _write_bucket(store: ObjectStore, tenant: str, level: int, rows: ProfileRows,
                  readers: dict[str, BlockReader]) -> tuple[BlockRecord, ProfileRows]:
    """One new block with the given profiles, ordered by profile type, service, series and time (so a
    query for one service reads few of its row groups)."""
    ids, codes = np.unique(rows.block_id.astype(str), return_inverse=True)
    order = np.argsort(codes, kind="stable")
    rows, codes = rows.take(order), codes[order]
    bounds = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1], True])
    parts = [(readers[ids[codes[lo]]], rows.row[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
    placement = series_order(parts)
    data = compact(parts, placement)
    rows = rows.take(placement)
    new_id = str(ULID())
    lo, hi = int(rows.time.min()), int(rows.time.max())
    record = BlockRecord(new_id, tenant, block_key(tenant, level, lo, new_id), lo, hi, level, len(data), len(rows))
    store.put(record.key, data)
    placed = ProfileRows(rows.series_id, rows.time, np.full(len(rows), new_id),
                         np.arange(len(rows), dtype=np.int64), rows.total, rows.content_hash)
    return record, placed


def tenant_lock(db: Database, tenant: str) -> contextlib.AbstractContextManager[bool]:
    """Try to become the tenant's one compactor; yields whether this process is (held until exit)."""
    return try_lock(db, f"compactor:{tenant}")
