"""The long-range benchmark's data (`long_range.py`): a month of one service and a week of a fleet, as
compacted blocks with and without pre-merged trees, generated once into `.cache/long-range/` and reused.

Two data directories of `flamewatch all`'s layout (an embedded Postgres under `postgres/`, filesystem
objects under `objects/`) hold the same profiles in the same blocks:

    trees/   blocks as the compactor writes them: with the pre-merged tree of each series and hour
    raw/     the same blocks compacted without trees (`blockwrite.compact_into(..., trees=False)`)

Profiles: the real Go CPU profiles of `corpus.py` (each pprof is two typed profiles, CPU time and
samples), replayed as `corpus.Fleet` lays them out:

- the **month**: one service (`month-0`, one instance), a CPU profile every `month_every` (10) s for
  `month_days` (30) days before `END`: 259,200 pprofs;
- the **fleet**: 10 services x 10 instances (`svc-*`, 100 series), a CPU profile per instance every
  `fleet_every` (60) s for `fleet_days` (7) days before the month. Every 10 s would be 6 million pprofs
  (hours of generating on 2 cores), and an hour of them more than one compaction job takes.

The two never share a day, so their blocks are what the compactor leaves for each: a day block per day
for the month (17,280 typed profiles), an hour block per hour for the fleet (a day of it is over
`max_job_profiles`, so it stays in hour blocks). Each block is written as compaction writes it
(`blockwrite.compact_into`, rows in `series_order`, every series' profiles indexed by `index.commit_block`)
from the day's profiles prepared as the ingester prepares a push (`prepare`) and gathered in one flush
block. A captured profile is prepared once per series and its copies take their own times: the stored
profile is what preparing it at that time gives, except its content hash, which is the first copy's (it
only tells retried pushes apart, and no time repeats), and its values (below).

Each copy is a fresh draw of its capture (`resample`): every stack's sample count is drawn from a Poisson
distribution whose mean is its count in the capture, which is what sampling the same program again at
the same rate gives, and its CPU time scales with it; a stack drawn zero times is left out. Replayed as
captured, 100 series cycling through 24 profiles repeat each one 250 times in an hour block, and zstd
stored such a repeat in 34 bytes: the raw blocks were a fifth of what profiles that differ take, and every
figure measured against them (the pre-merged trees' share of storage, a block's share of the cache, what a
raw merge reads) measured the repeats. A real fleet repeats nothing.

The directory is named by `VERSION`, the shape and a hash of the corpus, so a change of any of them
generates anew (and removes the older directories). A `done.json` written last marks a complete one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from corpus import Fleet, Pool, at_time
from ulid import ULID

from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.storage import index
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.blockwrite import BlockEntry, compact_into, series_order, write_block
from flamewatch.storage.index import BlockRecord, IndexEntry
from flamewatch.storage.keys import LEVEL_DAY, LEVEL_HOUR, block_key
from flamewatch.storage.objstore import FilesystemConfig, open_object_store
from flamewatch.storage.postgres import Database, PostgresConfig, open_database

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "long-range"
# What is generated and how: change it and the data is generated anew (2: values dictionary-encoded; 3: trees
# in the order of their first rows; 4: every copy of a capture a fresh draw of it)
VERSION = "4"
SEED = 22  # of the draws: the same corpus gives the same data on every machine
TENANT = "anonymous"  # the tenant of a request that names none
HOUR_NS = 3600 * 10**9
DAY_NS = 24 * HOUR_NS
END = 1_767_571_200 * 10**9  # 2026-01-05 00:00 UTC: the month ends here, the fleet's week a month before
VARIANTS = {"trees": True, "raw": False}
POOL = 24  # captured profiles of the corpus; a day of either fleet is a whole number of its cycles


@dataclass(frozen=True)
class Shape:
    month_every: int = 10
    month_days: int = 30
    fleet_every: int = 60
    fleet_days: int = 7
    services: int = 10
    instances: int = 10

    @property
    def month(self) -> Fleet:
        seconds = self.month_days * 86400
        return Fleet(1, 1, self.month_every, END - seconds * 10**9, seconds, prefix="month", kinds=("cpu",))

    @property
    def fleet(self) -> Fleet:
        seconds = self.fleet_days * 86400
        return Fleet(self.services, self.instances, self.fleet_every, self.month.start_ns - seconds * 10**9,
                     seconds, kinds=("cpu",))


@dataclass(frozen=True)
class Dataset:
    """A generated directory: the data directory of each variant and what was generated."""

    path: Path
    shape: Shape
    summary: dict

    def data_dir(self, variant: str) -> Path:
        return self.path / variant

    def object_bytes(self, variant: str, prefix: str = "") -> int:
        """Bytes of the variant's block objects (those whose series' service starts with `prefix`)."""
        return sum(b["bytes"][variant] for b in self.summary["blocks"] if b["what"].startswith(prefix))


def ensure(shape: Shape, pool: Pool) -> Dataset:
    """The dataset of `shape` from the cache, generated first when missing or incomplete."""
    path = CACHE / _name(shape, pool)
    done = path / "done.json"
    if not done.exists():
        _remove_others(path)
        shutil.rmtree(path, ignore_errors=True)
        _generate(path, shape, pool)
    return Dataset(path, shape, json.loads(done.read_text()))


def _name(shape: Shape, pool: Pool) -> str:
    digest = hashlib.blake2b(digest_size=4)
    for kind in sorted(pool.profiles):
        for served in pool.profiles[kind]:
            digest.update(served)
    s = shape
    return (f"v{VERSION}-month{s.month_days}d{s.month_every}s-fleet{s.services}x{s.instances}-{s.fleet_days}d"
            f"{s.fleet_every}s-corpus{digest.hexdigest()}")


def _remove_others(keep: Path) -> None:
    for other in CACHE.glob("v*"):
        if other != keep and other.is_dir():
            print(f"long-range data: removing {other} (another version or shape)", flush=True)
            shutil.rmtree(other)


@dataclass
class _Target:
    """One variant's storage while generating."""

    db: Database
    store: object
    trees: bool


def _generate(path: Path, shape: Shape, pool: Pool) -> None:
    started = time.monotonic()
    print(f"long-range data: generating {path} (15-20 minutes on 2 cores; later runs reuse "
          "it)", flush=True)
    targets = {name: _open(path / name, trees) for name, trees in VARIANTS.items()}
    blocks: list[dict] = []
    try:
        prepared: dict = {}
        rng = np.random.default_rng(SEED)
        for what, fleet, level in (("month", shape.month, LEVEL_DAY), ("svc", shape.fleet, LEVEL_HOUR)):
            days = list(_days(fleet))
            for day, day_fleet in enumerate(days):
                entries = _entries(day_fleet, pool, prepared, rng)
                blocks += _write_day(entries, level, what, targets)
                print(f"long-range data: {what} day {day + 1}/{len(days)} ({len(entries)} typed profiles), "
                      f"{time.monotonic() - started:.0f} s", flush=True)
    finally:
        for t in targets.values():
            t.db.close()
            t.store.close()
    summary = {"version": VERSION, "shape": dataclasses.asdict(shape), "seconds": time.monotonic() - started,
               "month_pprofs": shape.month.count(), "fleet_pprofs": shape.fleet.count(), "blocks": blocks}
    (path / "done.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"long-range data: generated in {summary['seconds']:.0f} s", flush=True)


def _open(data_dir: Path, trees: bool) -> _Target:
    data_dir.mkdir(parents=True)
    db = open_database(PostgresConfig(data_dir=str(data_dir / "postgres")))
    return _Target(db, open_object_store(FilesystemConfig(str(data_dir / "objects"))), trees)


def _days(fleet: Fleet) -> Iterator[Fleet]:
    """The fleet a day at a time. A day's steps are a whole number of pool cycles (8,640 and 1,440 steps
    of 24 profiles), so each day replays the pool as the whole range would."""
    for start in range(fleet.start_ns, fleet.end_ns, DAY_NS):
        yield dataclasses.replace(fleet, start_ns=start, seconds=min(86400, (fleet.end_ns - start) // 10**9))


def _entries(fleet: Fleet, pool: Pool, prepared: dict, rng: np.random.Generator) -> list[BlockEntry]:
    """The fleet's typed profiles, each captured profile prepared once per series and every copy of it
    a fresh draw (see the docstring)."""
    entries = []
    for labels, time_ns, served in fleet.slots(pool):
        key = (labels["instance"], id(served))
        if key not in prepared:
            prepared[key] = prepare(labels, at_time(served, time_ns), IngestLimits(), time_ns).entries
        entries += resample(prepared[key], time_ns, rng)
    return entries


def resample(typed: list[BlockEntry], time_ns: int, rng: np.random.Generator) -> list[BlockEntry]:
    """The typed profiles of one pprof, one per sample type in the pprof's order (as `prepare` gives them),
    as another capture of the same program at `time_ns`: each sample's count drawn from Poisson(count), its
    other values scaled by the same factor."""
    source = typed[0].profile.source
    values = source.samples.values
    units = [unit for _, unit in source.sample_type_names()]
    count = units.index("count") if "count" in units else 0
    drawn = rng.poisson(values[:, count])
    scale = drawn / np.maximum(values[:, count], 1)
    columns = [drawn if c == count else np.rint(values[:, c] * scale).astype(np.int64) for c in range(len(units))]
    return [dataclasses.replace(e, time_ns=time_ns, profile=dataclasses.replace(e.profile, values=column))
            for e, column in zip(typed, columns, strict=True)]


def _write_day(entries: list[BlockEntry], level: int, what: str, targets: dict[str, _Target]) -> list[dict]:
    """The day's profiles as one flush block, compacted into a block per hour or per day in each variant."""
    flushed = BlockReader(write_block(entries))
    times = np.array([e.time_ns for e in entries], np.int64)
    period = HOUR_NS if level == LEVEL_HOUR else DAY_NS
    written = []
    for start in np.unique(times - times % period).tolist():
        rows = np.flatnonzero((times >= start) & (times < start + period))
        order = series_order([(flushed, rows)])
        block_id = str(ULID())
        sizes = {name: _write_block(t, flushed, rows, order, level, block_id, [entries[i] for i in rows[order]])
                 for name, t in targets.items()}
        written.append({"what": what, "start_ns": start, "profiles": len(rows), "bytes": sizes})
    return written


def _write_block(target: _Target, flushed: BlockReader, rows: np.ndarray, order: np.ndarray, level: int,
                 block_id: str, placed: list[BlockEntry]) -> int:
    """One compacted block of the rows, stored and indexed as a compaction job stores and indexes it."""
    sink = io.BytesIO()
    has_trees = compact_into(sink, [(flushed, rows)], order, trees=target.trees)
    data = sink.getvalue()
    lo, hi = min(e.time_ns for e in placed), max(e.time_ns for e in placed)
    key = block_key(TENANT, level, lo, block_id)
    target.store.put(key, data)
    record = BlockRecord(block_id, TENANT, key, lo, hi, level, len(data), len(placed), has_trees)
    index.commit_block(target.db, record, [IndexEntry(e.fingerprint, e.labels, e.profile.profile_type.id, e.time_ns,
                                                      row, e.profile.total, e.content_hash)
                                           for row, e in enumerate(placed)])
    return len(data)
