"""What changed between two versions, on a real Postgres with profiles stored through the ingester's
writer: a function made more expensive in version 1.1 is ranked first and significant, its callers'
totals grow with it, and two versions of the same program show nothing significant."""

from __future__ import annotations

import numpy as np
import pytest
from infra.tinypprof import stacks_pprof

from flamewatch.changes.stats import Settings
from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.ingester.writer import BlockWriter
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.engine import Querier
from flamewatch.querier.paths import PathIndex
from flamewatch.storage.objstore import FilesystemConfig, ObjectStore, open_object_store

pytestmark = [pytest.mark.postgres]

TENANT = "team-a"
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
S = 10**9
BASE = 1_767_607_200 * S
# A program's CPU by stack, in samples per 10 s profile.
PROGRAM = {("main.main", "main.serve", "main.parse"): 300, ("main.main", "main.serve", "main.hash"): 200,
           ("main.main", "main.serve", "main.render", "main.render"): 150, ("main.main", "runtime.gc"): 100,
           ("main.main", "main.serve", "main.compress"): 250}


@pytest.fixture
def store(tmp_path) -> ObjectStore:
    return open_object_store(FilesystemConfig(str(tmp_path / "objects")))


def push_version(db, store, version: str, start: int, slower: dict[str, float], seed: int, n: int = 30) -> None:
    """`n` profiles 10 s apart, each a multinomial draw around the program's shares (the noise a real
    scrape has), with the functions of `slower` costing that much more."""
    rng = np.random.default_rng(seed)
    stacks = list(PROGRAM)
    weights = np.array([PROGRAM[s] * (1 + slower.get(s[-1], 0.0)) for s in stacks], float)
    for i in range(n):
        counts = rng.multinomial(int(weights.sum()), weights / weights.sum())
        data = stacks_pprof(dict(zip(stacks, counts.tolist())), start + i * 10 * S)
        labels = {"service_name": "api", "version": version}
        BlockWriter(store, db).write(TENANT, prepare(labels, data, IngestLimits(), start + i * 10 * S).entries)


def changes(db, store, a_version: str, b_version: str, **kwargs):
    querier = Querier(db, BlockCache(store, 64 << 20, 2, PathIndex()), QuerierConfig())
    side = (BASE, BASE + 3600 * S)
    return querier.changes(TENANT, (f'{CPU}{{version="{a_version}"}}', *side),
                           (f'{CPU}{{version="{b_version}"}}', *side), **kwargs)


def test_a_function_made_20_percent_slower_is_ranked_first_and_significant(db, store):
    push_version(db, store, "1.0", BASE, {}, seed=1)
    push_version(db, store, "1.1", BASE + 600 * S, {"main.hash": 0.20}, seed=2)
    found = changes(db, store, "1.0", "1.1")
    assert found.profiles == (30, 30)
    first = found.functions[0]
    assert first.name == "main.hash" and first.self.significant and first.total.significant
    assert first.self.a == pytest.approx(0.2, abs=0.01) and first.self.change > 0.02 and first.self.low > 0
    assert first.self.low <= first.self.change <= first.self.high
    by_name = {f.name: f for f in found.functions}
    assert by_name["main.serve"].total.change > 0  # its caller's total grows with it
    assert by_name["main.serve"].self.a == 0  # no self time of its own
    assert by_name["main.main"].total.a == pytest.approx(1.0)  # on every stack: all of the total
    assert by_name["main.render"].total.a == pytest.approx(by_name["main.render"].self.a)  # recursion counts once
    assert [f.name for f in found.regressions(0.01)] == ["main.hash"]


def test_the_same_program_under_two_versions_shows_nothing_significant(db, store):
    push_version(db, store, "1.0", BASE, {}, seed=3)
    push_version(db, store, "1.1", BASE + 600 * S, {}, seed=4)
    found = changes(db, store, "1.0", "1.1")
    assert not [f for f in found.functions if f.self.significant or f.total.significant]
    assert found.regressions(0.0) == []


def test_too_few_profiles_says_so_and_calls_nothing_significant(db, store):
    push_version(db, store, "1.0", BASE, {}, seed=5, n=2)
    push_version(db, store, "1.1", BASE + 600 * S, {"main.hash": 1.0}, seed=6, n=2)
    found = changes(db, store, "1.0", "1.1", settings=Settings(min_profiles=3))
    assert found.functions[0].name == "main.hash" and not found.functions[0].self.significant
    assert "at least 3 per side are needed" in found.notes[0]


def test_sides_of_two_profile_types_are_refused(db, store):
    push_version(db, store, "1.0", BASE, {}, seed=7, n=3)
    querier = Querier(db, BlockCache(store, 64 << 20, 2, PathIndex()), QuerierConfig())
    with pytest.raises(ValueError, match="both sides need the same profile type"):
        querier.changes(TENANT, (CPU, BASE, BASE + 3600 * S),
                        ("process_cpu:samples:count:cpu:nanoseconds", BASE, BASE + 3600 * S))
