"""What changed, across processes: CPU profiles of two versions pushed to the ingester over /ingest, the
ranked comparison asked of the querier over REST (two values of a label, or two whole selections) and
gRPC, and the diff flamegraph of the same two selections; bad requests are refused with what to change.
Real CPU profiles of a Go program in two builds, the second 20 % slower in one function, pushed under
versions 1.0 and 1.1: that function is ranked first and significant, and two runs of one build under two
versions show no significant change."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import httpx
import numpy as np
import pytest
from e2e.cluster import Cluster
from e2e.conftest import REGRESS_PROFILES
from infra.tinypprof import stacks_pprof
from integration.test_changes import CPU, PROGRAM

from flamewatch.api.flamewatch.v1 import query_pb2, query_pb2_grpc, types_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3]
REGRESS_CPU = CPU + '{service_name="regress"}'

S = 10**9


@pytest.fixture(scope="module")
def pushed(cluster: Cluster) -> int:
    start = (time.time_ns() // S - 1200) * S
    rng = np.random.default_rng(11)
    stacks = list(PROGRAM)
    for version, slower, offset in (("1.0", 0.0, 0), ("1.1", 0.2, 300)):
        weights = np.array([PROGRAM[s] * (1 + (slower if s[-1] == "main.compress" else 0)) for s in stacks], float)
        for i in range(12):
            at = start + (offset + 10 * i) * S
            counts = rng.multinomial(int(weights.sum()), weights / weights.sum())
            answer = httpx.post(f"{cluster.ingester_url}/ingest", timeout=30,
                                params={"service_name": "shop", "version": version},
                                content=stacks_pprof(dict(zip(stacks, counts.tolist())), at))
            assert answer.status_code == 200, answer.text
    return start


def test_two_values_of_a_label_rank_the_slower_function_first(cluster: Cluster, pushed: int):
    answer = httpx.get(f"{cluster.querier_url}/api/v1/changes", timeout=60, params={
        "query": CPU + '{service_name="shop"}', "label": "version", "a": "1.0", "b": "1.1", "from": "now-1h"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["profiles"] == {"a": 12, "b": 12}
    assert body["a"]["query"] == CPU + '{service_name="shop",version="1.0"}'
    first = body["functions"][0]
    assert first["name"] == "main.compress" and first["self"]["significant"] and first["self"]["change"] > 0.02

    whole = httpx.get(f"{cluster.querier_url}/api/v1/changes", timeout=60, params={
        "a_query": body["a"]["query"], "b_query": body["b"]["query"], "from": "now-1h", "order": "total",
        "limit": 3}).json()
    assert len(whole["functions"]) == 3 and whole["order"] == "total"


def test_grpc_answers_the_same(cluster: Cluster, pushed: int):
    side = types_pb2.TimeRange(start_ns=pushed - S, end_ns=time.time_ns())
    with grpc.insecure_channel(cluster.querier_grpc) as channel:
        found = query_pb2_grpc.QueryServiceStub(channel).Changes(query_pb2.ChangesRequest(
            a_query=CPU + '{version="1.0"}', a_range=side, b_query=CPU + '{version="1.1"}', b_range=side), timeout=60)
    assert (found.a_profiles, found.b_profiles) == (12, 12)
    assert found.functions[0].name == "main.compress" and found.functions[0].self.significant


@pytest.mark.parametrize(("params", "problem"), [
    ({"query": CPU, "label": "version", "a": "1.0"}, "compare two values of a label with query, label, a and b"),
    ({"a_query": CPU}, "give the two selections"),
    ({"query": CPU, "alpha": "2"}, "alpha is a false discovery rate between 0 and 1"),
    ({"query": CPU, "order": "sideways"}, "order"),
    ({"query": CPU, "limit": "0"}, "limit must be between 1"),
])
def test_a_bad_comparison_is_a_400_that_says_what_to_change(cluster: Cluster, pushed: int, params, problem):
    answer = httpx.get(f"{cluster.querier_url}/api/v1/changes", params=params, timeout=30)
    assert answer.status_code == 400 and problem in answer.json()["error"], answer.text


def test_the_diff_flamegraph_takes_the_same_two_selections(cluster: Cluster, pushed: int):
    diff = f"{cluster.querier_url}/api/v1/diff"
    short = httpx.get(diff, timeout=60, params={"query": CPU + '{service_name="shop"}', "label": "version",
                                                "a": "1.0", "b": "1.1", "from": "now-1h"})
    assert short.status_code == 200, short.text
    whole = httpx.get(diff, timeout=60, params={
        "left_query": CPU + '{service_name="shop",version="1.0"}', "left_from": "now-1h",
        "right_query": CPU + '{service_name="shop",version="1.1"}', "right_from": "now-1h"})
    assert short.json() == whole.json()
    flamegraph = short.json()["flamegraph"]
    assert flamegraph["left_ticks"] > 0 and flamegraph["right_ticks"] > flamegraph["left_ticks"], flamegraph
    half = httpx.get(diff, timeout=30, params={"left_query": CPU})
    assert half.status_code == 400 and "give the two selections: left_query and right_query" in half.json()["error"]


@pytest.fixture(scope="module")
def real_pushed(cluster: Cluster, regress_profiles: dict[str, list[Path]]) -> None:
    """The Go program's real CPU profiles, each dated when it was taken: the base build as 1.0 and, in
    another deployment, as 1.0-rerun; the slower build as 1.1."""
    for run, version in (("base", "1.0"), ("slower", "1.1"), ("again", "1.0-rerun")):
        for path in regress_profiles[run]:
            answer = httpx.post(f"{cluster.ingester_url}/ingest", timeout=30, content=path.read_bytes(),
                                params={"service_name": "regress", "version": version})
            assert answer.status_code == 200, answer.text


def test_a_real_go_function_made_20_percent_slower_is_ranked_first_and_significant(cluster: Cluster, real_pushed):
    answer = httpx.get(f"{cluster.querier_url}/api/v1/changes", timeout=60, params={
        "query": REGRESS_CPU, "label": "version", "a": "1.0", "b": "1.1", "from": "now-1h"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["profiles"] == {"a": REGRESS_PROFILES, "b": REGRESS_PROFILES}
    first = body["functions"][0]
    # main.hash is about half of the program's CPU: 20 % more of it is about +4.5 % of the total.
    assert first["name"] == "main.hash" and first["self"]["significant"], first
    assert 0.02 < first["self"]["change"] < 0.08, first
    assert [f["name"] for f in body["functions"][1:] if f["self"]["significant"] and f["self"]["change"] > 0] == []


def test_two_runs_of_one_real_build_under_two_versions_show_no_significant_change(cluster: Cluster, real_pushed):
    body = httpx.get(f"{cluster.querier_url}/api/v1/changes", timeout=60, params={
        "query": REGRESS_CPU, "label": "version", "a": "1.0", "b": "1.0-rerun", "from": "now-1h"}).json()
    assert body["profiles"] == {"a": REGRESS_PROFILES, "b": REGRESS_PROFILES}, body
    grown = [(f["name"], f["self"]["change"]) for f in body["functions"]
             if f["self"]["significant"] and abs(f["self"]["change"]) >= 0.01]
    assert grown == [], grown
