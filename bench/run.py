"""Flamewatch benchmarks on real parts: print figures, assert nothing.

    make bench                         # everything with the defaults below
    .venv/bin/python bench/run.py --profiles 2000 --runs 3

1. decode: column-wise pprof decode of a large profile (median of --runs).
2. ingest: `flamewatch ingester` as its own process against Postgres and MinIO; pushes over gRPC from
   --concurrency clients; throughput counts only acknowledged (durable) profiles.
3. merge: `flamewatch querier` as its own process; latency of GET /api/v1/query (flamegraph) over the
   first 1,000 and all --profiles stored CPU profiles: the first (cold cache) run and the median of
   --runs warm runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

from infra.minio import MinioServer  # noqa: E402  (the same servers the tests start)
from infra.ports import free_port  # noqa: E402
from infra.postgres import fresh_database, server  # noqa: E402
from infra.waiting import answers, wait_for  # noqa: E402
from profiles import make_profile, make_program  # noqa: E402

from flamewatch.api.flamewatch.v1 import ingest_pb2, ingest_pb2_grpc  # noqa: E402
from flamewatch.pprof import decode, decompress  # noqa: E402
from flamewatch.pprof.wire import encode_varints  # noqa: E402

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"


def bench_decode(runs: int) -> None:
    program = make_program(n_functions=23_000, n_stacks=40_000, seed=3)
    data = decompress(make_profile(program, 1, n_samples=40_000), 1 << 30)
    profile = decode(data)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        decode(data)
        times.append(time.perf_counter() - started)
    print(f"decode: {len(data) / 1e6:.1f} MB pprof, {len(profile.samples)} samples, "
          f"{len(profile.locations)} locations: median {1e3 * statistics.median(times):.1f} ms "
          f"({len(data) / 1e6 / statistics.median(times):.0f} MB/s)")


def at_time(raw: bytes, time_ns: int) -> bytes:
    """The profile with time_nanos set: a scalar field appended again wins over the earlier value."""
    return gzip.compress(raw + bytes([9 << 3]) + encode_varints(np.array([time_ns], np.uint64)), compresslevel=1)


def start(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([str(ROOT / ".venv/bin/flamewatch"), *args], stdout=log.open("w"),
                            stderr=subprocess.STDOUT)


async def push_all(address: str, payloads: list[bytes], concurrency: int, batch: int) -> tuple[int, int, float]:
    """Push like a fleet: `concurrency` clients, each push carrying `batch` pprofs of distinct pods."""
    queue: asyncio.Queue[list[tuple[int, bytes]]] = asyncio.Queue()
    for i in range(0, len(payloads), batch):
        queue.put_nowait(list(enumerate(payloads[i:i + batch], i)))
    totals = [0, 0]

    async def worker(stub) -> None:
        while not queue.empty():
            request = ingest_pb2.PushRequest(series=[ingest_pb2.RawProfileSeries(
                labels=[{"name": "service_name", "value": "bench"}, {"name": "__name__", "value": "process_cpu"},
                        {"name": "pod", "value": f"pod-{i % 50}"}],
                samples=[ingest_pb2.RawSample(raw_profile=raw)]) for i, raw in queue.get_nowait()])
            reply = await stub.Push(request, timeout=60)
            totals[0] += reply.profiles
            totals[1] += reply.bytes

    async with grpc.aio.insecure_channel(address, options=[("grpc.max_send_message_length", 64 << 20)]) as ch:
        stub = ingest_pb2_grpc.IngestServiceStub(ch)
        started = time.perf_counter()
        await asyncio.gather(*(worker(stub) for _ in range(concurrency)))
        return totals[0], totals[1], time.perf_counter() - started


def time_query(url: str, start_ns: int, end_ns: int, runs: int) -> tuple[float, float, int]:
    params = {"query": CPU, "from": str(start_ns), "until": str(end_ns), "format": "flamegraph"}
    times, profiles = [], 0
    with httpx.Client(base_url=url, timeout=600) as client:
        for _ in range(runs + 1):
            started = time.perf_counter()
            response = client.get("/api/v1/query", params=params)
            times.append(time.perf_counter() - started)
            response.raise_for_status()
            profiles = response.json()["profiles"]
    return times[0], statistics.median(times[1:]), profiles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", type=int, default=10_000, help="CPU pprofs to ingest (>= 1000)")
    parser.add_argument("--samples", type=int, default=1000, help="samples drawn per synthetic profile")
    parser.add_argument("--distinct", type=int, default=200, help="distinct synthetic profiles to cycle through")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent gRPC pushers")
    parser.add_argument("--batch", type=int, default=4, help="pprofs per push")
    parser.add_argument("--runs", type=int, default=5, help="runs per latency figure (median)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    bench_decode(args.runs)

    program = make_program()
    now = time.time_ns()
    start_ns = now - 3600 * 10**9
    spacing = 3600 * 10**9 // args.profiles
    distinct = [decompress(make_profile(program, i, args.samples), 1 << 30) for i in range(args.distinct)]
    payloads = [at_time(distinct[i % args.distinct], start_ns + i * spacing) for i in range(args.profiles)]
    raw_mb = sum(map(len, distinct)) / len(distinct) / 1e6
    print(f"profiles: {args.profiles} CPU pprofs ({args.distinct} distinct, ~{raw_mb:.2f} MB decompressed each) "
          "over one hour")

    with tempfile.TemporaryDirectory() as tmp, server(os.environ.get("FLAMEWATCH_TEST_POSTGRES_DSN")) as admin, \
            fresh_database(admin) as dsn, MinioServer(Path(tmp) / "minio") as minio:
        tmp_path = Path(tmp)
        bucket = "bench"
        minio.create_bucket(bucket)
        storage = ["--storage.postgres-dsn", dsn, "--storage.s3.bucket", bucket,
                   "--storage.s3.endpoint", minio.endpoint, "--storage.s3.access-key", minio.access_key,
                   "--storage.s3.secret-key", minio.secret_key, "--storage.s3.insecure", "--log.level", "warning"]
        ports = [free_port() for _ in range(4)]
        ingester = start(["ingester", "--http-address", f"127.0.0.1:{ports[0]}", "--grpc-address",
                          f"127.0.0.1:{ports[1]}", *storage], tmp_path / "ingester.log")
        querier = start(["querier", "--http-address", f"127.0.0.1:{ports[2]}", "--grpc-address",
                         f"127.0.0.1:{ports[3]}", *storage], tmp_path / "querier.log")
        try:
            wait_for(lambda: answers(f"http://127.0.0.1:{ports[0]}/readyz"), 60, "the ingester to be ready",
                     tmp_path / "ingester.log", ingester, interval_s=0.2)
            wait_for(lambda: answers(f"http://127.0.0.1:{ports[2]}/readyz"), 60, "the querier to be ready",
                     tmp_path / "querier.log", querier, interval_s=0.2)
            stored, nbytes, seconds = asyncio.run(push_all(f"127.0.0.1:{ports[1]}", payloads, args.concurrency,
                                                          args.batch))
            print(f"ingest ({args.concurrency} clients x {args.batch} pprofs per push): {args.profiles} pprofs "
                  f"({stored} typed profiles, {nbytes / 1e6:.0f} MB decompressed) "
                  f"in {seconds:.1f} s over gRPC, durable: {nbytes / 1e6 / seconds:.1f} MB/s, "
                  f"{args.profiles / seconds:.0f} pprofs/s, {stored / seconds:.0f} typed profiles/s")
            url = f"http://127.0.0.1:{ports[2]}"
            for count in sorted({1000, args.profiles}):
                cold, warm, merged = time_query(url, start_ns, start_ns + (count - 1) * spacing, args.runs)
                print(f"merge: {merged} CPU profiles → flamegraph: cold {1e3 * cold:.0f} ms, "
                      f"warm median of {args.runs} {1e3 * warm:.0f} ms")
        finally:
            for proc in (ingester, querier):
                proc.terminate()
                proc.wait(30)


if __name__ == "__main__":
    main()
