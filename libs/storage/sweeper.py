"""Removes block objects that no index row points to.

A write uploads the block object first and then commits its rows in one transaction, so a crash in
between leaves an object nobody can find (never rows without an object). Such an orphan is safe to
delete once it is older than any write can take from upload to commit: `grace_ns` must exceed that
by a wide margin, or the sweeper could delete the object of a slow write that is about to commit.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Iterable, Iterator

from flamewatch.storage.objstore import ObjectInfo, ObjectStore
from flamewatch.storage.postgres import Database

logger = logging.getLogger(__name__)

DEFAULT_GRACE_NS = 3600 * 10**9
_BLOCK_KEY = re.compile(r"^[^/]+/blocks/\d+/\d{4}/\d{2}/\d{2}/[0-9A-Za-z]{26}\.parquet$")
_LOOKUP_BATCH = 1000


def sweep_orphans(store: ObjectStore, db: Database, *, grace_ns: int, now_ns: int) -> list[str]:
    """Delete block objects older than `grace_ns` that are not in `blocks.key`; returns their keys."""
    deleted: list[str] = []
    for tenant in store.list_prefixes(""):
        old_blocks = (o for o in store.list(f"{tenant}blocks/") if _is_old_block(o, grace_ns, now_ns))
        for batch in _batches(old_blocks, _LOOKUP_BATCH):
            deleted += _delete_orphans(store, db, batch, now_ns)
    return deleted


def delete_unindexed(store: ObjectStore, db: Database, keys: list[str]) -> list[str]:
    """Delete at once the objects among `keys` that no index row points to (a failed write's own objects,
    whose commit is known to have failed or not to have happened); returns their keys. Raises when the
    index cannot be read, leaving the objects to `sweep_orphans`: an object whose commit may have gone
    through must not be deleted on a guess."""
    if not keys:
        return []
    indexed = _indexed_keys(db, keys)
    unindexed = [key for key in keys if key not in indexed]
    for key in unindexed:
        store.delete(key)
    return unindexed


def _is_old_block(obj: ObjectInfo, grace_ns: int, now_ns: int) -> bool:
    return _BLOCK_KEY.match(obj.key) is not None and now_ns - obj.last_modified_ns > grace_ns


def _delete_orphans(store: ObjectStore, db: Database, objects: list[ObjectInfo], now_ns: int) -> list[str]:
    indexed = _indexed_keys(db, [o.key for o in objects])
    orphans = [o for o in objects if o.key not in indexed]
    for orphan in orphans:
        store.delete(orphan.key)
        age_s = (now_ns - orphan.last_modified_ns) / 1e9
        logger.info("deleted orphan block %s (%d bytes, %.0f s old, not in the index)",
                    orphan.key, orphan.size, age_s)
    return [o.key for o in orphans]


def _indexed_keys(db: Database, keys: list[str]) -> set[str]:
    with db.connection() as conn:
        rows = conn.execute("SELECT key FROM blocks WHERE key = ANY(%s)", (keys,)).fetchall()
    return {key for (key,) in rows}


def _batches(items: Iterable[ObjectInfo], size: int) -> Iterator[list[ObjectInfo]]:
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch
