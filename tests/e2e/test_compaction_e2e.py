"""Compaction and retention as a user runs them: `flamewatch ingester --compaction.interval ...
--storage.retention 30d` on real Postgres and MinIO, with real Go profiles pushed over HTTP. The
querier's answers stay the same while the blocks under them are rewritten; what is past the
retention goes."""

from __future__ import annotations

import time

import pytest
from e2e.calls import CPU, ingest, rest
from e2e.cluster import Cluster, Service
from e2e.pushes import rewritten
from infra.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

TENANT = "e2e-compaction"
MIN = 60 * 10**9
DAY = 24 * 60 * MIN


def answers(cluster: Cluster, start_ns: int, end_ns: int) -> dict:
    window = {"from": str(start_ns // 10**6), "until": str(end_ns // 10**6)}
    out = {}
    for selector in ("{}", '{instance="a"}'):
        for fmt in ("flamegraph", "top", "tree"):
            out[selector, fmt] = rest(cluster, "/query", TENANT, {"query": CPU + selector, "format": fmt,
                                                                  "max_nodes": "100000", **window})
        out[selector, "range"] = rest(cluster, "/query_range", TENANT, {"query": CPU + selector, "step": "600",
                                                                        "group_by": "instance", **window})
    return out


def test_old_blocks_are_compacted_and_expired_while_answers_stay_the_same(cluster: Cluster, go_profiles) -> None:
    now = time.time_ns()
    noon = now - now % DAY - 3 * DAY + 12 * 60 * MIN
    recent = [noon + i * 10 * MIN for i in range(12)]  # two hours, three days ago
    for i, t in enumerate([*recent, now - 40 * DAY, now - MIN]):
        r = ingest(cluster, TENANT, {"service_name": "api", "instance": "ab"[i % 2]},
                   rewritten(go_profiles["cpu"], time_ns=t))
        assert r.status_code == 200, r.text
    kept = answers(cluster, recent[0] - MIN, now)
    assert rest(cluster, "/query", TENANT, {"query": CPU, "format": "top", "from": str((now - 41 * DAY) // 10**6),
                                            "until": str((now - 39 * DAY) // 10**6)})["profiles"] == 1
    assert cluster.live_block_levels(TENANT) == [0] * 14

    compactor = cluster.add_ingester("compactor", "--compaction.interval", "0.5", "--storage.retention", "30d")
    seen = set()

    def compacted_while_answering() -> bool:
        """Queries keep answering, and answering the same, while the blocks under them are rewritten."""
        levels = tuple(cluster.live_block_levels(TENANT))
        seen.add(levels)
        assert answers(cluster, recent[0] - MIN, now) == kept, f"a different answer with blocks at levels {levels}"
        return levels == (0, 2)

    # The two old hours become one day block; the 40-day-old block expires; the last minute's stays flushed.
    wait_for(compacted_while_answering, 60, "compaction into [0, 2]", log=compactor.log_path, interval_s=0.05)
    assert len(seen) >= 2, seen
    gone = rest(cluster, "/query", TENANT, {"query": CPU, "format": "top", "from": str((now - 41 * DAY) // 10**6),
                                            "until": str((now - 39 * DAY) // 10**6)})
    assert gone["profiles"] == 0
    log = compactor.log_text()
    assert "compaction: tenant e2e-compaction: 12 block(s)," in log and "-> 2 hour block(s)" in log, log
    assert "retention: tenant e2e-compaction: 1 block(s) older than the retention expired" in log, log


def test_a_querier_with_a_disk_cache_keeps_the_blocks_it_read(cluster: Cluster, go_profiles, tmp_path) -> None:
    now = time.time_ns()
    r = ingest(cluster, "e2e-disk-cache", {"service_name": "api"}, rewritten(go_profiles["cpu"], time_ns=now))
    assert r.status_code == 200, r.text
    querier = Service("querier", "querier-disk-cache", cluster.storage, tmp_path / "querier.log",
                      ("--cache.disk-dir", str(tmp_path / "cache")))
    querier.start()
    try:
        window = {"from": str((now - MIN) // 10**6), "until": str((now + MIN) // 10**6)}
        body = cluster.http.get(f"{querier.url}/api/v1/query", params={"query": CPU, "format": "top", **window},
                                headers={"X-Scope-OrgID": "e2e-disk-cache"}).json()
        assert body["profiles"] == 1
        assert len(list((tmp_path / "cache").iterdir())) == 1
    finally:
        assert querier.stop() == 0
