"""What a query would read, told before it reads (`AnalyzeQuery`), and the per-tenant limit on it
(`--query.max-bytes`, `--query.max-bytes-tenant`), on a real Postgres and real Go profiles: the counts
are those of what the merge then fetches, and a query over the limit is refused before any block is."""

from __future__ import annotations

from pathlib import Path

import pytest
from integration.test_compaction import BASE, CPU, MIN, TENANT, push

from flamewatch.querier import api
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.cost import QueryTooCostly, size
from flamewatch.querier.engine import Querier
from flamewatch.querier.paths import PathIndex
from flamewatch.rpc.errors import status_of
from flamewatch.storage.objstore import FilesystemConfig, open_object_store

pytestmark = [pytest.mark.postgres, pytest.mark.go]

ALL = (0, 2**62)


class CountingCache(BlockCache):
    """Notes every block key a query streams."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.streamed: set[str] = set()

    def stream(self, keys):
        keys = list(keys)
        self.streamed.update(keys)
        return super().stream(keys)


@pytest.fixture
def stored(db, tmp_path: Path, go_profiles):
    store = open_object_store(FilesystemConfig(str(tmp_path / "objects")))
    for i in range(12):  # 12 blocks of one profile per sample type, instances a and b in turn
        push(db, store, go_profiles["cpu"], BASE + i * MIN, "ab"[i % 2])
    return db, store


def querier(stored, **config) -> Querier:
    db, objects = stored
    return Querier(db, CountingCache(objects, 1 << 30, 4, PathIndex()), QuerierConfig(**config))


def block_bytes(db, keys: set[str]) -> int:
    with db.connection() as conn:
        return conn.execute("SELECT sum(bytes) FROM blocks WHERE key = ANY(%s)", [sorted(keys)]).fetchone()[0]


@pytest.mark.parametrize("query, span, blocks, series", [
    (CPU + "{}", ALL, 12, 2),
    (CPU + '{instance="a"}', ALL, 6, 1),
    (CPU + "{}", (BASE, BASE + 3 * MIN), 4, 2),
    (CPU + '{instance="c"}', ALL, 0, 0),
])
def test_analyze_counts_what_the_merge_then_reads(stored, query, span, blocks, series):
    q = querier(stored)
    found = api.analyze(q, TENANT, query, *span)
    assert q.blocks.streamed == set()  # the index alone
    merged = q.merge(TENANT, query, *span)
    read = q.blocks.streamed
    assert (found.cost.blocks, found.cost.series, found.cost.profiles) == (len(read), series, merged.profiles)
    assert found.cost.blocks == blocks
    assert found.cost.bytes == (block_bytes(stored[0], read) if read else 0)
    assert found.cost.bytes == sum(len(stored[1].get(key)) for key in read)  # the objects' own sizes
    assert found.json() == {"blocks": blocks, "series": series, "profiles": merged.profiles,
                            "block_bytes": found.cost.bytes, "max_bytes": 0}


def whole(stored) -> int:
    return api.analyze(querier(stored), TENANT, CPU + "{}", *ALL).cost.bytes


@pytest.mark.parametrize("call", ["merge", "pprof", "changes", "query_range", "label_names"])
def test_a_query_over_the_byte_limit_is_refused_before_it_reads_saying_how_to_narrow_it(stored, call):
    total = whole(stored)
    q = querier(stored, max_bytes=total - 1)
    calls = {
        "merge": lambda: q.merge(TENANT, CPU + "{}", *ALL),
        "pprof": lambda: q.pprof(TENANT, CPU + "{}", *ALL, None),
        "changes": lambda: q.changes(TENANT, (CPU + "{}", *ALL), (CPU + '{instance="a"}', *ALL)),
        "query_range": lambda: q.query_range(TENANT, CPU + '{thread="x"}', BASE, BASE + 60 * MIN, MIN, []),
        "label_names": lambda: q.label_names(TENANT, ["{}"], *ALL),
    }
    with pytest.raises(QueryTooCostly) as caught:
        calls[call]()
    assert q.blocks.streamed == set()
    if call != "label_names":  # every profile type's blocks: the same blocks, as each holds both types
        assert str(caught.value) == (
            f"the query would read 12 blocks of {size(total)} (12 profiles of 2 series), more than the "
            f"{size(total - 1)} a query of tenant t may read (--query.max-bytes): narrow it with a "
            "shorter time range or a more specific selector, or raise the limit (--query.max-bytes, or "
            "--query.max-bytes-tenant for this tenant)")
    status = status_of(caught.value)
    assert (status.grpc_code.name, status.http_status) == ("RESOURCE_EXHAUSTED", 422)
    # Narrowed, the same query is answered.
    assert q.merge(TENANT, CPU + '{instance="a"}', *ALL).profiles == 6


def test_a_query_at_the_limit_is_answered(stored):
    assert querier(stored, max_bytes=whole(stored)).merge(TENANT, CPU + "{}", *ALL).profiles == 12


def test_a_tenant_s_own_limit_replaces_the_default(stored):
    total = whole(stored)
    unlimited = querier(stored, max_bytes=1, tenant_max_bytes={TENANT: 0})
    assert unlimited.merge(TENANT, CPU + "{}", *ALL).profiles == 12
    assert api.analyze(unlimited, TENANT, CPU + "{}", *ALL).max_bytes == 0
    tighter = querier(stored, max_bytes=0, tenant_max_bytes={TENANT: total // 2})
    with pytest.raises(QueryTooCostly):
        tighter.merge(TENANT, CPU + "{}", *ALL)
    assert api.analyze(tighter, TENANT, CPU + "{}", *ALL).max_bytes == total // 2
    others = querier(stored, max_bytes=1, tenant_max_bytes={"someone-else": 0})
    with pytest.raises(QueryTooCostly):
        others.merge(TENANT, CPU + "{}", *ALL)
