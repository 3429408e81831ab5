"""Compaction: a tenant's small flushed blocks become one block per hour, and hours one block per day.

The ingester writes a block per tenant about every second, so a day is tens of thousands of small
objects and a query over it would fetch them all. Compaction rewrites them in two steps:

- hour: the flushed blocks (level 0) whose newest profile lies in an hour that ended `hour_delay`
  ago are merged into one block per hour of profile time (level 1);
- day: the hour blocks of a day that ended `day_delay` ago become one day block (level 2).

Late profiles (for an hour or a day already compacted) do not rewrite the hour's or the day's block at
every round: a job leaves the largest block already at its level for that hour or day (the *main*
block) as it is and writes the late profiles, with the smaller *side* blocks that earlier late profiles
made, into one side block beside it (`_beside_main`). The day job merges an hour's main and side blocks
once. A main block is rewritten only when what would go beside it holds `main_rewrite_share` of its
profiles, so each rewrite grows it by that share at least and the side stays small beside it.

A job takes at most `max_job_profiles` typed profiles. Merging writes the new block a row group at a time
and keeps the profiles' entries in a spill file meanwhile (`blockwrite.compact_into`), so the compactor's
memory grows with a job's input blocks and their symbols, far slower than with its profiles: merging 540
flush blocks of 25,920 real Go profiles peaks at ~290 MiB (it took ~1.1 GiB holding every entry), and
re-merging their hour block at ~210 MiB (620). An hour with more is compacted into its main block and
side blocks; a day with more stays in hour blocks.

Every block a job writes also holds, per series and hour, the pre-merged tree of its profiles (their
values summed per stack node, `blockwrite._Trees`), and its index row says so (`blocks.trees`): a query
over whole hours then reads one tree per series and hour instead of every profile.

Symbols, label sets and stacks are de-duplicated across the merged profiles (`blockwrite.compact`), which
are ordered by profile type, service, series and time (`blockwrite.series_order`) so that one service's
query reads few of the new block's row groups; and a profile stored twice (same series, time and content hash:
retried pushes that raced each other) is kept once. Each job writes its new objects first and then
switches the index in one transaction (`index.replace_blocks`); the old objects are deleted after a
grace period by `retention.delete_retired`. A crash before the switch leaves objects nothing points at,
which the orphan sweeper removes; after it, nothing is lost and nothing counted twice. Callers run one
compactor per tenant at a time (`tenant_lock`). After its jobs, a round gives the space of the index
rows they replaced back to Postgres (`_reclaim`).

A job that fails on its data (a block that cannot be read or merged, a profile time no partition can
hold) stops only itself: the objects it wrote are deleted at once, and its own blocks (the flushed ones
of an hour job, the hour blocks of a day job) are tried again in halves until the block that fails alone
is found. That block is left as it is, still read by queries, logged once with its key and the reason,
and not tried again before a back-off (`Skipped`); the other blocks, hours and tenants compact. A
failure to reach Postgres or the object store (`StorageUnavailable`) is no fault of the job's blocks:
it ends the round, which the next one starts over.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from ulid import ULID

from flamewatch.storage import index
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.blockwrite import compact_into, series_order
from flamewatch.storage.errors import StorageUnavailable
from flamewatch.storage.index import BlockRecord, ProfileRows
from flamewatch.storage.keys import LEVEL_DAY, LEVEL_FLUSH, LEVEL_HOUR, block_key
from flamewatch.storage.objstore import ObjectStore
from flamewatch.storage.postgres import Database, partition_name, truncate_if_empty, try_lock, utc_day, vacuum
from flamewatch.storage.sweeper import delete_unindexed

log = logging.getLogger(__name__)

HOUR_NS = 3600 * 10**9
DAY_NS = 24 * HOUR_NS
MiB = 1 << 20
SPOOLED_BLOCK_BYTES = 16 * MiB  # a new block larger than this waits for its upload on disk, not in memory
_LEVEL_NAMES = {LEVEL_HOUR: "hour", LEVEL_DAY: "day"}


@dataclass(frozen=True)
class CompactionConfig:
    hour_delay_ns: int = 5 * 60 * 10**9  # wait this long after an hour ends for late profiles
    day_delay_ns: int = HOUR_NS
    max_job_bytes: int = 256 * MiB  # of input objects per job: bounds what a job fetches
    # Typed profiles per job: with the bytes, what bounds the compactor's memory, which grows with a job's
    # blocks and profiles (see the module docstring: 25,920 real Go profiles from 540 flush blocks peak at
    # ~290 MiB; their hour block alone at ~210 MiB). A day of more stays in hour blocks
    max_job_profiles: int = 50_000
    fetch_concurrency: int = 8
    # Late profiles join a side block beside an hour's or a day's main block until they hold this share of
    # its profiles; then the main block is rewritten with them (see the module docstring)
    main_rewrite_share: float = 0.25


@dataclass(frozen=True)
class StoredBlock:
    id: str
    key: str
    level: int
    min_time: int
    max_time: int
    bytes: int
    profiles: int = 0


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
                   config: CompactionConfig = CompactionConfig(), skipped: Skipped | None = None) -> list[Compacted]:
    """Run every hour job, then every day job, that is due for the tenant, leaving out the blocks
    `skipped` holds (see the module docstring); `skipped` remembers the blocks that fail from one round
    to the next."""
    skipped = Skipped() if skipped is None else skipped
    done: list[Compacted] = []
    for level in (LEVEL_HOUR, LEVEL_DAY):
        done += _run_level(db, store, tenant, level, now_ns, config, skipped)
    _reclaim(db, done)
    return done


def due(db: Database, tenant: str, now_ns: int, config: CompactionConfig = CompactionConfig()) -> bool:
    """Whether `compact_tenant` would run a job for the tenant now (blocks that failed before aside):
    the few queries a round plans with, none of its reading or writing."""
    blocks = live_blocks(db, tenant)
    return bool(hour_job(blocks, now_ns, config) or day_job(blocks, now_ns, config))


def _run_level(db: Database, store: ObjectStore, tenant: str, level: int, now_ns: int, config: CompactionConfig,
               skipped: Skipped) -> list[Compacted]:
    """Every job of one level; a failed job's own blocks are tried again in halves (`retry`, a stack)."""
    planner, own_level = (hour_job, LEVEL_FLUSH) if level == LEVEL_HOUR else (day_job, LEVEL_HOUR)
    done: list[Compacted] = []
    retry: list[set[str]] = []
    while True:
        blocks = skipped.usable(tenant, live_blocks(db, tenant), now_ns)
        only = retry.pop() if retry else None
        view = blocks if only is None else [b for b in blocks if b.level != own_level or b.id in only]
        if not (job := planner(view, now_ns, config)):
            if retry or only is not None:
                continue
            return done
        try:
            done.append(run_job(db, store, tenant, job, level, config))
        except StorageUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever its blocks hold, it must not stop the others
            retry += _halves_or_skip(tenant, job, [b for b in job if b.level == own_level], exc, now_ns, skipped)


def _halves_or_skip(tenant: str, job: Sequence[StoredBlock], own: Sequence[StoredBlock], exc: Exception,
                    now_ns: int, skipped: Skipped) -> list[set[str]]:
    """The two halves of a failed job's own blocks to try next (the first half last, as it is popped
    first), or none when the job had one block of its own: that one is skipped."""
    if len(own) == 1:
        skipped.add(tenant, own[0], job, exc, now_ns)
        return []
    log.info("compaction: tenant %s: a job of %d block(s) failed (%s); trying its blocks in halves",
             tenant, len(job), _reason(exc))
    half = len(own) // 2
    return [{b.id for b in own[half:]}, {b.id for b in own[:half]}]


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
        rows = conn.execute("SELECT id, key, level, min_time, max_time, bytes, profiles FROM blocks"
                            " WHERE tenant = %s AND state = 'live' ORDER BY min_time, id", (tenant,)).fetchall()
    return [StoredBlock(*row) for row in rows]


def tenants_with_blocks(db: Database) -> list[str]:
    with db.connection() as conn:
        return [t for (t,) in conn.execute("SELECT DISTINCT tenant FROM blocks WHERE state = 'live' ORDER BY 1")]


# ------------------------------------------------------------------------------------------ planning


def hour_job(blocks: Sequence[StoredBlock], now_ns: int, config: CompactionConfig) -> list[StoredBlock]:
    """The oldest flushed blocks whose hours are over (up to `max_job_bytes` and `max_job_profiles`), with
    the hour blocks of the hours they span that fit in the job, but for each hour's main block unless it
    is due a rewrite (`_beside_main`)."""
    over = now_ns - config.hour_delay_ns
    due = [b for b in blocks if b.level == LEVEL_FLUSH and _end_of(b.max_time, HOUR_NS) <= over]
    chosen = _up_to(due, config.max_job_bytes, config.max_job_profiles)
    if not chosen:
        return []
    job = list(chosen)
    for hour in sorted({h for b in chosen for h in range(_start_of(b.min_time, HOUR_NS), b.max_time + 1, HOUR_NS)}):
        new = [b for b in chosen if _start_of(b.min_time, HOUR_NS) <= hour <= b.max_time]
        there = [b for b in blocks if b.level == LEVEL_HOUR and _start_of(b.min_time, HOUR_NS) == hour]
        job += _beside_main(there, new, config, config.max_job_profiles - sum(b.profiles for b in job))
    return job


def day_job(blocks: Sequence[StoredBlock], now_ns: int, config: CompactionConfig) -> list[StoredBlock]:
    """The hour blocks of the oldest day that is over, has some and fits in one job (`max_job_profiles`,
    4 x `max_job_bytes`), with that day's block if due a rewrite (`_beside_main`). A day too big for one
    job stays in hour blocks: a query over it reads 24 blocks instead of one."""
    over = now_ns - config.day_delay_ns
    due = sorted({_start_of(b.min_time, DAY_NS) for b in blocks if b.level == LEVEL_HOUR
                  and _end_of(b.min_time, DAY_NS) <= over})
    for day in due:
        hours = [b for b in blocks if b.level == LEVEL_HOUR and _start_of(b.min_time, DAY_NS) == day]
        days = [b for b in blocks if b.level == LEVEL_DAY and _start_of(b.min_time, DAY_NS) == day]
        inputs = hours + _beside_main(days, hours, config, config.max_job_profiles - sum(b.profiles for b in hours))
        if sum(b.profiles for b in inputs) <= config.max_job_profiles and \
                sum(b.bytes for b in inputs) <= 4 * config.max_job_bytes:
            return inputs
        log.debug("compaction: the day %s (%d blocks, %d profiles) is too big for one job; it stays in hour blocks",
                  time.strftime("%Y-%m-%d", time.gmtime(day // 10**9)), len(inputs), sum(b.profiles for b in inputs))
    return []


def _beside_main(there: Sequence[StoredBlock], new: Sequence[StoredBlock], config: CompactionConfig,
                 room: int) -> list[StoredBlock]:
    """Of the blocks already written at a job's level for one hour or day (`there`), those the job merges
    with its `new` inputs, within `room` more profiles: all but the largest (the main block), unless the
    rest holds at least `main_rewrite_share` of the main block's profiles. Late profiles then make a
    small side block and leave the main block as it is. A block that does not fit stays beside."""
    if not there:
        return []
    main = max(there, key=lambda b: (b.profiles, b.bytes, b.id))
    side = _up_to(sorted((b for b in there if b is not main), key=lambda b: b.profiles), None, room, at_least=0)
    late = sum(b.profiles for b in (*new, *side))
    fits = late - sum(b.profiles for b in new) + main.profiles <= room
    return [*side, main] if fits and late >= config.main_rewrite_share * main.profiles else side


def _up_to(blocks: Sequence[StoredBlock], max_bytes: int | None, max_profiles: int,
           at_least: int = 1) -> list[StoredBlock]:
    """The first blocks that fit in `max_bytes` (None: any) and `max_profiles` together (at least
    `at_least` of them, so that one block bigger than a job is still compacted)."""
    if not blocks:
        return []
    fit = np.searchsorted(np.cumsum([b.profiles for b in blocks]), max_profiles, side="right")
    if max_bytes is not None:
        fit = min(fit, np.searchsorted(np.cumsum([b.bytes for b in blocks]), max_bytes, side="right"))
    return list(blocks[: max(at_least, int(fit))])


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
    written: list[str] = []
    try:
        outputs = [_write_bucket(store, tenant, level, rows.take(np.flatnonzero(buckets == b)), readers, written)
                   for b in np.unique(buckets)]
        index.replace_blocks(db, outputs, [b.id for b in inputs])
    except Exception:  # not on a BaseException: the process is going away, and the sweeper will clean up
        _delete_written(store, db, tenant, written)
        raise
    done = Compacted(level, len(inputs), sum(b.bytes for b in inputs), [r for r, _ in outputs], len(rows),
                     duplicates, time.perf_counter() - started)
    log.info("compaction: tenant %s: %d block(s), %.1f MiB -> %d %s block(s), %.1f MiB, %d profiles%s in %.1f s",
             tenant, done.inputs, done.input_bytes / MiB, len(done.outputs), _LEVEL_NAMES[level],
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
        return dict(zip([b.id for b in blocks], pool.map(lambda b: BlockReader(store.get(b.key), b.key), blocks)))


def _write_bucket(store: ObjectStore, tenant: str, level: int, rows: ProfileRows,
                  readers: dict[str, BlockReader], written: list[str]) -> tuple[BlockRecord, ProfileRows]:
    """One new block with the given profiles, ordered by profile type, service, series and time (so a
    query for one service reads few of its row groups). It is written to a temporary file a row group
    at a time and stored from there (`compact_into`): what the job holds does not grow with the profiles'
    entries."""
    ids, codes = rows.blocks, rows.block
    order = np.argsort(codes, kind="stable")
    rows, codes = rows.take(order), codes[order]
    bounds = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1], True])
    parts = [(readers[ids[codes[lo]]], rows.row[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
    placement = series_order(parts)
    rows = rows.take(placement)
    new_id = str(ULID())
    lo, hi = int(rows.time.min()), int(rows.time.max())
    with tempfile.SpooledTemporaryFile(max_size=SPOOLED_BLOCK_BYTES, prefix="flamewatch-block-") as file:
        trees = compact_into(file, parts, placement, trees=True)
        size = file.tell()
        record = BlockRecord(new_id, tenant, block_key(tenant, level, lo, new_id), lo, hi, level, size, len(rows),
                             trees)
        written.append(record.key)  # before the upload: a failed upload may still leave a partial object
        file.seek(0)
        store.put_file(record.key, file, size)
    placed = ProfileRows(rows.series_id, rows.time, np.zeros(len(rows), np.int32),
                         np.arange(len(rows), dtype=np.int64), rows.total, rows.content_hash, np.array([new_id]))
    return record, placed


def tenant_lock(db: Database, tenant: str) -> contextlib.AbstractContextManager[bool]:
    """Try to become the tenant's one compactor; yields whether this process is (held until exit)."""
    return try_lock(db, f"compactor:{tenant}")


def _delete_written(store: ObjectStore, db: Database, tenant: str, keys: list[str]) -> None:
    """Delete the objects a failed job wrote, unless the index points at them; if that cannot be known
    now (Postgres or the store is away), the orphan sweeper removes them later."""
    try:
        deleted = delete_unindexed(store, db, keys)
    except Exception as exc:  # noqa: BLE001 - the job's own failure is the one to report
        log.info("compaction: tenant %s: the %d object(s) of a failed job stay for the orphan sweeper: %s",
                 tenant, len(keys), _reason(exc))
        return
    if deleted:
        log.info("compaction: tenant %s: deleted the %d object(s) a failed job wrote", tenant, len(deleted))


def _reason(exc: BaseException) -> str:
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first_line}" if first_line else type(exc).__name__


# ------------------------------------------------------------------------------------------ skipping


@dataclass
class _Failure:
    retry_at_ns: int
    failures: int


@dataclass
class Skipped:
    """The blocks whose jobs failed on them alone, left out of compaction until a back-off has passed:
    `first_backoff_ns` after the first failure, doubling with each later one up to `max_backoff_ns`.
    Kept in memory: after a restart each such block is tried, and logged, once more."""

    first_backoff_ns: int = HOUR_NS
    max_backoff_ns: int = DAY_NS
    _failed: dict[tuple[str, str], _Failure] = field(default_factory=dict)

    def usable(self, tenant: str, blocks: Sequence[StoredBlock], now_ns: int) -> list[StoredBlock]:
        """The blocks not waiting out a back-off; forgets the tenant's blocks that are no longer live."""
        live = {b.id for b in blocks}
        for key in [k for k in self._failed if k[0] == tenant and k[1] not in live]:
            del self._failed[key]
        return [b for b in blocks if (f := self._failed.get((tenant, b.id))) is None or f.retry_at_ns <= now_ns]

    def add(self, tenant: str, block: StoredBlock, job: Sequence[StoredBlock], exc: Exception, now_ns: int) -> None:
        previous = self._failed.get((tenant, block.id))
        failures = 1 if previous is None else previous.failures + 1
        backoff = min(self.first_backoff_ns << (failures - 1), self.max_backoff_ns)
        self._failed[tenant, block.id] = _Failure(now_ns + backoff, failures)
        others = [b.key for b in job if b.id != block.id]
        level = logging.WARNING if failures == 1 else logging.INFO
        log.log(level, "compaction: tenant %s: block %s cannot be compacted (%s)%s. It stays as it is and queries "
                "still read it; the rest of the tenant's blocks compact without it. Compaction tries it again in "
                "%.0f h (failure %d). If it keeps failing, look for the bad profile in the block (a Parquet file: "
                "DuckDB or pandas open it); retention removes the block in its time, or at once after "
                "UPDATE blocks SET state = 'expired', retired_at = now() WHERE key = '%s'",
                tenant, block.key, _reason(exc), f", merged with {', '.join(others)}" if others else "",
                backoff / HOUR_NS, failures, block.key)

    def __len__(self) -> int:
        return len(self._failed)
