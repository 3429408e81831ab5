"""The ingester's maintenance loop: compaction, retention and deleting retired blocks, every interval.

Each round expires what is past the retention and deletes retired objects after their grace period,
then takes, per tenant, the tenant's compaction lock in Postgres (so with several ingesters one
compacts a tenant at a time and the others skip it) and runs the hour and day jobs that are due. A job
that fails on its blocks is skipped by `compact_tenant` itself; any other failure of retention or of one
tenant is logged and the round goes on with the next step or tenant, except Postgres or the object store
being away, which ends the round. Every step leaves the store consistent, so the next round starts over.
"""

from __future__ import annotations

import logging
import time

from prometheus_client import Counter, Gauge

from flamewatch.events.store import prune as prune_events
from flamewatch.ingester.config import MaintenanceConfig
from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.storage.compaction import Skipped, compact_tenant, due, tenant_lock, tenants_with_blocks
from flamewatch.storage.errors import StorageUnavailable
from flamewatch.storage.objstore import ObjectStore
from flamewatch.storage.postgres import Database, try_lock
from flamewatch.storage.retention import delete_retired, expire

log = logging.getLogger(__name__)

COMPACTED = Counter("flamewatch_compacted_blocks", "Blocks merged into hour or day blocks", ["level"])
EXPIRED = Counter("flamewatch_expired_blocks", "Blocks taken out of the index by retention")
SKIPPED = Gauge("flamewatch_compaction_skipped_blocks", "Blocks left out of compaction after their job failed on "
                "them, until their back-off ends (each is logged when it fails)")


class Maintenance:
    def __init__(self, config: MaintenanceConfig, store: ObjectStore, db: Database):
        self.config, self._store, self._db = config, store, db
        self._skipped = Skipped()  # blocks that failed their compaction job, until their back-off ends
        self._failures = RateLimitedLog(log)

    def run_now(self) -> None:
        """One round as of now (the ingester runs it every `interval_s`, `flamewatch.periodic.every`)."""
        self.run_once(time.time_ns())

    def run_once(self, now_ns: int) -> int:
        """Retention first, so nothing about to expire is compacted. Returns the compaction jobs run."""
        self._isolated("retention", self._retention, now_ns)
        jobs = sum(self._isolated(f"compaction of tenant {tenant}", self._compact, tenant, now_ns) or 0
                   for tenant in tenants_with_blocks(self._db))
        SKIPPED.set(len(self._skipped))
        return jobs

    def idle(self) -> bool:
        """No block is waiting out a back-off after a failed job: a process that stops now forgets nothing."""
        return not len(self._skipped)

    def retention_now(self) -> None:
        """The retention step of a round alone: queries and deletes, no block read (see `compaction_due`)."""
        self._isolated("retention", self._retention, time.time_ns())

    def compaction_due(self) -> list[str]:
        """The tenants a round would compact now, found with the queries the round plans with: what
        `flamewatch all` asks before it starts a compactor process."""
        now_ns = time.time_ns()
        return [tenant for tenant in tenants_with_blocks(self._db)
                if due(self._db, tenant, now_ns, self.config.compaction)]

    def _retention(self, now_ns: int) -> None:
        with try_lock(self._db, "retention") as mine:
            if mine:
                EXPIRED.inc(expire(self._db, self.config.retention, now_ns).blocks)
                if pruned := prune_events(self._db, self.config.retention.of, now_ns):
                    log.info("retention: %d event(s) older than their tenant's retention deleted", pruned)
                delete_retired(self._db, self._store, int(self.config.retired_grace_s * 1e9))

    def _compact(self, tenant: str, now_ns: int) -> int:
        with tenant_lock(self._db, tenant) as mine:
            if not mine:
                return 0
            jobs = compact_tenant(self._db, self._store, tenant, now_ns, self.config.compaction, self._skipped)
            for job in jobs:
                COMPACTED.labels(str(job.level)).inc(job.inputs)
            return len(jobs)

    def _isolated(self, what: str, step, *args):
        """Run one step of the round and return what it returns; its failure is logged (None returned) and
        does not stop the next steps, unless storage is away (then every later step would fail the same way:
        the round ends)."""
        try:
            return step(*args)
        except StorageUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - one tenant's trouble must not stop the others
            self._failures.log(logging.WARNING, f"{what}:{type(exc).__name__}", "%s failed: %s: %s", what,
                               type(exc).__name__, exc)
