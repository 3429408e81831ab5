"""The profile index in Postgres: series, blocks, and which profiles of which series each block holds.

A block's profiles are indexed by one row per series it holds, carrying that series' profile times,
rows in the block, totals and content hashes as packed arrays: selection and time series read a few
rows per series and block, never a row per profile. Compacted blocks' rows are in `block_series`,
partitioned by day; flush blocks' rows, which compaction soon replaces, in `flush_series`; reads go
through the view `index_series` over both. Writes happen in one
transaction per block, after the block object is durable in the object store, so an index row never
points at a missing object.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np
from psycopg import sql
from psycopg.types.json import Jsonb

from flamewatch.labels.names import DERIVED_LABELS, derived_label
from flamewatch.labels.selector import Matcher
from flamewatch.storage.frames import run_codes
from flamewatch.storage.keys import LEVEL_FLUSH
from flamewatch.storage.postgres import Database, ensure_day_partition

# The tables of index rows: compacted blocks' (partitioned by day) and flush blocks'.
INDEX_TABLES = ("block_series", "flush_series")

_DAY_NS = 86_400 * 10**9
# The packed arrays of a block_series row: big-endian, as Postgres' int8send/int4send write them.
_TIME, _ROW, _TOTAL, _HASH = np.dtype(">i8"), np.dtype(">i4"), np.dtype(">i8"), np.dtype(">i8")


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
    trees: bool = False  # holds the pre-merged tree of each series and hour (compacted blocks)


@dataclass(frozen=True)
class StoredObject:
    """Where a block is stored, its size, and whether it holds pre-merged trees."""

    key: str
    bytes: int
    trees: bool


@dataclass(frozen=True)
class IndexEntry:
    """One profile of a block: its series and where it sits."""

    fingerprint: int
    labels: dict[str, str]
    profile_type: str
    time_ns: int
    row: int
    total: int
    content_hash: int = 0


@dataclass(frozen=True)
class Series:
    id: int
    labels: dict[str, str]


class KnownSeries:
    """Series rows this process has written or found, each with a seen range the row is known to cover:
    a flush whose series are all known, within those ranges, skips the upsert (a statement with every
    series' labels, and often a second to read the ids of the rows it left alone). Series rows are never
    deleted and their ranges only widen, so what is known stays true. Bounded: forgotten when full."""

    def __init__(self, max_series: int = 1 << 18) -> None:
        self._max = max_series
        self._known: dict[tuple[str, int], tuple[int, int, int]] = {}  # (tenant, fingerprint) -> id, from, until

    def ids(self, tenant: str, spans: dict[int, tuple[int, int]]) -> tuple[dict[int, int], list[int]]:
        """The known ids of the series whose [from, until] the stored row covers, and the other fingerprints."""
        ids, unknown = {}, []
        for fp, (lo, hi) in spans.items():
            known = self._known.get((tenant, fp))
            if known is not None and known[1] <= lo and hi <= known[2]:
                ids[fp] = known[0]
            else:
                unknown.append(fp)
        return ids, unknown

    def learn(self, tenant: str, ids: dict[int, int], spans: dict[int, tuple[int, int]]) -> None:
        """After the transaction that stored them committed: each series' row covers at least its span."""
        if len(self._known) + len(ids) > self._max:
            self._known.clear()
        for fp, series_id in ids.items():
            lo, hi = spans[fp]
            old = self._known.get((tenant, fp))
            self._known[tenant, fp] = (series_id, min(lo, old[1]), max(hi, old[2])) if old else (series_id, lo, hi)


def commit_block(db: Database, block: BlockRecord, entries: Sequence[IndexEntry],
                 known: KnownSeries | None = None) -> None:
    """Index a block whose object is already stored: series, block row and its series' rows, atomically.
    With `known`, series it holds within their stored ranges are not written again (`KnownSeries`)."""
    if block.level != LEVEL_FLUSH:
        _ensure_partitions(db, _series_starts(np.array([e.fingerprint for e in entries], np.int64),
                                              np.array([e.time_ns for e in entries], np.int64)))
    first, spans = _series_spans(entries)
    ids, unknown = known.ids(block.tenant, spans) if known is not None else ({}, sorted(first))
    with db.connection() as conn, conn.transaction():
        if unknown:
            ids.update(_upsert_series(conn, block.tenant, first, spans, unknown))
        _insert_block(conn, block)
        _copy_rows(conn, block, _rows_of(entries, ids))
    if known is not None and unknown:
        known.learn(block.tenant, {fp: ids[fp] for fp in unknown}, spans)


def replace_blocks(db: Database, new: Sequence[tuple[BlockRecord, ProfileRows]], old_ids: Sequence[str]) -> None:
    """Switch the index from the blocks `old_ids` to the `new` ones (already stored, each with its
    profiles) in one transaction: a query sees either the old blocks or the new ones, never both. The
    old blocks are marked compacted; their objects stay until `retention.delete_retired` removes them
    after a grace period, so a query that read the index just before the switch still finds them."""
    _ensure_partitions(db, [t for b, rows in new if b.level != LEVEL_FLUSH
                            for t in _series_starts(rows.series_id, rows.time)])
    with db.connection() as conn, conn.transaction():
        for block, rows in new:
            _insert_block(conn, block)
            _copy_rows(conn, block, rows)
        for table in INDEX_TABLES:
            conn.execute(sql.SQL("DELETE FROM {} WHERE block_id = ANY(%s)").format(sql.Identifier(table)),
                         (list(old_ids),))
        conn.execute("UPDATE blocks SET state = 'compacted', retired_at = now() WHERE id = ANY(%s)",
                     (list(old_ids),))


def block_rows(db: Database, block_ids: Sequence[str]) -> ProfileRows:
    """Every indexed profile of the blocks, block by block in row order."""
    with db.connection() as conn:
        found = conn.execute("SELECT series_id, block_id, times, rows, totals, hashes FROM index_series"
                             " WHERE block_id = ANY(%s)", (list(block_ids),)).fetchall()
    rows = unpack_rows(found)
    return rows.take(np.lexsort((rows.row, rows.block))) if len(rows) else rows


def _series_starts(series: np.ndarray, times: np.ndarray) -> list[int]:
    """The earliest time of each series: the day partition of its block_series row."""
    if not len(series):
        return []
    order = np.lexsort((times, series))
    first = np.r_[True, series[order][1:] != series[order][:-1]]
    return times[order][first].tolist()


def _rows_of(entries: Sequence[IndexEntry], series_ids: dict[int, int]) -> ProfileRows:
    def col(values: Iterable[int]) -> np.ndarray:
        return np.fromiter(values, np.int64, len(entries))
    return ProfileRows(col(series_ids[e.fingerprint] for e in entries), col(e.time_ns for e in entries),
                       np.zeros(len(entries), np.int32), col(e.row for e in entries), col(e.total for e in entries),
                       col(e.content_hash for e in entries), np.array([""]))


def _ensure_partitions(db: Database, first_times: Iterable[int]) -> None:
    days = {t - t % _DAY_NS for t in first_times}
    with db.connection() as conn:
        for day in sorted(days):
            ensure_day_partition(conn, day)


def _insert_block(conn, block: BlockRecord) -> None:
    conn.execute(
        "INSERT INTO blocks (id, tenant, key, min_time, max_time, level, bytes, profiles, trees)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (block.id, block.tenant, block.key, block.min_time, block.max_time, block.level, block.bytes,
         block.profiles, block.trees),
    )


def _copy_rows(conn, block: BlockRecord, rows: ProfileRows) -> None:
    """One index row per series, its profiles in time order, in the block's level's table."""
    order = np.lexsort((rows.row, rows.time, rows.series_id))
    rows = rows.take(order)
    starts = np.flatnonzero(np.r_[True, rows.series_id[1:] != rows.series_id[:-1]]) if len(rows) else []
    bounds = np.r_[starts, len(rows)].astype(np.int64)
    table = "flush_series" if block.level == LEVEL_FLUSH else "block_series"
    with conn.cursor().copy(sql.SQL(
        "COPY {} (block_id, series_id, min_time, max_time, profiles, times, rows, totals, hashes) FROM STDIN"
    ).format(sql.Identifier(table))) as copy:
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            copy.write_row((block.id, int(rows.series_id[lo]), int(rows.time[lo]), int(rows.time[hi - 1]), hi - lo,
                            rows.time[lo:hi].astype(_TIME).tobytes(), rows.row[lo:hi].astype(_ROW).tobytes(),
                            rows.total[lo:hi].astype(_TOTAL).tobytes(),
                            rows.content_hash[lo:hi].astype(_HASH).tobytes()))


def _series_spans(entries: Sequence[IndexEntry]) -> tuple[dict[int, IndexEntry], dict[int, tuple[int, int]]]:
    """Each series' first entry, and the seen range its row must cover: its entries' hours (see below)."""
    first: dict[int, IndexEntry] = {}
    span: dict[int, tuple[int, int]] = {}
    for e in entries:
        first.setdefault(e.fingerprint, e)
        lo, hi = span.get(e.fingerprint, (e.time_ns, e.time_ns))
        span[e.fingerprint] = (min(lo, e.time_ns), max(hi, e.time_ns))
    return first, {fp: (_seen_from(lo), _seen_until(hi)) for fp, (lo, hi) in span.items()}


def _upsert_series(conn, tenant: str, first: dict[int, IndexEntry], spans: dict[int, tuple[int, int]],
                   fingerprints: Iterable[int]) -> dict[int, int]:
    """Insert the new series among `fingerprints` and widen the seen range of the others; returns their ids.

    A series' first and last seen times are kept to the hour (the hour's start and end), so only the
    first block of each hour updates its row: updating it on every flush left a dead row version (and
    new entries in its GIN index) per series per second, most of the index's size."""
    fps = sorted(fingerprints)  # a stable order keeps concurrent upserts from deadlocking
    rows = conn.execute(
        "INSERT INTO series (tenant, fingerprint, profile_type, labels, first_seen, last_seen)"
        " SELECT %s, * FROM unnest(%s::bigint[], %s::text[], %s::jsonb[], %s::bigint[], %s::bigint[])"
        " ON CONFLICT (tenant, fingerprint) DO UPDATE SET"
        "  first_seen = LEAST(series.first_seen, excluded.first_seen),"
        "  last_seen = GREATEST(series.last_seen, excluded.last_seen)"
        " WHERE excluded.first_seen < series.first_seen OR excluded.last_seen > series.last_seen"
        " RETURNING fingerprint, id",
        (tenant, fps, [first[f].profile_type for f in fps], [Jsonb(first[f].labels) for f in fps],
         [spans[f][0] for f in fps], [spans[f][1] for f in fps]),
    ).fetchall()
    ids = dict(rows)
    unchanged = [f for f in fps if f not in ids]  # rows the WHERE left alone return nothing
    if unchanged:
        ids.update(conn.execute("SELECT fingerprint, id FROM series WHERE tenant = %s AND fingerprint = ANY(%s)",
                                (tenant, unchanged)).fetchall())
    return ids


_SEEN_STEP_NS = 3600 * 10**9
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _seen_from(t: int) -> int:
    return max(t - t % _SEEN_STEP_NS, _INT64_MIN)


def _seen_until(t: int) -> int:
    return min(t - t % _SEEN_STEP_NS + _SEEN_STEP_NS - 1, _INT64_MAX)


# ------------------------------------------------------------------------------------------ reading


def find_series(db: Database, tenant: str | Sequence[str], matchers: Sequence[Matcher], start: int, end: int,
                profile_type: str | None = None) -> list[Series]:
    """Series of the tenant (or of any of several) with a profile in [start, end] whose labels satisfy
    every matcher.

    Only equality reaches Postgres (`@>`, served by the GIN index); regexes are never pushed down:
    Postgres' `~` backtracks, so a crafted pattern could run for minutes, while the selector's RE2
    runs in time linear in each value (one run per candidate series, after the cheap filters)."""
    sql = ["SELECT id, labels FROM series WHERE tenant = ANY(%s) AND last_seen >= %s AND first_seen <= %s"]
    args: list = [_tenants(tenant), start, end]
    if profile_type is not None:
        sql.append("AND profile_type = %s")
        args.append(profile_type)
    # A NUL cannot be in a jsonb string (Postgres refuses the whole statement), nor so in a stored label:
    # such a matcher is left to the check below, where it matches nothing.
    equal = {m.name: m.value for m in matchers
             if m.op == "=" and m.value and "\x00" not in m.value and m.name not in DERIVED_LABELS}
    if equal:
        sql.append("AND labels @> %s::jsonb")  # served by the GIN index; the rest is checked below
        args.append(json.dumps(equal))
    with db.connection() as conn:
        rows = conn.execute(" ".join(sql) + " ORDER BY id", args).fetchall()
    return [Series(i, labels) for i, labels in rows if all(m.matches(_label(labels, m.name)) for m in matchers)]


def _tenants(tenant: str | Sequence[str]) -> list[str]:
    """One tenant, or the several a read names, as the list `tenant = ANY(%s)` takes (the btree on
    `(tenant, ...)` serves `= ANY` as it serves `=`)."""
    return [tenant] if isinstance(tenant, str) else list(tenant)


def _label(labels: dict[str, str], name: str) -> str | None:
    """A stored label's value, or one Pyroscope derives from the stored ones (`names.DERIVED_LABELS`)."""
    return derived_label(labels, name) if name in DERIVED_LABELS else labels.get(name)


@dataclass(frozen=True, eq=False)
class ProfileRows:
    """Profiles as the index lists them, an element each. A profile's block is a code into `blocks`: a
    fleet's week is a million profiles in a few hundred blocks, whose 26-character ids repeated per
    profile would be 100 MB to copy and compare."""

    series_id: np.ndarray  # int64
    time: np.ndarray  # int64 ns
    block: np.ndarray  # int32, index into `blocks`
    row: np.ndarray  # int64
    total: np.ndarray  # int64
    content_hash: np.ndarray  # int64, 0 where unknown
    blocks: np.ndarray  # str: block ids, sorted and distinct, so codes order as the ids do

    @classmethod
    def of(cls, series_id: np.ndarray, time: np.ndarray, block_id: np.ndarray, row: np.ndarray, total: np.ndarray,
           content_hash: np.ndarray) -> ProfileRows:
        """Rows from each profile's block id."""
        blocks, block = np.unique(np.asarray(block_id).astype(str), return_inverse=True)
        return cls(series_id, time, block.reshape(-1).astype(np.int32), row, total, content_hash, blocks)

    def __len__(self) -> int:
        return len(self.series_id)

    @property
    def block_id(self) -> np.ndarray:
        """Each profile's block id: an id per profile, for few rows (`used_blocks` for many)."""
        return self.blocks[self.block]

    def used_blocks(self) -> tuple[np.ndarray, np.ndarray]:
        """The ids of the blocks the rows are in (sorted), and each row's index among them: quick when rows
        come in runs of a block, as they do from the index."""
        used, at = run_codes(self.block)
        return self.blocks[used], at

    def take(self, index: np.ndarray) -> ProfileRows:
        return ProfileRows(self.series_id[index], self.time[index], self.block[index], self.row[index],
                           self.total[index], self.content_hash[index], self.blocks)


_IN_RANGE = "FROM index_series WHERE series_id = ANY(%(ids)s) AND max_time >= %(start)s AND min_time <= %(end)s"


def range_params(series_ids: Sequence[int], start: int, end: int) -> dict:
    return {"ids": list(series_ids), "start": start, "end": end}


def profile_rows(db: Database, series_ids: Sequence[int], start: int, end: int) -> ProfileRows:
    """Every profile of the series in [start, end], in time order."""
    with db.connection() as conn:
        found = conn.execute(
            "SELECT series_id, block_id, times, rows, totals, hashes " + _IN_RANGE,
            range_params(series_ids, start, end),
            binary=True,  # the packed arrays as they are, not hex text
        ).fetchall()
    rows = unpack_rows(found)
    keep = np.flatnonzero((rows.time >= start) & (rows.time <= end))
    # Postgres returns the rows in no set order: sort fully, so a float (gauge) sum adds in one order.
    return rows.take(keep[_time_block_row_order(rows.time[keep], rows.block[keep], rows.row[keep])])


def merge_rows(db: Database, series_ids: Sequence[int], start: int, end: int) -> ProfileRows:
    """Every profile of the series in [start, end] as a merge reads them: in the order of their blocks and
    series, and within those as stored (one set order and the cheapest, for whoever adds the rows up
    exactly and needs no time order), and without their totals and content hashes (0 throughout), which a
    merge does not use: a third of what a week of a fleet's rows would otherwise send and unpack."""
    with db.connection() as conn:
        found = conn.execute("SELECT series_id, block_id, times, rows " + _IN_RANGE,
                             range_params(series_ids, start, end), binary=True).fetchall()
    rows = unpack_rows(sorted(found, key=itemgetter(1, 0)))  # by block, then series
    inside = (rows.time >= start) & (rows.time <= end)
    return rows if inside.all() else rows.take(np.flatnonzero(inside))


@dataclass(frozen=True)
class EntryCounts:
    """Per index row (one series' profiles in one block) with profiles in a range: its series, block,
    first and last time in the range and how many of its profiles the range holds."""

    series_id: np.ndarray  # int64
    block_id: np.ndarray  # str
    first: np.ndarray  # int64 ns
    last: np.ndarray  # int64 ns
    count: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.series_id)


def profile_counts(db: Database, series_ids: Sequence[int], start: int, end: int) -> EntryCounts:
    """How many profiles of the series each index row holds in [start, end], in no set order: what a
    query would read, known without reading a row per profile (only the rows cut by the range's ends
    send their times)."""
    with db.connection() as conn:
        found = conn.execute(
            "SELECT series_id, block_id, min_time, max_time, profiles,"
            " CASE WHEN min_time < %(start)s OR max_time > %(end)s THEN times END " + _IN_RANGE,
            range_params(series_ids, start, end), binary=True,
        ).fetchall()
    columns = list(zip(*found)) or [()] * 6
    series, first, last, count = (np.array(columns[i], np.int64) for i in (0, 2, 3, 4))
    blocks = np.array(columns[1], str)
    for i in [i for i, t in enumerate(columns[5]) if t is not None]:  # the few rows the range's ends cut
        times = np.frombuffer(columns[5][i], _TIME).astype(np.int64)
        inside = times[(times >= start) & (times <= end)]
        count[i] = len(inside)
        first[i], last[i] = (inside.min(), inside.max()) if len(inside) else (0, 0)
    keep = np.flatnonzero(count > 0)
    return EntryCounts(series[keep], blocks[keep], first[keep], last[keep], count[keep])


def profile_totals(db: Database, series_ids: Sequence[int], start: int, end: int) -> ProfileRows:
    """Series, time and total of every profile of the series in [start, end], in no set order: what
    time series need, read without the columns that say where each profile is stored (`block_id` is
    "" and `row` -1 throughout; use `profile_rows` to read the profiles themselves)."""
    with db.connection() as conn:
        found = conn.execute("SELECT series_id, times, totals " + _IN_RANGE, range_params(series_ids, start, end),
                             binary=True).fetchall()
    counts = [len(times) // _TIME.itemsize for _, times, _ in found]
    time = _column([t for _, t, _ in found], _TIME)
    keep = np.flatnonzero((time >= start) & (time <= end))
    empty = np.zeros(len(keep), np.int64)
    return ProfileRows(np.repeat(np.array([r[0] for r in found], np.int64), counts)[keep], time[keep],
                       np.zeros(len(keep), np.int32), empty - 1, _column([c for _, _, c in found], _TOTAL)[keep], empty,
                       np.array([""]))


def _column(parts: list[bytes], dtype: np.dtype) -> np.ndarray:
    """The index rows' packed arrays as one int64 array (joined as bytes first: one array, not one per row)."""
    return np.frombuffer(b"".join(parts), dtype).astype(np.int64)


def nearest_profile(db: Database, series_ids: Sequence[int], time_ns: int) -> ProfileRows:
    """The one profile closest to time_ns among the series (empty if they have none)."""
    cols = "SELECT series_id, block_id, times, rows, totals, hashes FROM index_series WHERE series_id = ANY(%(ids)s)"
    with db.connection() as conn:
        found = conn.execute(
            f"({cols} AND min_time <= %(t)s AND max_time >= %(t)s)"
            f" UNION ALL ({cols} AND max_time < %(t)s ORDER BY max_time DESC LIMIT 1)"
            f" UNION ALL ({cols} AND min_time > %(t)s ORDER BY min_time LIMIT 1)",
            {"ids": list(series_ids), "t": time_ns},
        ).fetchall()
    rows = unpack_rows(found)
    if not len(rows):
        return rows
    # |time - time_ns| without int64 overflow at either end of the range: exact in uint64 on each side.
    t = np.uint64(time_ns % 2**64)
    after = rows.time >= time_ns
    times = rows.time.view(np.uint64)
    distance = np.where(after, times - t, t - times)
    return rows.take(np.array([int(np.argmin(distance))]))


def stored_profiles(db: Database, tenant: str, keys: Sequence[tuple[int, int, int]]) -> set[tuple[int, int, int]]:
    """Which of the (series fingerprint, time, content hash) keys are stored already (a retried push)."""
    if not keys:
        return set()
    times = [t for _, t, _ in keys]
    with db.connection() as conn:
        found = conn.execute(
            "SELECT s.fingerprint, bs.times, bs.hashes FROM series s JOIN index_series bs ON bs.series_id = s.id"
            " WHERE s.tenant = %s AND s.fingerprint = ANY(%s) AND bs.max_time >= %s AND bs.min_time <= %s",
            (tenant, sorted({fp for fp, _, _ in keys}), min(times), max(times)),
        ).fetchall()
    stored = {(fp, int(t), int(h)) for fp, ts, hs in found
              for t, h in zip(np.frombuffer(ts, _TIME), np.frombuffer(hs, _HASH), strict=True)}
    return stored & set(keys)


def twin_times(db: Database, tenant: str, keys: Sequence[tuple[int, int]], start: int, end: int
               ) -> dict[tuple[int, int], int]:
    """The latest time in [start, end] at which each (series fingerprint, content hash) key was stored."""
    if not keys:
        return {}
    wanted = set(keys)
    with db.connection() as conn:
        found = conn.execute(
            "SELECT s.fingerprint, bs.times, bs.hashes FROM series s JOIN index_series bs ON bs.series_id = s.id"
            " WHERE s.tenant = %s AND s.fingerprint = ANY(%s) AND bs.max_time >= %s AND bs.min_time <= %s",
            (tenant, sorted({fp for fp, _ in keys}), start, end),
        ).fetchall()
    out: dict[tuple[int, int], int] = {}
    for fp, ts, hs in found:
        for t, h in zip(np.frombuffer(ts, _TIME).tolist(), np.frombuffer(hs, _HASH).tolist(), strict=True):
            if (fp, h) in wanted and start <= t <= end and t > out.get((fp, h), start - 1):
                out[fp, h] = t
    return out


def known_series(db: Database, tenant: str, fingerprints: Sequence[int]) -> set[int]:
    """Which of the fingerprints are series of the tenant already."""
    with db.connection() as conn:
        return {fp for (fp,) in conn.execute("SELECT fingerprint FROM series WHERE tenant = %s AND fingerprint"
                                             " = ANY(%s)", (tenant, sorted(fingerprints)))}


def active_series(db: Database, tenant: str, since_ns: int) -> int:
    """How many series of the tenant have a profile at or after `since_ns` (to the hour: see `_seen_until`)."""
    with db.connection() as conn:
        return conn.execute("SELECT count(*) FROM series WHERE tenant = %s AND last_seen >= %s",
                            (tenant, since_ns)).fetchone()[0]


def tenant_series(db: Database, tenants: Sequence[str] | None = None) -> dict[str, int]:
    """How many series each tenant has (of `tenants`, or of every tenant): the tenants with data, as far
    as the index knows (series outlive the profiles retention drops, so a tenant may have none left)."""
    query, params = "SELECT tenant, count(*) FROM series", []
    if tenants is not None:
        query, params = query + " WHERE tenant = ANY(%s)", [list(tenants)]
    with db.connection() as conn:
        return dict(conn.execute(query + " GROUP BY tenant", params).fetchall())


def _time_block_row_order(time: np.ndarray, block_rank: np.ndarray, row: np.ndarray) -> np.ndarray:
    """The order by time, then block, then row. Blocks go by their ids' ranks, not the ids (a million
    string comparisons cost seconds), and time and block as one int64 key where it fits: Postgres gives
    each series' times of a block as one sorted run, which a stable sort of one key merges quickly; a tie
    of time and block (a profile stored twice) falls back to sorting by all three."""
    if not len(time):
        return np.zeros(0, np.int64)
    span = int(block_rank.max()) + 1
    low = int(time.min())
    if (int(time.max()) - low) * span < 2**62:
        order = np.argsort((time - low) * span + block_rank, kind="stable")
        key = time[order] - low  # as the key, without building it again
        key = key * span + block_rank[order]
        if not (key[1:] == key[:-1]).any():
            return order
    return np.lexsort((row, block_rank, time))


def unpack_rows(found: list[tuple]) -> ProfileRows:
    """block_series rows (series_id, block_id, times, rows[, totals, hashes]) as one profile per element;
    totals and content hashes 0 where the rows do not carry them."""
    counts = [len(r[2]) // _TIME.itemsize for r in found]
    time = _column([r[2] for r in found], _TIME)
    carried = bool(found) and len(found[0]) > 4
    blocks, block = np.unique(np.array([r[1] for r in found], str), return_inverse=True)
    return ProfileRows(
        series_id=np.repeat(np.array([r[0] for r in found], np.int64), counts),
        time=time,
        block=np.repeat(block.reshape(-1).astype(np.int32), counts),
        row=_column([r[3] for r in found], _ROW),
        total=_column([r[4] for r in found], _TOTAL) if carried else np.zeros(len(time), np.int64),
        content_hash=_column([r[5] for r in found], _HASH) if carried else np.zeros(len(time), np.int64),
        blocks=blocks,
    )


def block_objects(db: Database, block_ids: Sequence[str]) -> dict[str, StoredObject]:
    """Each block's object key, its size in bytes and whether it holds pre-merged trees."""
    with db.connection() as conn:
        found = conn.execute("SELECT id, key, bytes, trees FROM blocks WHERE id = ANY(%s)",
                             [list(block_ids)]).fetchall()
    return {block_id: StoredObject(key, size, trees) for block_id, key, size, trees in found}


def profile_types(db: Database, tenant: str | Sequence[str], start: int, end: int) -> list[str]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT DISTINCT profile_type FROM series WHERE tenant = ANY(%s) AND last_seen >= %s AND first_seen <= %s"
            " ORDER BY 1", [_tenants(tenant), start, end]
        ).fetchall()
    return [r[0] for r in rows]


def time_bounds(db: Database, tenant: str | Sequence[str]) -> tuple[int, int] | None:
    """The times of the tenant's (or several tenants') oldest and newest stored profiles; None if it has none."""
    with db.connection() as conn:
        oldest, newest = conn.execute(
            "SELECT min(bs.min_time), max(bs.max_time) FROM index_series bs JOIN series s ON s.id = bs.series_id"
            " WHERE s.tenant = ANY(%s)", [_tenants(tenant)]).fetchone()
    return None if oldest is None else (int(oldest), int(newest))
