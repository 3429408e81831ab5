"""Symbolization figures (issue 10): throughput of the symbolizer on a large binary, and what
symbolizing adds to a merged flamegraph of 10,000 unsymbolized locations.

The binary is the largest with DWARF built here: MinIO (`.cache/bin/minio`, about 150 MB of Go with
DWARF), since Debian's debug archive (dbgsym packages) cannot be reached from this machine.

1. Throughput, in process: a batch of random addresses inside the binary's text, resolved cold (the
   first use of the build ID: the symcache is built from DWARF and stored), with the object loaded
   (cached), and from a new symbolizer that reads the stored symcache.
2. Latency, through `flamewatch all` on embedded storage: a profile of 10,000 distinct unsymbolized
   locations in that binary, queried as a flamegraph; beside it the same profile with its function
   table filled in, whose query time is the baseline. Cold (first use of the binary), warm, after a
   restart (answers come from Postgres), and new addresses after a restart (stored symcache).

Usage: python bench/symbolize.py [--addresses N] [--binary PATH]
"""

from __future__ import annotations

import argparse
import gzip
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from flamewatch.api.perftools.profiles import profile_pb2
from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.objstore import FilesystemConfig
from flamewatch.symbolizer.config import SymbolizerConfig
from flamewatch.symbolizer.debuginfod import DebuginfodClient
from flamewatch.symbolizer.elf import read_elf, sections
from flamewatch.symbolizer.store import DebuginfoStore
from flamewatch.symbolizer.symbolizer import ObjectRequest, Symbolizer

ROOT = Path(__file__).resolve().parents[1]
FLAMEWATCH = Path(sys.executable).with_name("flamewatch")
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", type=Path, default=ROOT / ".cache" / "bin" / "minio")
    parser.add_argument("--addresses", type=int, default=100_000)
    parser.add_argument("--locations", type=int, default=10_000)
    args = parser.parse_args()
    data = args.binary.read_bytes()
    print(f"binary: {args.binary} ({len(data) / 2**20:.0f} MiB), build ID {read_elf(data).build_id}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        throughput(data, args.addresses, Path(tmp))
    with tempfile.TemporaryDirectory() as tmp:
        latency(args.binary, data, args.locations, Path(tmp))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


# ------------------------------------------------------------------------------------------ throughput


def text_offsets(data: bytes, n: int, seed: int) -> np.ndarray:
    text = sections(data)[".text"]
    rng = np.random.default_rng(seed)
    return np.sort(rng.integers(text.offset, text.offset + text.size, n).astype(np.uint64))


def _symbolizer(directory: Path) -> Symbolizer:
    store = FilesystemObjectStore.from_config(FilesystemConfig(str(directory)))
    return Symbolizer(DebuginfoStore(store), DebuginfodClient((), 1, 1), SymbolizerConfig())


def throughput(data: bytes, n: int, tmp: Path) -> None:
    s = _symbolizer(tmp)
    started = time.perf_counter()
    done = s.upload("anonymous", data, "minio")
    upload_s = time.perf_counter() - started
    rows = []
    for label, symbolizer, seed in [("cold (symcache built from DWARF and stored)", s, 1),
                                    ("cached (object loaded)", s, 2),
                                    ("new process (symcache read from the store)", _symbolizer(tmp), 3)]:
        offsets = text_offsets(data, n, seed)
        started = time.perf_counter()
        result = symbolizer.symbolize("anonymous", [ObjectRequest(done.build_id, "", offsets)])[0]
        seconds = time.perf_counter() - started
        named = sum(1 for frames in result.locations if frames)
        rows.append((label, seconds, n / seconds, named))
    print(f"\nthroughput, {n:,} random addresses in .text per batch (upload and check: {upload_s:.2f} s)")
    print("| case | seconds | addresses/s | named |\n|---|---|---|---|")
    for label, seconds, rate, named in rows:
        print(f"| {label} | {seconds:.2f} | {rate:,.0f} | {named:,} |")


# ------------------------------------------------------------------------------------------ latency


def latency(binary: Path, data: bytes, n: int, tmp: Path) -> None:
    info = read_elf(data)
    http_port, grpc_port = _free_port(), _free_port()
    argv = [str(FLAMEWATCH), "all", "--data-dir", str(tmp / "data"), "--http-address", f"127.0.0.1:{http_port}",
            "--grpc-address", f"127.0.0.1:{grpc_port}", "--compaction.interval", "0", "--flush-interval", "0.2"]
    url = f"http://127.0.0.1:{http_port}"
    first, second = text_offsets(data, n, 10), text_offsets(data, n, 11)
    with _running(argv, url, tmp / "all.log"), httpx.Client(timeout=600) as http:
        for name, offsets, symbolized in [("bare", first, False), ("named", first, True)]:
            body = _profile(offsets, info.build_id, info.segments.load_address, symbolized)
            r = http.post(f"{url}/ingest", params={"service_name": name, "__name__": "process_cpu"}, content=body)
            r.raise_for_status()
        time.sleep(1)
        subprocess.run([str(FLAMEWATCH), "debuginfo", "upload", str(binary), "--symbolizer.address",
                        f"127.0.0.1:{grpc_port}"], check=True, capture_output=True)
        baseline = _median(http, url, "named")
        cold = _timed(http, url, "bare")
        warm = _median(http, url, "bare")
    with _running(argv, url, tmp / "all.log"), httpx.Client(timeout=600) as http:
        restarted_baseline = _timed(http, url, "named")  # the block read again: the restarted process's own cost
        restarted = _timed(http, url, "bare")
        body = _profile(second, info.build_id, info.segments.load_address, False)
        http.post(f"{url}/ingest", params={"service_name": "bare2", "__name__": "process_cpu"},
                  content=body).raise_for_status()
        time.sleep(1)
        new_addresses = _timed(http, url, "bare2")
    print(f"\nmerged flamegraph of {n:,} unsymbolized locations (one profile), through flamewatch all")
    print("| case | query seconds | added to the baseline |\n|---|---|---|")
    print(f"| baseline: the same profile with its functions stored | {baseline:.3f} | |")
    for label, seconds in [("cold: first use of the binary (symcache built)", cold),
                           ("warm: answers in the querier's memory", warm),
                           ("after a restart: answers from Postgres", restarted),
                           ("(after a restart: the baseline profile, first query)", restarted_baseline),
                           ("new addresses after a restart: stored symcache", new_addresses)]:
        print(f"| {label} | {seconds:.3f} | {seconds - baseline:+.3f} |")


def _profile(offsets: np.ndarray, build_id: str, load_address: int, symbolized: bool) -> bytes:
    """One sample per location under a common caller; addresses as loaded at the binary's own address."""
    p = profile_pb2.Profile()
    strings = ["", "samples", "count", "cpu", "nanoseconds", "/usr/local/bin/minio", build_id, "caller"]
    p.sample_type.add(type=1, unit=2)
    p.sample_type.add(type=3, unit=4)
    p.period_type.type, p.period_type.unit, p.period = 3, 4, 10_000_000
    p.time_nanos = time.time_ns() - 10**9
    p.duration_nanos = 10**9
    p.mapping.add(id=1, memory_start=load_address, memory_limit=load_address + 2**30, file_offset=0,
                  filename=5, build_id=6, has_functions=symbolized)
    caller = p.location.add(id=1, mapping_id=1, address=load_address + int(offsets[0]))
    if symbolized:
        p.function.add(id=1, name=7, system_name=7)
        caller.line.add(function_id=1, line=1)
    for i, offset in enumerate(offsets.tolist(), start=2):
        loc = p.location.add(id=i, mapping_id=1, address=load_address + offset)
        if symbolized:
            strings.append(f"function_{i}")
            p.function.add(id=i, name=len(strings) - 1, system_name=len(strings) - 1)
            loc.line.add(function_id=i, line=i)
        p.sample.add(location_id=[i, 1], value=[1, 10_000_000])
    p.string_table.extend(strings)
    return gzip.compress(p.SerializeToString())


def _query(http: httpx.Client, url: str, service: str) -> None:
    r = http.get(f"{url}/api/v1/query", params={"query": f'{CPU}{{service_name="{service}"}}', "from": "now-1h",
                                               "format": "flamegraph", "max_nodes": 20000})
    r.raise_for_status()


def _timed(http: httpx.Client, url: str, service: str) -> float:
    started = time.perf_counter()
    _query(http, url, service)
    return time.perf_counter() - started


def _median(http: httpx.Client, url: str, service: str, runs: int = 5) -> float:
    return statistics.median(_timed(http, url, service) for _ in range(runs))


class _running:
    """`flamewatch all` until the block exits."""

    def __init__(self, argv: list[str], url: str, log: Path):
        self.argv, self.url, self.log = argv, url, log

    def __enter__(self):
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
        raise TimeoutError(f"flamewatch all not ready:\n{self.log.read_text()[-2000:]}")

    def __exit__(self, *exc_info) -> None:
        self.process.terminate()
        self.process.wait(60)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


if __name__ == "__main__":
    main()
