"""Flamewatch's own CPU and heap profiles read by `go tool pprof`: proof they are real pprof.

A thread burns CPU in one distinctively named function and another function keeps 6 MB; Go's pprof
must find the first holding most of the CPU profile and the second holding its memory.
"""

import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from infra import gotool

from flamewatch.selfprofile import profile_cpu, profile_heap, start_heap_tracking

pytestmark = pytest.mark.go

MB = 1 << 20


def burn_cpu_for_gotool(stop: threading.Event) -> int:
    total = 0
    while not stop.is_set():
        total += sum(i * i for i in range(2000))
    return total


def keep_memory_for_gotool() -> list[bytearray]:
    return [bytearray(64 * 1024) for _ in range(6 * 16)]


@pytest.fixture
def busy_thread() -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=burn_cpu_for_gotool, args=(stop,), daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join()


def by_short_name(top: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    return {name.rsplit(".", 1)[-1]: values for name, values in top.items()}


def test_go_pprof_reads_cpu_profile(busy_thread, tmp_path: Path):
    path = tmp_path / "profile.pb.gz"
    path.write_bytes(profile_cpu(1))
    full = gotool.pprof_top(path, "cpu")
    top = by_short_name(full)
    total = gotool.pprof_total(path, "cpu")
    flat, cum = top["burn_cpu_for_gotool"]
    # pytest-xdist's worker thread, sampled by wall clock (tests/unit/test_selfprofile.harness): its root's value
    harness = max((c for name, (_, c) in full.items() if name.startswith("execnet.")), default=0)
    assert cum >= 0.8 * (total - harness) > 0
    assert full["threading.Thread.run"][1] >= cum  # it called it
    assert gotool.pprof_total(path, "samples") * 10_000_000 == total


def test_go_pprof_reads_heap_profile(tmp_path: Path):
    started = start_heap_tracking()
    try:
        kept = keep_memory_for_gotool()
        path = tmp_path / "heap.pb.gz"
        path.write_bytes(profile_heap(sample_bytes=0))  # every block: the exact sizes below
    finally:
        if started:
            tracemalloc.stop()
    flat, cum = by_short_name(gotool.pprof_top(path, "inuse_space"))["keep_memory_for_gotool"]
    assert flat >= 6 * MB
    assert by_short_name(gotool.pprof_top(path, "inuse_objects"))["keep_memory_for_gotool"][0] >= 96
    del kept
