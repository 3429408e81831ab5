"""Pre-merged trees on a real Postgres, fed real Go profiles through the ingester's writer: for every query
shape, a merge that reads the compacted blocks' trees answers to the bit what reading their profiles
answers, and what the flushed blocks answered before compaction; a shape the trees cannot answer
(samples filtered, part of an hour) reads the profiles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_compaction import BASE, CPU, HEAP, HOUR, MIN, TENANT, push

from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.calltree import CallTree
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.engine import Querier
from flamewatch.querier.formats import renderer
from flamewatch.querier.merging import Rows
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.premerged import PreMergedTrees
from flamewatch.storage import compaction
from flamewatch.storage.compaction import compact_tenant
from flamewatch.storage.objstore import FilesystemConfig, ObjectStore, open_object_store
from flamewatch.storage.postgres import Database

pytestmark = [pytest.mark.postgres, pytest.mark.go]

WHOLE = (BASE - HOUR, BASE + 4 * HOUR)
CUT = (BASE + 20 * MIN, BASE + 2 * HOUR + 30 * MIN)  # only 11:00-12:00 is whole
# name -> (query, range, granularity, whether trees answer some rows)
SHAPES = {
    "one series": (CPU + '{instance="a"}', WHOLE, "functions", True),
    "many series": (CPU + "{}", WHOLE, "functions", True),
    "series label matchers": (CPU + '{service_name="api", instance=~"a|c"}', WHOLE, "functions", True),
    "a range cutting hours": (CPU + "{}", CUT, "functions", True),
    "lines": (CPU + '{instance!="b"}', WHOLE, "lines", True),
    "gauge": (HEAP + "{}", WHOLE, "functions", True),
    "gauge over a range cutting hours": (HEAP + '{instance=~"b|c"}', CUT, "functions", True),
    "sample label filter": (CPU + '{handler="/hash"}', WHOLE, "functions", False),
    "within one hour": (CPU + "{}", (BASE + 5 * MIN, BASE + 50 * MIN), "functions", False),
}


class Counted(PreMergedTrees):
    """The trees source, counting the rows it is handed: profile rows, and index rows taken whole."""

    rows = 0

    def tree(self, rows: Rows, granularity, symbols):
        Counted.rows += len(rows.row)
        return super().tree(rows, granularity, symbols)

    def series_tree(self, rows: Rows, granularity, symbols):
        Counted.rows += len(rows.row)
        return super().series_tree(rows, granularity, symbols)


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return open_object_store(FilesystemConfig(str(tmp_path / "objects")))


def fill(db: Database, store: ObjectStore, go_profiles) -> None:
    """Three hours of CPU and heap profiles of a and b every 10 minutes, and of c in the middle hour only
    (so gauge series have different numbers of profiles in a range)."""
    for i in range(18):
        t = BASE + i * 10 * MIN
        instances = ["ab"[i % 2]] + (["c"] if HOUR <= t - BASE < 2 * HOUR else [])
        for instance in instances:
            push(db, store, go_profiles["cpu"], t, instance)
            push(db, store, go_profiles["heap"], t + 3 * MIN, instance)


def merged(querier: Querier, shape: str, trees: bool) -> CallTree:
    query, (start, end), granularity, _ = SHAPES[shape]
    querier.trees = Counted(querier.blocks) if trees else None
    return querier.merge(TENANT, query, start, end, granularity).tree


def exactly(tree: CallTree) -> tuple:
    """Per node its name, parent and self value, with the value's type: equal only to the bit."""
    names = np.asarray(tree.names, object)[tree.name]
    return names.tolist(), tree.parent.tolist(), tree.self_value.dtype.str, tree.self_value.tobytes()


def test_every_query_shape_answers_the_same_from_trees_as_from_profiles(db, store, go_profiles) -> None:
    fill(db, store, go_profiles)
    querier = Querier(db, BlockCache(store, 1 << 30, 2, PathIndex()), QuerierConfig())
    flushed = {shape: exactly(merged(querier, shape, trees=True)) for shape in SHAPES}
    assert Counted.rows == 0  # flushed blocks hold no trees: nothing is whole in them
    compact_tenant(db, store, TENANT, BASE + 4 * HOUR)
    assert {b.level for b in compaction.live_blocks(db, TENANT)} == {1}
    with db.connection() as conn:
        assert conn.execute("SELECT bool_and(trees) FROM blocks WHERE state = 'live'").fetchone()[0]
    for shape, (_, _, _, answered_by_trees) in SHAPES.items():
        Counted.rows = 0
        from_trees = merged(querier, shape, trees=True)
        assert (Counted.rows > 0) == answered_by_trees, shape
        from_profiles = merged(querier, shape, trees=False)
        assert exactly(from_trees) == exactly(from_profiles) == flushed[shape], shape
        for fmt in ("flamegraph", "top", "tree"):
            assert renderer(fmt)(from_trees, 300) == renderer(fmt)(from_profiles, 300), (shape, fmt)
        assert renderer("top")(from_trees, 300)["total"] > 0, shape


def test_an_hour_with_a_late_profile_beside_its_block_reads_the_tree_and_the_late_profile(db, store,
                                                                                        go_profiles) -> None:
    fill(db, store, go_profiles)
    compact_tenant(db, store, TENANT, BASE + 4 * HOUR)
    push(db, store, go_profiles["cpu"], BASE + HOUR + 7 * MIN, "a")  # late: a flushed block beside the hour's
    push(db, store, go_profiles["heap"], BASE + HOUR + 7 * MIN, "a")
    querier = Querier(db, BlockCache(store, 1 << 30, 2, PathIndex()), QuerierConfig())
    for shape in ("one series", "gauge"):
        Counted.rows = 0
        from_trees = merged(querier, shape, trees=True)
        assert Counted.rows > 0
        assert exactly(from_trees) == exactly(merged(querier, shape, trees=False)), shape


def test_a_gauge_over_time_read_from_the_blocks_equals_the_index_when_the_sample_filter_keeps_everything(
        db, store, go_profiles) -> None:
    # handler="" is a sample matcher (no series has the label) that every heap sample passes (they carry
    # no labels): the totals are read from the blocks, a gauge weighed per step, and must be the index's
    fill(db, store, go_profiles)
    querier = Querier(db, BlockCache(store, 1 << 30, 2, PathIndex()), QuerierConfig())
    start, end = WHOLE

    def points(selector: str) -> list:
        series = querier.query_range(TENANT, HEAP + selector, start, end, 10 * MIN, ["instance"]).series
        return sorted((tuple(sorted(s.labels.items())), s.timestamps.tolist(), s.values.tolist()) for s in series)

    from_index = points("{}")
    assert from_index and any(v for _, _, values in from_index for v in values)
    assert points('{handler=""}') == from_index
