"""A read of several tenants (X-Scope-OrgID `a|b`) in the engine, on a real Postgres and real Go profiles:
every answer is the merge of each tenant's own (trees and totals summed, series, label values and types
unioned, a label set both tenants have listed once), a read naming one tenant answers exactly as that
tenant's read did, and the cost limit of the smallest-limited tenant holds the sum."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from e2e.pushes import rewritten
from integration.test_compaction import BASE, CPU, HEAP, MIN

from flamewatch.api.perftools.profiles import profile_pb2
from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.ingester.writer import BlockWriter
from flamewatch.querier import api
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.cost import QueryTooCostly
from flamewatch.querier.engine import Querier
from flamewatch.querier.formats import renderer
from flamewatch.querier.paths import PathIndex
from flamewatch.storage.objstore import FilesystemConfig, open_object_store

pytestmark = [pytest.mark.postgres, pytest.mark.go]

ALL = (0, 2**62)
A, B, BOTH = "team-a", "team-b", ("team-a", "team-b")
# (tenant, service, minute): both tenants have service "api", so one label set is in both
PUSHES = [(A, "api", 0), (A, "api", 1), (A, "db", 2), (B, "api", 0), (B, "web", 3)]


@pytest.fixture
def stored(db, tmp_path: Path, go_profiles):
    store = open_object_store(FilesystemConfig(str(tmp_path / "objects")))
    for tenant, service, minute in PUSHES:
        for name in ("cpu", "heap"):
            t = BASE + minute * MIN
            prepared = prepare({"service_name": service}, rewritten(go_profiles[name], time_ns=t), IngestLimits(), t)
            BlockWriter(store, db).write(tenant, prepared.entries)
    return db, store


def querier(stored, **config) -> Querier:
    db, store = stored
    return Querier(db, BlockCache(store, 1 << 30, 4, PathIndex()), QuerierConfig(**config))


def self_values(q: Querier, tenant, query: str) -> Counter:
    """Self value per function name over the merged tree."""
    tree = q.merge(tenant, query, *ALL).tree
    out: Counter = Counter()
    for name, value in zip(tree.names[tree.name].tolist(), tree.self_value.tolist()):
        out[name] += value
    return Counter({name: v for name, v in out.items() if v})


def test_a_merge_of_two_tenants_is_the_sum_of_theirs(stored):
    q = querier(stored)
    for query in (CPU + "{}", HEAP + "{}", CPU + '{service_name="api"}'):
        both, a, b = (self_values(q, t, query) for t in (BOTH, A, B))
        assert both.keys() == (a + b).keys()
        for name in both:  # gauges are averaged per series, and each tenant's series are its own
            assert both[name] == pytest.approx(a[name] + b[name], rel=1e-9), (query, name)
        merged = [q.merge(t, query, *ALL) for t in (BOTH, A, B)]
        assert merged[0].profiles == merged[1].profiles + merged[2].profiles
    totals = [q.query_range(t, CPU + "{}", BASE, BASE + 10 * MIN, MIN, ["service_name"]) for t in (BOTH, A, B)]
    summed: dict[tuple, float] = Counter()
    for answer in totals[1:]:
        for p in answer.series:
            for t, v in zip(p.timestamps.tolist(), p.values.tolist()):
                summed[p.labels["service_name"], t] += v
    assert {(p.labels["service_name"], t): v for p in totals[0].series
            for t, v in zip(p.timestamps.tolist(), p.values.tolist())} == pytest.approx(dict(summed))


def test_labels_series_and_types_are_the_union_and_a_shared_label_set_is_listed_once(stored):
    q = querier(stored)
    assert q.label_values(BOTH, "service_name", [], *ALL) == ["api", "db", "web"]
    assert q.label_values(A, "service_name", [], *ALL) == ["api", "db"]
    assert set(q.label_names(BOTH, [], *ALL)) == set(q.label_names(A, [], *ALL)) | set(q.label_names(B, [], *ALL))
    series = [(s.labels["service_name"], s.labels["__profile_type__"]) for s in q.series(BOTH, [], *ALL)]
    assert len(series) == len(set(series)) and {name for name, _ in series} == {"api", "db", "web"}
    assert len(series) == len(q.series(A, [], *ALL)) + len(q.series(B, [], *ALL)) - len(
        [s for s in q.series(B, [], *ALL) if s.labels["service_name"] == "api"])
    assert q.profile_types(BOTH, *ALL) == q.profile_types(A, *ALL)  # the same Go profiles in each
    assert q.time_bounds(BOTH) == (q.time_bounds(A)[0], q.time_bounds(B)[1])


def test_pprof_and_diff_of_two_tenants_hold_both(stored):
    q = querier(stored)

    def total(tenant) -> int:
        profile = profile_pb2.Profile.FromString(gzip.decompress(q.pprof(tenant, CPU + "{}", *ALL, None)[1]))
        return sum(s.value[0] for s in profile.sample)

    assert total(BOTH) == total(A) + total(B)
    left, right = (CPU + "{}", BASE, BASE + MIN + 1), (CPU + "{}", BASE + 2 * MIN, BASE + 4 * MIN)
    diff = api.diff(q, BOTH, left, right, 1 << 20)
    assert (diff["left_ticks"], diff["right_ticks"]) == (
        api.diff(q, A, left, right, 1 << 20)["left_ticks"] + api.diff(q, B, left, right, 1 << 20)["left_ticks"],
        api.diff(q, A, left, right, 1 << 20)["right_ticks"] + api.diff(q, B, left, right, 1 << 20)["right_ticks"])


def test_a_read_naming_one_tenant_answers_as_before(stored):
    q = querier(stored)
    for fmt in ("flamegraph", "top", "tree"):
        one, plain = (renderer(fmt)(q.merge(t, CPU + "{}", *ALL).tree, 4096) for t in ((A,), A))
        assert one == plain
    heap = [q.merge(t, HEAP + "{}", *ALL).tree for t in ((B,), B)]
    assert np.array_equal(heap[0].self_value, heap[1].self_value) and np.array_equal(heap[0].parent, heap[1].parent)
    assert [s.labels for s in q.series((A,), [], *ALL)] == [s.labels for s in q.series(A, [], *ALL)]


def test_the_sum_is_held_to_the_smallest_limit_of_the_tenants(stored):
    whole = api.analyze(querier(stored), BOTH, CPU + "{}", *ALL).cost.bytes
    of_a = api.analyze(querier(stored), A, CPU + "{}", *ALL).cost.bytes
    assert 0 < of_a < whole
    q = querier(stored, tenant_max_bytes={A: whole - 1, B: 0})  # b: no limit of its own
    assert q.merge(A, CPU + "{}", *ALL).profiles == 3  # each alone is within its limit
    assert q.merge(B, CPU + "{}", *ALL).profiles == 2
    with pytest.raises(QueryTooCostly, match=f"a query of tenants {A}, {B} may read"):
        q.merge(BOTH, CPU + "{}", *ALL)
    assert api.analyze(q, BOTH, CPU + "{}", *ALL).max_bytes == whole - 1
    assert querier(stored, max_bytes=whole, tenant_max_bytes={B: whole * 2}).merge(BOTH, CPU + "{}", *ALL).profiles == 5
