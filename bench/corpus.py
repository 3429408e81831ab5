"""The storage benchmark's corpus: real Go profiles, captured once, replayed as a fleet.

Capture: the Go program of `tests/targets/workload` runs while this module takes CPU profiles
(`/debug/pprof/profile?seconds=N`, N varied) and `allocs` profiles back to back. Half of the captures
run while other threads load the program's HTTP server (goroutine dumps, heap profiles, the pprof
index), which adds net/http, compress and runtime/pprof stacks, so the pool's profiles differ in their
stacks and not only in their sample counts. The files are kept as served (gzipped pprof) in
`bench/corpus/`, which the repository carries: 24 captures of each kind, the most any bench replays by
default. Every machine then replays the same profiles, so a figure moves only when the code does. A capture
of the same program on another machine, or with another Go, has other stacks and other counts: two
machines that each captured their own once differed by 17 points in the long-range bench's storage
figure. A count beyond the carried captures is captured here and added to the folder; to capture the
whole corpus anew (after changing the workload), empty the folder and run a bench.

Replay: a profile is pushed at a synthetic time by appending a second gzip member that holds only
field 9 (`time_nanos`) of the Profile message. A gzip reader inflates the members in turn, and in a
protobuf message the last occurrence of a scalar field wins, so the payload is the captured profile
with its time rewritten, byte for byte as served plus ~30 bytes, without decompressing it. (Go's own
pprof reader refuses a second time_nanos as "concatenated profiles", so `go tool pprof` is given the
profile as served.)
"""

from __future__ import annotations

import gzip
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from flamewatch.pprof.wire import encode_varints

ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = ROOT / "bench" / "corpus"
KINDS = ("cpu", "allocs")
NAMES = {"cpu": "process_cpu", "allocs": "memory"}
_LOAD_PATHS = ("/debug/pprof/goroutine?debug=2", "/debug/pprof/heap", "/debug/pprof/", "/debug/pprof/goroutine")


@dataclass(frozen=True)
class Pool:
    """Captured profiles per kind, each as served (gzipped pprof)."""

    profiles: dict[str, list[bytes]]

    def sizes(self, kind: str) -> np.ndarray:
        return np.array([len(p) for p in self.profiles[kind]])


def load_or_capture(count: int, log_dir: Path) -> Pool:
    """`count` profiles of each kind from the cache, capturing the missing ones from the Go workload."""
    CORPUS_DIR.mkdir(parents=True, exist_ok=True)
    have = min(len(list(CORPUS_DIR.glob(f"{kind}-*.pb.gz"))) for kind in KINDS)
    if have < count:
        started = time.monotonic()
        print(f"corpus: capturing {count - have} CPU and allocs profiles from tests/targets/workload "
              f"into {CORPUS_DIR.relative_to(ROOT)}/", flush=True)
        _capture(range(have, count), log_dir)
        print(f"corpus: captured in {time.monotonic() - started:.0f} s", flush=True)
    return Pool({kind: [(CORPUS_DIR / f"{kind}-{i:03d}.pb.gz").read_bytes() for i in range(count)]
                 for kind in KINDS})


def _capture(indexes: range, log_dir: Path) -> None:
    from infra.gotargets import GoTarget, build

    with GoTarget(build("workload"), log_dir / "workload.log") as target:
        for i in indexes:
            loaded = i % 2 == 1
            stop = threading.Event()
            loaders = [threading.Thread(target=_load, args=(target.addr, stop, k)) for k in range(2 if loaded else 0)]
            for thread in loaders:
                thread.start()
            try:
                cpu = _fetch(target.addr, f"/debug/pprof/profile?seconds={1 + i % 3}")
                allocs = _fetch(target.addr, "/debug/pprof/allocs")
            finally:
                stop.set()
                for thread in loaders:
                    thread.join()
            _write(CORPUS_DIR / f"cpu-{i:03d}.pb.gz", cpu)
            _write(CORPUS_DIR / f"allocs-{i:03d}.pb.gz", allocs)


def _load(addr: str, stop: threading.Event, offset: int) -> None:
    """Keep the program's HTTP server busy so its own stacks show in the profile being taken."""
    k = offset
    while not stop.is_set():
        _fetch(addr, _LOAD_PATHS[k % len(_LOAD_PATHS)])
        k += 1
        stop.wait(0.02)


def _fetch(addr: str, path: str) -> bytes:
    with urllib.request.urlopen(f"http://{addr}{path}", timeout=60) as response:
        return response.read()


def _write(path: Path, data: bytes) -> None:
    partial = path.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(path)  # a capture cut short never leaves a truncated profile in the cache


def at_time(served: bytes, time_ns: int) -> bytes:
    """The gzipped profile with its time_nanos set to `time_ns` (see the module docstring)."""
    field = bytes([9 << 3]) + encode_varints(np.array([time_ns], np.uint64))
    return served + gzip.compress(field, compresslevel=1, mtime=0)


@dataclass(frozen=True)
class Push:
    """One pprof to push: the series labels it goes with and the payload."""

    labels: dict[str, str]
    payload: bytes
    served: bytes  # the captured profile the payload is made of, with its own time


@dataclass(frozen=True)
class Fleet:
    """`services` x `instances`, a CPU and an allocs profile per instance every `every_s` seconds."""

    services: int
    instances: int
    every_s: int
    start_ns: int
    seconds: int
    prefix: str = "svc"
    kinds: tuple[str, ...] = KINDS

    @property
    def steps(self) -> int:
        return self.seconds // self.every_s

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.seconds * 10**9

    def count(self, kind: str = "cpu") -> int:
        return self.services * self.instances * self.steps if kind in self.kinds else 0

    def labels(self, service: int, instance: int, kind: str) -> dict[str, str]:
        return {"service_name": f"{self.prefix}-{service}", "instance": f"{self.prefix}-{service}-{instance}:6060",
                "__name__": NAMES[kind]}

    def pushes(self, pool: Pool) -> Iterator[Push]:
        """In time order, the instances of one step spread over the step (as scrapes are), each
        instance cycling through the pool from its own offset so neighbours differ."""
        for labels, time_ns, served in self.slots(pool):
            yield Push(labels, at_time(served, time_ns), served)

    def slots(self, pool: Pool) -> Iterator[tuple[dict[str, str], int, bytes]]:
        """What `pushes` sends, before the time is written into the profile: labels, time, captured profile."""
        n = self.services * self.instances
        for step in range(self.steps):
            for target in range(n):
                service, instance = divmod(target, self.instances)
                time_ns = self.start_ns + step * self.every_s * 10**9 + target * (self.every_s * 10**9 // n)
                for kind in self.kinds:
                    served = pool.profiles[kind][(target * 7 + step) % len(pool.profiles[kind])]
                    yield self.labels(service, instance, kind), time_ns, served
