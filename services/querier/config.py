"""The querier's settings: its addresses, caches, defaults and per-query limits. Defaults live here only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

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
    # a merge of fewer profiles is read by the asked querier alone: a peer's round trip would cost more
    split_min_profiles: int = 20_000

    def max_bytes_of(self, tenant: str) -> int:
        return self.tenant_max_bytes.get(tenant, self.max_bytes)
