"""What a query would read, known from the index before any block is fetched, and the per-tenant limit
on it (`--query.max-bytes`, `--query.max-bytes-tenant`). A read of several tenants (X-Scope-OrgID a|b)
sums what it reads of each and is held to the smallest of their limits (`QuerierConfig.max_bytes_of`).

A selection's profile rows name their blocks, and the `blocks` table knows each block's size: the cost
is the blocks the rows are in, their bytes (a query fetches whole block objects), the series and the
profiles. `AnalyzeQuery` answers it; every read of blocks checks it first, so a query over the limit is
refused before it reads anything, with what it would have read and how to narrow it. With matchers on
sample labels the profiles are those of the selected series: which samples pass is only known by
reading them, so it is what the query reads, not what its answer counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from flamewatch.rpc.errors import CostLimitExceeded
from flamewatch.rpc.tenant import Tenants, tenant_ids
from flamewatch.storage.frames import run_firsts
from flamewatch.storage.index import EntryCounts, ProfileRows
from flamewatch.storage.mergeplan import WholeRows


@dataclass(frozen=True)
class QueryCost:
    blocks: int
    series: int
    profiles: int
    bytes: int  # of the block objects read


class QueryTooCostly(CostLimitExceeded):
    """A query would read more than its tenant's `--query.max-bytes`."""


def cost_of(rows: ProfileRows, block_bytes: Mapping[str, int], whole: WholeRows | None = None) -> QueryCost:
    """What reading the rows (and the index rows a merge takes `whole`) costs; `block_bytes` holds the size
    of each of their blocks."""
    if whole is None or not len(whole):
        blocks = rows.used_blocks()[0].tolist()
        return QueryCost(len(blocks), len(run_firsts(rows.series_id)[0]), len(rows),  # series come in runs
                         sum(block_bytes.get(b, 0) for b in blocks))
    blocks = np.union1d(rows.used_blocks()[0], whole.blocks).tolist()
    return QueryCost(len(blocks), len(np.union1d(rows.series_id, whole.series_id)), len(rows) + int(whole.count.sum()),
                     sum(block_bytes.get(b, 0) for b in blocks))


def cost_of_counts(counts: EntryCounts, block_bytes: Mapping[str, int]) -> QueryCost:
    """`cost_of` from the index's counts (`index.profile_counts`), without a row per profile."""
    blocks = np.unique(counts.block_id).tolist()
    return QueryCost(len(blocks), len(np.unique(counts.series_id)), int(counts.count.sum()),
                     sum(block_bytes.get(b, 0) for b in blocks))


def check(cost: QueryCost, limit: int, tenant: Tenants) -> None:
    """Refuse a query whose blocks hold more bytes than `limit` (0: no limit)."""
    if limit and cost.bytes > limit:
        named = tenant_ids(tenant)
        whose = f"tenant {named[0]}" if len(named) == 1 else f"tenants {', '.join(named)}"
        raise QueryTooCostly(
            f"the query would read {cost.blocks} blocks of {size(cost.bytes)} ({cost.profiles} profiles of "
            f"{cost.series} series), more than the {size(limit)} a query of {whose} may read "
            "(--query.max-bytes): narrow it with a shorter time range or a more specific selector, or raise "
            "the limit (--query.max-bytes, or --query.max-bytes-tenant for this tenant)")


_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB")


def size(n: int) -> str:
    """A byte count as people read it: 512 bytes, 1.5 MiB."""
    value, unit = float(n), 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{n} bytes" if unit == 0 else f"{value:.3g} {_UNITS[unit]}"
