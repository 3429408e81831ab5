"""Write one batch of profiles durably: block object first, then its index rows in one transaction.

A crash between the two leaves an object without rows, which the sweeper removes later; never rows
without their object. A profile already stored (same series, time and content: a client retrying a
push whose acknowledgement it lost) is left out, so a retry never doubles the values.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ulid import ULID

from flamewatch.storage.blockwrite import BlockEntry, write_block
from flamewatch.storage.index import BlockRecord, IndexEntry, KnownSeries, commit_block, stored_profiles
from flamewatch.storage.keys import LEVEL_FLUSH, block_key
from flamewatch.storage.objstore import ObjectStore
from flamewatch.storage.postgres import Database

log = logging.getLogger(__name__)


def identity(e: BlockEntry) -> tuple[int, int, int]:
    """What makes two pushed profiles the same one: series, time and content."""
    return e.fingerprint, e.time_ns, e.content_hash


@dataclass(frozen=True)
class BlockWriter:
    store: ObjectStore
    db: Database
    known: KnownSeries = field(default_factory=KnownSeries)  # series rows this ingester wrote: not written again

    def write(self, tenant: str, entries: Sequence[BlockEntry]) -> BlockRecord | None:
        """Store the batch; None when every profile of it was stored before."""
        started = time.perf_counter()
        self.db.check_available()  # no upload while Postgres is known to be down: it would only leave an orphan
        fresh = self._new_profiles(tenant, entries)
        if not fresh:
            return None
        data = write_block(fresh)
        times = [e.time_ns for e in fresh]
        block_id = str(ULID())
        record = BlockRecord(block_id, tenant, block_key(tenant, LEVEL_FLUSH, min(times), block_id), min(times),
                             max(times), 0, len(data), len(fresh))
        self.store.put(record.key, data)
        commit_block(self.db, record, [_index_entry(i, e) for i, e in enumerate(fresh)], self.known)
        log.debug("wrote block %s: %d profiles, %d bytes in %.0f ms", record.key, len(fresh), len(data),
                  1e3 * (time.perf_counter() - started))
        return record

    def _new_profiles(self, tenant: str, entries: Sequence[BlockEntry]) -> list[BlockEntry]:
        """The entries not stored yet, once each, ordered by series and time (a series' rows contiguous).
        Entries without a content hash (0) are always new."""
        seen: set[tuple[int, int, int]] = set()
        fresh = []
        for e in entries:
            if e.content_hash and identity(e) in seen:
                continue
            seen.add(identity(e))
            fresh.append(e)
        stored = stored_profiles(self.db, tenant, [identity(e) for e in fresh if e.content_hash])
        if stored:
            log.info("tenant %s: %d profile(s) were stored before (a retried push), not storing them again",
                     tenant, len(stored))
            fresh = [e for e in fresh if identity(e) not in stored]
        return sorted(fresh, key=lambda e: (e.fingerprint, e.time_ns))


def _index_entry(row: int, e: BlockEntry) -> IndexEntry:
    return IndexEntry(e.fingerprint, e.labels, e.profile.profile_type.id, e.time_ns, row, e.profile.total,
                      e.content_hash)
