"""Write one batch of profiles durably: block object first, then its index rows in one transaction.

A crash between the two leaves an object without rows, which the sweeper removes later; never rows
without their object.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ulid import ULID

from flamewatch.storage.block import BlockEntry, write_block
from flamewatch.storage.index import BlockRecord, IndexEntry, commit_block
from flamewatch.storage.objstore import ObjectStore
from flamewatch.storage.postgres import Database

log = logging.getLogger(__name__)


def block_key(tenant: str, level: int, min_time_ns: int, block_id: str) -> str:
    day = time.strftime("%Y/%m/%d", time.gmtime(min_time_ns // 10**9))
    return f"{tenant}/blocks/{level}/{day}/{block_id}.parquet"


@dataclass(frozen=True)
class BlockWriter:
    store: ObjectStore
    db: Database

    def write(self, tenant: str, entries: Sequence[BlockEntry]) -> BlockRecord:
        started = time.perf_counter()
        data = write_block(entries)
        times = [e.time_ns for e in entries]
        block_id = str(ULID())
        record = BlockRecord(block_id, tenant, block_key(tenant, 0, min(times), block_id), min(times),
                             max(times), 0, len(data), len(entries))
        self.db.check_available()  # no upload while Postgres is known to be down: it would only leave an orphan
        self.store.put(record.key, data)
        commit_block(self.db, record, [_index_entry(i, e) for i, e in enumerate(entries)])
        log.debug("wrote block %s: %d profiles, %d bytes in %.0f ms", record.key, len(entries), len(data),
                  1e3 * (time.perf_counter() - started))
        return record


def _index_entry(row: int, e: BlockEntry) -> IndexEntry:
    return IndexEntry(e.fingerprint, e.labels, e.profile.profile_type.id, e.time_ns, row, e.profile.total)
