"""What Pyroscope's Connect protocol adds to a merged flamegraph: `SelectMergeStacktraces` (protobuf and
JSON bodies) against our own `/api/v1/query?format=flamegraph`, on the same data, from the same client.

Starts Postgres, MinIO, an ingester and a querier (`bench/stack.py`), pushes the Go workload's real CPU
profiles (captured from `tests/targets/workload`) as `--profiles` profiles over the last hour, then asks
each API for the same merge after `--warmup` untimed calls, `--block` calls at a time, in turn for
`--rounds` rounds (so drift on a shared machine hits all three alike). It prints per API the median and
quartiles of the wall time, the overhead of Connect over REST, the median ratio of calls in the same
slot of their blocks ("paired"), and the querier's own CPU time per call (from /proc, so what other
processes on a shared machine do does not count): there the protocol layer's cost shows.

Usage: `python bench/connect_latency.py [--profiles 240] [--rounds 3] [--block 20] [--max-nodes 16384]`.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from pathlib import Path

import httpx
from google.protobuf import json_format

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

from infra import gotargets  # noqa: E402
from profiles import make_profile, make_program  # noqa: E402
from stack import cpu_seconds, running_stack  # noqa: E402

from flamewatch.api.perftools.profiles import profile_pb2  # noqa: E402
from flamewatch.api.querier.v1 import querier_pb2  # noqa: E402

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
SERVICES = ("checkout", "search", "billing", "frontend")
METHOD = "/querier.v1.QuerierService/SelectMergeStacktraces"


def captured_cpu_profiles(count: int) -> list[bytes]:
    """`count` CPU profiles of the real Go workload, 1 s each."""
    with gotargets.GoTarget(gotargets.build("workload"), Path("/tmp") / f"connect-bench-{time.time_ns()}.log") as t:
        return [gotargets.capture_profiles(t.addr, cpu_seconds=1)["cpu"] for _ in range(count)]


def synthetic_cpu_profiles(count: int) -> list[bytes]:
    """`count` profiles of a large synthetic program (`bench/profiles.py`): a flamegraph of thousands of nodes."""
    program = make_program()
    return [make_profile(program, seed) for seed in range(count)]  # gzipped already


def at_time(gzipped: bytes, time_ns: int) -> bytes:
    p = profile_pb2.Profile.FromString(gzip.decompress(gzipped))
    p.time_nanos = time_ns
    return gzip.compress(p.SerializeToString())


def push_all(client: httpx.Client, ingester: str, sources: list[bytes], profiles: int, now_ns: int) -> None:
    gap = 3600 * 10**9 // profiles
    for i in range(profiles):
        body = at_time(sources[i % len(sources)], now_ns - (profiles - i) * gap)
        params = {"__name__": "process_cpu", "service_name": SERVICES[i % len(SERVICES)]}
        r = client.post(f"{ingester}/ingest", params=params, content=body)
        r.raise_for_status()


def rest_call(client: httpx.Client, url: str, start_ms: int, end_ms: int, max_nodes: int) -> int:
    r = client.get(f"{url}/api/v1/query", params={"query": CPU + "{}", "from": str(start_ms), "until": str(end_ms),
                                                  "max_nodes": str(max_nodes)})
    r.raise_for_status()
    return r.json()["flamegraph"]["total"]


def flamegraph_nodes(client: httpx.Client, url: str, start_ms: int, end_ms: int, max_nodes: int) -> int:
    r = client.get(f"{url}/api/v1/query", params={"query": CPU + "{}", "from": str(start_ms), "until": str(end_ms),
                                                  "max_nodes": str(max_nodes)})
    r.raise_for_status()
    return sum(len(level) for level in r.json()["flamegraph"]["levels"]) // 4


def connect_call(client: httpx.Client, url: str, request: querier_pb2.SelectMergeStacktracesRequest,
                 codec: str) -> int:
    if codec == "proto":
        r = client.post(url + METHOD, content=request.SerializeToString(), headers={
            "Content-Type": "application/proto", "Connect-Protocol-Version": "1"})
        r.raise_for_status()
        return querier_pb2.SelectMergeStacktracesResponse.FromString(r.content).flamegraph.total
    r = client.post(url + METHOD, content=json_format.MessageToJson(request), headers={
        "Content-Type": "application/json", "Connect-Protocol-Version": "1"})
    r.raise_for_status()
    return int(r.json()["flamegraph"]["total"])


def measure(calls: dict, warmup: int, rounds: int, block: int, pid: int
            ) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Per API the wall time of each call and the querier's CPU seconds over all of them. The APIs take
    turns, `block` calls at a time: /proc counts CPU time in 10 ms ticks, so it is read per block."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    cpu = dict.fromkeys(calls, 0.0)
    totals = {name: {call() for _ in range(warmup)} for name, call in calls.items()}
    for _ in range(rounds):
        for name, call in calls.items():
            before = cpu_seconds(pid)
            for _ in range(block):
                start = time.perf_counter()
                totals[name].add(call())
                times[name].append(time.perf_counter() - start)
            cpu[name] += cpu_seconds(pid) - before
    if len({t for ts in totals.values() for t in ts}) != 1:
        raise SystemExit(f"the APIs disagree on the merge's total: {totals}")
    return times, cpu


def report(times: dict[str, list[float]], cpu: dict[str, float], profiles: int, max_nodes: int) -> None:
    calls = len(times["rest"])
    print(f"merge of {profiles} CPU profiles over 1 h, max_nodes={max_nodes}, {calls} warm calls each")
    print(f"{'API':<34}{'median ms':>10}{'p25 ms':>9}{'p75 ms':>9}{'vs REST':>9}{'paired':>9}"
          f"{'CPU ms':>8}{'vs REST':>9}")
    rest = statistics.median(times["rest"])
    labels = {"rest": "/api/v1/query (JSON)", "connect-proto": "SelectMergeStacktraces (proto)",
              "connect-json": "SelectMergeStacktraces (JSON)"}
    for name, values in times.items():
        q1, median, q3 = statistics.quantiles(values, n=4)
        # The median of ratios of calls in the same slot of their blocks, a few hundred ms apart.
        paired = statistics.median(v / r for v, r in zip(values, times["rest"], strict=True))  # same slot
        print(f"{labels[name]:<34}{median * 1e3:>10.1f}{q1 * 1e3:>9.1f}{q3 * 1e3:>9.1f}"
              f"{(median / rest - 1) * 100:>+8.1f}%{(paired - 1) * 100:>+8.1f}%"
              f"{cpu[name] / calls * 1e3:>8.1f}{(cpu[name] / cpu['rest'] - 1) * 100:>+8.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=240)
    parser.add_argument("--sources", type=int, default=4, help="distinct CPU profiles captured from the workload")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--block", type=int, default=20, help="calls of one API in a row")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--max-nodes", type=int, default=16384)
    parser.add_argument("--synthetic", action="store_true",
                        help="profiles of a large synthetic program instead of the Go workload's")
    args = parser.parse_args()
    sources = synthetic_cpu_profiles(args.sources) if args.synthetic else captured_cpu_profiles(args.sources)
    now = time.time_ns()
    start_ms, end_ms = (now - 3700 * 10**9) // 10**6, (now + 60 * 10**9) // 10**6
    with running_stack() as stack, httpx.Client(timeout=120) as client:
        ingester, querier = stack.ingester(0.2, 0), stack.querier()
        push_all(client, ingester.url, sources, args.profiles, now)
        time.sleep(1)  # the last flush
        request = querier_pb2.SelectMergeStacktracesRequest(profile_typeID=CPU, label_selector="{}",
                                                            start=start_ms, end=end_ms, max_nodes=args.max_nodes)
        calls = {
            "rest": lambda: rest_call(client, querier.url, start_ms, end_ms, args.max_nodes),
            "connect-proto": lambda: connect_call(client, querier.url, request, "proto"),
            "connect-json": lambda: connect_call(client, querier.url, request, "json"),
        }
        print(f"the flamegraph: {flamegraph_nodes(client, querier.url, start_ms, end_ms, args.max_nodes)} nodes")
        report(*measure(calls, args.warmup, args.rounds, args.block, querier.pid), args.profiles, args.max_nodes)


if __name__ == "__main__":
    main()
