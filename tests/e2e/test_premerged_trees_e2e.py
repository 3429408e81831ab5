"""Pre-merged trees as a user meets them: profiles pushed over HTTP to `flamewatch ingester`, queried from
`flamewatch querier`, then compacted by an ingester with `--compaction.interval` into hour and day blocks
that carry trees. Every answer (CPU and an in-use memory gauge; whole hours, a range cutting hours, a
sample label filter) is the same after compaction as before it, when only flushed profiles answered."""

from __future__ import annotations

import time

import psycopg
import pytest
from e2e.calls import CPU, HEAP, HOUR_NS, ingest, merge_answers
from e2e.cluster import Cluster
from e2e.pushes import rewritten
from infra.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

TENANT = "e2e-trees"
MIN = 60 * 10**9
DAY = 24 * HOUR_NS


def answers(cluster: Cluster, windows: dict[str, tuple[int, int]]) -> dict:
    return merge_answers(cluster.querier_url, TENANT, windows)


def tree_profiles(cluster: Cluster) -> float:
    """`flamewatch_querier_tree_profiles_total` of the querier: profiles merges took from trees."""
    text = cluster.http.get(f"{cluster.querier_url}/metrics").text
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("flamewatch_querier_tree_profiles_total "))


def test_answers_stay_the_same_when_compaction_adds_pre_merged_trees(cluster: Cluster, go_profiles) -> None:
    now = time.time_ns()
    day = now - now % DAY - 2 * DAY
    times = [day + 9 * HOUR_NS + i * 10 * MIN for i in range(12)]  # 09:00 to 10:50, two days ago
    for i, t in enumerate(times):
        instances = ["ab"[i % 2]] + (["c"] if i >= 6 else [])  # c only in the second hour
        for instance, kind in ((x, k) for x in instances for k in ("cpu", "heap")):
            r = ingest(cluster, TENANT, {"service_name": "api", "instance": instance},
                       rewritten(go_profiles[kind], time_ns=t))
            assert r.status_code == 200, r.text
    windows = {"whole hours": (day + 9 * HOUR_NS, day + 11 * HOUR_NS - 1),
               "cutting hours": (day + 9 * HOUR_NS + 25 * MIN, day + 10 * HOUR_NS + 35 * MIN)}
    before = answers(cluster, windows)
    assert set(cluster.live_block_levels(TENANT)) == {0}
    assert {before[t, "{}", "whole hours", "top"]["profiles"] for t in (CPU, HEAP)} == {18}

    cluster.add_ingester("compactor", "--compaction.interval", "0.5")
    wait_for(lambda: cluster.live_block_levels(TENANT) == [2], 60, "the tenant compacted into a day block")
    with psycopg.connect(cluster.storage.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT bool_and(trees) FROM blocks WHERE tenant = %s AND state = 'live'",
                            (TENANT,)).fetchone()[0]
    read_from_trees = tree_profiles(cluster)
    after = answers(cluster, windows)
    assert tree_profiles(cluster) > read_from_trees  # the querier did read trees
    assert after.keys() == before.keys()
    for key in before:
        assert after[key] == before[key], key
