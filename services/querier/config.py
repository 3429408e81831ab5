"""The querier's settings: its addresses, caches, defaults and per-query limits. Defaults live here only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from flamewatch.rpc.tenant import Tenants, tenant_ids

MiB = 1 << 20


@dataclass(frozen=True)
class QuerierConfig:
    http_address: str = ":4200"
    grpc_address: str = ":4201"
    cache_bytes: int = 512 * MiB  # with the disk cache behind it, memory holds the hot blocks only
    embedded_cache_bytes: ClassVar[int] = 256 * MiB  # `flamewatch all` shares a laptop with everything else
    fetch_concurrency: int = 8
    default_max_nodes: int = 2048
    disk_cache_dir: str | None = None
    disk_cache_bytes: int = 10 * 1024 * MiB
    max_matchers: int = 100  # per selector: each costs a pass over the candidate series or their samples
    query_timeout_s: float = 30.0  # per engine call, Postgres statements included; 0: unbounded
    max_bytes: int = 0  # of block objects one selection may read; 0: unbounded
    tenant_max_bytes: Mapping[str, int] = field(default_factory=dict)  # tenants' own max_bytes
    # a merge reading fewer profiles (a tree counting as `fanout.TREE_COST`, 4) is read by the asked querier
    # alone: a split costs about 30 ms before any piece starts (the index's counts, the peer's own lookups)
    # and a third more CPU, while 100,000 profiles take 25-150 ms to merge (0.25-1.5 us each, bench/README.md
    # "Long ranges"; a fleet's week over trees, 16,800 trees or 67,200 by this count, answers as fast from
    # one querier)
    split_min_profiles: int = 100_000

    def max_bytes_of(self, tenant: Tenants) -> int:
        """The tenant's limit; for a read of several tenants, the smallest of theirs that is not 0 (0 when
        all are), as Pyroscope and Mimir take one limit of several tenants: naming another tenant beside
        one must not lift that one's limit."""
        limits = [self.tenant_max_bytes.get(t, self.max_bytes) for t in tenant_ids(tenant)]
        return min((n for n in limits if n), default=0)
