"""Merges split between queriers, as users run them: two `flamewatch querier` replicas on one storage, the one
asked given the other with `--query.peers`, and `flamewatch all` with a query worker process. Every answer
(CPU and an in-use memory gauge; flushed blocks and compacted ones with pre-merged trees; whole hours, a
range cutting hours, a sample label filter) is the same split as read by one querier alone; a peer that
is gone has its piece merged by the asker; the worker of `all` ends when `all` is killed."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import httpx
import pytest
from e2e.allinone import start_all, stop
from e2e.calls import CPU, HEAP, HOUR_NS, ingest, merge_answers
from e2e.cluster import Cluster, Service, running_services
from e2e.pushes import rewritten
from infra.ports import free_port
from infra.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

TENANT = "e2e-split"
MIN = 60 * 10**9
DAY = 24 * HOUR_NS
SPLIT_ALWAYS = ("--query.split-min-profiles", "1")


def two_hours_ago_yesterday() -> tuple[list[int], dict[str, tuple[int, int]]]:
    now = time.time_ns()
    day = now - now % DAY - 2 * DAY
    times = [day + 9 * HOUR_NS + i * 10 * MIN for i in range(12)]  # 09:00 to 10:50, two days ago
    windows = {"whole hours": (day + 9 * HOUR_NS, day + 11 * HOUR_NS - 1),
               "cutting hours": (day + 9 * HOUR_NS + 25 * MIN, day + 10 * HOUR_NS + 35 * MIN)}
    return times, windows


def push_profiles(url: str, http: httpx.Client, go_profiles, times: list[int]) -> None:
    for i, t in enumerate(times):
        instances = ["ab"[i % 2]] + (["c"] if i >= 6 else [])
        for instance, kind in ((x, k) for x in instances for k in ("cpu", "heap")):
            r = http.post(f"{url}/ingest", params={"service_name": "api", "instance": instance},
                          content=rewritten(go_profiles[kind], time_ns=t), headers={"X-Scope-OrgID": TENANT})
            assert r.status_code == 200, r.text


def answers(url: str, windows: dict[str, tuple[int, int]]) -> dict:
    return merge_answers(url, TENANT, windows, ("flamegraph", "top"))


CACHED_BLOCKS = "flamewatch_querier_block_cache_blocks "  # the gauge, no labels


def metric(url: str, name: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


def test_a_querier_with_a_peer_answers_as_one_querier_alone(cluster: Cluster, go_profiles) -> None:
    times, windows = two_hours_ago_yesterday()
    for i, t in enumerate(times):  # through the cluster's ingester, as a user's pushes come
        instances = ["ab"[i % 2]] + (["c"] if i >= 6 else [])
        for instance, kind in ((x, k) for x in instances for k in ("cpu", "heap")):
            r = ingest(cluster, TENANT, {"service_name": "api", "instance": instance},
                       rewritten(go_profiles[kind], time_ns=t))
            assert r.status_code == 200, r.text
    asker = Service("querier", "querier-asker", cluster.storage, cluster.workdir / "asker.log",
                    ("--query.peers", cluster.querier_grpc, *SPLIT_ALWAYS))
    with running_services(asker):
        alone = answers(cluster.querier_url, windows)
        assert {alone[t, "{}", "whole hours", "top"]["profiles"] for t in (CPU, HEAP)} == {18}
        read_for_peer = metric(cluster.querier_url, "flamewatch_querier_partial_profiles_total")
        assert answers(asker.url, windows) == alone  # flushed blocks
        assert metric(cluster.querier_url, "flamewatch_querier_partial_profiles_total") > read_for_peer
        assert metric(asker.url, 'flamewatch_querier_split_pieces_total{where="peers"}') > 0

        cluster.add_ingester("compactor", "--compaction.interval", "0.5")
        wait_for(lambda: cluster.live_block_levels(TENANT) == [2], 60, "the tenant compacted into a day block")
        def trees_and_shares() -> tuple[float, float]:
            """Profiles read from trees by either querier, and profiles the peer merged for the asker."""
            return (sum(metric(q.url, "flamewatch_querier_tree_profiles_total") for q in (cluster.querier, asker)),
                    metric(cluster.querier_url, "flamewatch_querier_partial_profiles_total"))

        before = trees_and_shares()
        assert answers(asker.url, windows) == alone  # the day block: its trees and profiles, split
        after = trees_and_shares()
        assert after[0] > before[0] and after[1] > before[1]

        cluster.kill(cluster.querier)  # the peer is gone: the asker merges its piece itself
        assert answers(asker.url, windows) == alone
        assert "failed a partial merge (UNAVAILABLE" in asker.log_text()
        cluster.querier.start()


def test_a_broken_peers_flag_fails_the_start_and_says_how_to_write_it(cluster: Cluster) -> None:
    bad = Service("querier", "querier-bad-peers", cluster.storage, cluster.workdir / "bad.log",
                  ("--query.peers", "dns:///no-port-here"))
    with pytest.raises(RuntimeError, match=r"expected dns:///NAME:PORT"):
        bad.start()


def test_flamewatch_all_splits_long_merges_with_a_worker_that_ends_with_it(tmp_path: Path, go_profiles) -> None:
    http_port, grpc_port = free_port(), free_port()
    url = f"http://127.0.0.1:{http_port}"
    config = tmp_path / "flamewatch.yaml"
    config.write_text("scrape_configs: []\n")
    log = tmp_path / "all.log"

    def ready() -> None:
        wait_for(lambda: httpx.get(url + "/readyz").status_code == 200, 90, "flamewatch all", log)

    times, windows = two_hours_ago_yesterday()
    process = start_all(tmp_path, config, http_port, grpc_port, "--query.workers", "0", "--compaction.interval", "0")
    worker = None
    try:
        ready()
        with httpx.Client(timeout=30) as http:
            push_profiles(url, http, go_profiles, times)
        assert stop(process) == 0, log.read_text()  # the last flush
        process = start_all(tmp_path, config, http_port, grpc_port, "--query.workers", "0", *SPLIT_ALWAYS,
                            "--compaction.interval", "0")
        ready()
        alone = answers(url, windows)  # no worker: read by `all` alone
        assert stop(process) == 0, log.read_text()

        process = start_all(tmp_path, config, http_port, grpc_port, "--query.workers", "1", *SPLIT_ALWAYS,
                            "--cache-bytes", "64MiB", "--compaction.interval", "0")
        ready()
        answers(url, {"whole hours": windows["whole hours"]})  # the first long merge starts the worker
        started = wait_for(lambda: re.search(r"query workers: 1 started \(pids (\d+)\)", log.read_text()), 60,
                           "the query worker", log)
        worker = int(started.group(1))
        assert answers(url, windows) == alone
        assert metric(url, 'flamewatch_querier_split_pieces_total{where="peers"}') > 0
        argv = Path(f"/proc/{worker}/cmdline").read_bytes().decode().split("\0")
        assert argv[argv.index("--cache-bytes") + 1] == str(64 << 20)  # the worker's cache is `all`'s
        assert metric(url, CACHED_BLOCKS) > 1
        process.send_signal(signal.SIGKILL)  # no SIGTERM reaches the worker: it sees its parent gone
        process.wait(10)
        wait_for(lambda: not _alive(worker), 30, "the worker to end after flamewatch all was killed", log)
        starts = log.read_text().count("query workers: 1 started")
        process = start_all(tmp_path, config, http_port, grpc_port, "--cache-bytes", "1", "--compaction.interval", "0")
        ready()
        # at the default --query.split-min-profiles these merges are too small to split: read by `all`
        # alone, from its one plan, with no worker started for them; and the same with a cache too small
        # for more than the block read last
        assert answers(url, windows) == alone
        assert metric(url, "flamewatch_querier_split_pieces_total") == 0
        assert metric(url, CACHED_BLOCKS) == 1
        assert stop(process) == 0, log.read_text()  # and its embedded Postgres with it
        assert log.read_text().count("query workers: 1 started") == starts
    finally:
        if process.poll() is None:
            assert stop(process) == 0, log.read_text()
        if worker is not None and _alive(worker):
            os.kill(worker, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie has ended; only its entry is left
        return stat.read().split(") ")[-1][0] != "Z"
