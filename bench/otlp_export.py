"""What an OTLP profiles export costs the ingester: conversion alone, and a whole HTTP export to a running
`flamewatch all` against pushing the same profiles as pprof to its `/ingest`.

The export is shaped like an eBPF profiler's: one request, one dictionary shared by its profiles, each
sample with a thread attribute, a timestamp and (for most) a trace link. Prints figures; asserts nothing.

    .venv/bin/python bench/otlp_export.py --samples 20000 --profiles 1
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from flamewatch.ingester.otlp import convert

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]
from infra.ports import free_port  # noqa: E402
from infra.waiting import wait_for  # noqa: E402


def export_request(samples: int, profiles: int, stacks: int, depth: int, locations: int, functions: int,
                   seed: int = 1) -> ExportProfilesServiceRequest:
    rng = np.random.default_rng(seed)
    request = ExportProfilesServiceRequest()
    d = request.dictionary
    names = [f"pkg{i // 50}.Function{i}" for i in range(functions)]
    d.string_table.extend(["", *names, "samples", "count", "cpu", "nanoseconds", "thread.name", "/bin/app", "app.go"])
    at = {s: i for i, s in enumerate(d.string_table)}
    d.mapping_table.add()
    d.mapping_table.add(memory_start=0x400000, memory_limit=1 << 40, filename_strindex=at["/bin/app"])
    d.function_table.add()
    for name in names:
        d.function_table.add(name_strindex=at[name], system_name_strindex=at[name], filename_strindex=at["app.go"])
    d.location_table.add()
    for i, f in enumerate(rng.integers(1, functions + 1, locations).tolist()):
        d.location_table.add(mapping_index=1, address=0x401000 + 16 * i).lines.add(function_index=f, line=i)
    d.stack_table.add()
    for _ in range(stacks):
        d.stack_table.add(location_indices=rng.integers(1, locations + 1, depth).tolist())
    d.attribute_table.add()
    for i in range(64):
        d.attribute_table.add(key_strindex=at["thread.name"], value=AnyValue(string_value=f"thread-{i}"))
    d.link_table.add()
    for _ in range(1000):
        d.link_table.add(trace_id=rng.bytes(16), span_id=rng.bytes(8))
    for p in range(profiles):
        resource = request.resource_profiles.add()
        resource.resource.attributes.add(key="service.name", value=AnyValue(string_value=f"bench-{p}"))
        profile = resource.scope_profiles.add().profiles.add(time_unix_nano=time.time_ns(), duration_nano=10**10,
                                                             period=10**7)
        profile.sample_type.type_strindex, profile.sample_type.unit_strindex = at["samples"], at["count"]
        profile.period_type.type_strindex, profile.period_type.unit_strindex = at["cpu"], at["nanoseconds"]
        now = time.time_ns()
        for stack, thread, link in zip(rng.integers(1, stacks + 1, samples).tolist(),
                                       rng.integers(1, 65, samples).tolist(),
                                       rng.integers(0, 1001, samples).tolist(), strict=True):
            profile.samples.add(stack_index=stack, attribute_indices=[thread], link_index=link,
                                timestamps_unix_nano=[now])
    return request


def timed(fn, runs: int) -> float:
    """Median milliseconds of `runs` calls."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - started))
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=20_000, help="samples per profile")
    ap.add_argument("--profiles", type=int, default=1)
    ap.add_argument("--stacks", type=int, default=5_000)
    ap.add_argument("--depth", type=int, default=24)
    ap.add_argument("--locations", type=int, default=10_000)
    ap.add_argument("--functions", type=int, default=5_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    request = export_request(args.samples, args.profiles, args.stacks, args.depth, args.locations, args.functions)
    body = request.SerializeToString()
    parsed = ExportProfilesServiceRequest.FromString(body)
    converted, _ = convert(parsed)
    print(f"export: {len(body) / 1e6:.2f} MB protobuf ({len(gzip.compress(body)) / 1e6:.2f} MB gzipped), "
          f"{args.profiles} x {args.samples} samples; as pprof {sum(len(c.pprof) for c in converted) / 1e6:.2f} MB")
    print(f"parse    {timed(lambda: ExportProfilesServiceRequest.FromString(body), args.runs):8.1f} ms")
    print(f"convert  {timed(lambda: convert(parsed), args.runs):8.1f} ms")
    http_export, http_ingest = against_flamewatch_all(gzip.compress(body), converted, args.runs)
    print(f"POST /v1development/profiles (gzip, until durable)      {http_export:8.1f} ms")
    print(f"POST /ingest of the same profiles as pprof (gzip, each)  {http_ingest:8.1f} ms")


def against_flamewatch_all(body: bytes, converted, runs: int) -> tuple[float, float]:
    http, grpc_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as data, httpx.Client(timeout=120) as client:
        process = subprocess.Popen([str(Path(sys.executable).with_name("flamewatch")), "all", "--data-dir", data,
                                    "--http-address", f"127.0.0.1:{http}", "--grpc-address", f"127.0.0.1:{grpc_port}"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{http}"
            wait_for(lambda: client.get(f"{url}/readyz").status_code == 200, timeout_s=60,
                     what="flamewatch all to be ready", process=process)
            headers = {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}

            def export() -> None:
                client.post(f"{url}/v1development/profiles", content=body, headers=headers).raise_for_status()

            pprofs = [(c.labels, gzip.compress(c.pprof, compresslevel=1)) for c in converted]

            def ingest() -> None:
                for labels, pprof in pprofs:
                    client.post(f"{url}/ingest", params=labels, content=pprof).raise_for_status()

            return timed(export, runs), timed(ingest, runs)
        finally:
            process.terminate()
            process.wait(30)


if __name__ == "__main__":
    main()
