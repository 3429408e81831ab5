"""Profiles of the test process itself: CPU by sampling threads, heap from tracemalloc, and their HTTP routes.

The workloads are functions with names found nowhere else, so a profile can be searched for them:
a thread burning CPU must own most of a CPU profile, threads waiting in every usual way must be absent,
and memory kept by one function must be charged to it.
"""

import asyncio
import importlib
import socket
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

import flamewatch.selfprofile
from flamewatch.pprof import Profile, decode, validate
from flamewatch.rpc.http import build_app
from flamewatch.selfprofile import (
    HeapProfilingDisabled,
    ProfilerBusy,
    profile_cpu,
    profile_heap,
    router,
    start_heap_tracking,
)
from flamewatch.selfprofile import heap as heap_module
from flamewatch.selfprofile.cpu import end_early
from flamewatch.selfprofile.enclosing import FunctionIndex

MB = 1 << 20


def burn_cpu_for_test(stop: threading.Event) -> int:
    total = 0
    while not stop.is_set():
        total += sum(i * i for i in range(2000))
    return total


def idle_sleep_for_test(stop: threading.Event) -> None:
    while not stop.is_set():
        time.sleep(0.05)


def idle_wait_for_test(stop: threading.Event) -> None:
    stop.wait()


def idle_recv_for_test(sock: socket.socket) -> None:
    sock.recv(1)


@pytest.fixture
def workload() -> Iterator[None]:
    """One thread burning CPU and three waiting: sleeping, on an event, in a socket read."""
    stop = threading.Event()
    reader, writer = socket.socketpair()
    threads = [threading.Thread(target=f, args=(a,), daemon=True)
               for f, a in [(burn_cpu_for_test, stop), (idle_sleep_for_test, stop), (idle_wait_for_test, stop),
                            (idle_recv_for_test, reader)]]
    for thread in threads:
        thread.start()
    yield
    stop.set()
    writer.send(b"x")
    for thread in threads:
        thread.join()
    reader.close()
    writer.close()


@pytest.fixture
def heap_tracking() -> Iterator[None]:
    started = start_heap_tracking(frames=32)
    yield
    if started:
        tracemalloc.stop()


def stacks(p: Profile) -> list[list[str]]:
    names = p.strings[p.functions.name[p.locations.line_function_id.astype(np.int64) - 1]]
    return [list(names[p.samples.locations[a:b].astype(np.int64) - 1])
            for a, b in zip(p.samples.offsets[:-1], p.samples.offsets[1:])]


def harness(p: Profile, column: int) -> int:
    """The value of the samples of pytest-xdist's worker thread (execnet's, reading the worker's orders),
    started apart from the threading module: with no CPU clock of its own it is sampled by wall clock
    (cpu.py). The test harness, not the test's workload."""
    return sum(int(p.samples.values[i, column]) for i, stack in enumerate(stacks(p))
               if any(name.startswith("execnet.") for name in stack))


def cum(p: Profile, function: str, column: int) -> int:
    """The value of the samples with `function` (its unqualified name) on their stack."""
    return sum(int(p.samples.values[i, column]) for i, stack in enumerate(stacks(p))
               if any(name.rsplit(".", 1)[-1] == function for name in stack))


def decoded(data: bytes) -> Profile:
    assert data[:2] == b"\x1f\x8b"
    p = decode(data)
    validate(p)
    return p


def test_cpu_profile_is_the_busy_thread(workload):
    p = decoded(profile_cpu(1))
    assert p.sample_type_names() == [("samples", "count"), ("cpu", "nanoseconds")]
    assert (p.string(p.period_type[0]), p.string(p.period_type[1]), p.period) == ("cpu", "nanoseconds", 10_000_000)
    assert abs(p.time_nanos - time.time_ns()) < 5e9 and 0.9e9 < p.duration_nanos < 3e9
    np.testing.assert_array_equal(p.samples.values[:, 1], p.samples.values[:, 0] * 10_000_000)
    total = int(p.samples.values[:, 1].sum())
    assert total >= 200_000_000, "a thread busy for 1 s earns at least 20 samples even on a loaded machine"
    assert cum(p, "burn_cpu_for_test", 1) >= 0.8 * (total - harness(p, 1))
    for idle in ("idle_sleep_for_test", "idle_wait_for_test", "idle_recv_for_test"):
        assert cum(p, idle, 0) == 0, idle


def test_cpu_profile_frames_are_qualified_and_leaf_first(workload):
    p = decoded(profile_cpu(1))
    burning = [s for s in stacks(p) if any(n.endswith(".burn_cpu_for_test") for n in s)]
    assert burning
    for stack in burning:
        assert stack[-1] == "threading.Thread._bootstrap"  # the root is last
        assert stack[stack.index(f"{__name__}.burn_cpu_for_test") + 1] == "threading.Thread.run"
    function = next(i for i, n in enumerate(p.functions.name) if p.string(n).endswith(".burn_cpu_for_test"))
    assert p.string(p.functions.filename[function]) == __file__
    assert p.functions.start_line[function] == burn_cpu_for_test.__code__.co_firstlineno
    lines = p.locations.line_line[p.locations.line_function_id == p.functions.id[function]]
    first = burn_cpu_for_test.__code__.co_firstlineno
    assert set(lines) <= set(range(first, first + 5))  # the lines of its body
    keys = list(zip(p.locations.line_function_id.tolist(), p.locations.line_line.tolist()))
    assert len(keys) == len(set(keys)), "one location per function and line"


def test_one_cpu_profile_at_a_time():
    barrier, outcomes = threading.Barrier(2), []

    def take() -> None:
        barrier.wait()
        try:
            profile_cpu(1)
            outcomes.append("profile")
        except ProfilerBusy as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=take) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["a CPU profile of this process is already being taken; only one runs at a time, "
                                "retry when it has finished", "profile"]


def test_cpu_profile_of_an_idle_process_looks_at_the_threads_rarely(monkeypatch: pytest.MonkeyPatch):
    """Reading every thread's stack and clock 100 times a second cost an idle service more than its
    work; while the process uses less than a period of CPU between ticks, no thread can owe a sample."""
    looks = []
    current_frames = sys._current_frames

    def counted():
        looks.append(1)
        return current_frames()

    monkeypatch.setattr(sys, "_current_frames", counted)
    p = decoded(profile_cpu(1))
    assert len(looks) <= 30, f"{len(looks)} looks at the threads in 1 s of an idle process (100 ticks)"
    assert int(p.samples.values[:, 0].sum()) <= 10


def test_end_early_answers_a_running_profile_at_once(workload):
    """A stopping server ends the profile a scrape is waiting for: it answers with what it sampled
    instead of holding the stop for the rest of its seconds."""
    answers = []
    taking = threading.Thread(target=lambda: answers.append(profile_cpu(60)))
    started = time.monotonic()
    taking.start()
    time.sleep(1)
    end_early()
    taking.join(10)
    assert not taking.is_alive() and time.monotonic() - started < 5
    p = decoded(answers[0])
    assert 0.5e9 < p.duration_nanos < 5e9 and int(p.samples.values[:, 0].sum()) > 0
    assert decoded(profile_cpu(1)).duration_nanos >= 0.9e9  # the next profile runs its full seconds


@pytest.mark.parametrize("seconds", [0, 0.5, 301, -1])
def test_cpu_seconds_out_of_range(seconds):
    with pytest.raises(ValueError, match=f"^seconds must be between 1 and 300, got {seconds}$"):
        profile_cpu(seconds)


def allocate_for_test() -> list[bytearray]:
    return [bytearray(64 * 1024) for _ in range(6 * 16)]  # 6 MB in 64 KB blocks


def test_heap_profile_charges_the_allocating_function(heap_tracking):
    kept = allocate_for_test()
    p = decoded(profile_heap(sample_bytes=0))
    assert p.sample_type_names() == [("inuse_objects", "count"), ("inuse_space", "bytes")]
    assert (p.string(p.period_type[0]), p.string(p.period_type[1]), p.period) == ("space", "bytes", 1)
    assert cum(p, "allocate_for_test", 1) >= 6 * MB
    assert cum(p, "allocate_for_test", 0) >= 96
    leafs = {stack[0] for stack in stacks(p) if any(n.endswith(".allocate_for_test") for n in stack)}
    assert leafs == {f"{__name__}.allocate_for_test"}
    assert cum(p, "test_heap_profile_charges_the_allocating_function", 1) >= 6 * MB  # callers follow the leaf
    del kept


def keep_small_blocks_for_test() -> list[bytes]:
    return [bytes(480) + i.to_bytes(4, "little") for i in range(20_000)]  # ~10 MB in 20k blocks


def test_heap_profile_is_sampled_by_size_and_estimates_what_is_held(heap_tracking, monkeypatch):
    """Every live block in the answer made a ~1 MB profile that took seconds to build and store at
    each scrape; sampled like Go's heap it keeps about one block per `sample_bytes` and estimates
    the same totals, and the index of functions is built once, not at every profile."""
    kept = keep_small_blocks_for_test()
    exact = decoded(profile_heap(sample_bytes=0))
    built = []
    monkeypatch.setattr(heap_module, "FunctionIndex", lambda: built.append(1) or FunctionIndex())
    sampled = [decoded(profile_heap(sample_bytes=4096, rng=np.random.default_rng(seed))) for seed in (7, 8)]
    default = decoded(profile_heap())
    assert built == [], "the function index of the first profile is reused"
    assert (exact.period, sampled[0].period, default.period) == (1, 4096, 64 * 1024)
    blocks, held = cum(exact, "keep_small_blocks_for_test", 0), cum(exact, "keep_small_blocks_for_test", 1)
    assert blocks >= 20_000 and held >= 20_000 * 484
    for p in sampled:  # ~2,300 of the 20,000 blocks kept: the estimates are within a few per cent
        assert abs(cum(p, "keep_small_blocks_for_test", 0) - blocks) < 0.1 * blocks
        assert abs(cum(p, "keep_small_blocks_for_test", 1) - held) < 0.1 * held
    assert 0 < cum(default, "keep_small_blocks_for_test", 1) < 3 * held
    del kept


def test_heap_profile_needs_tracemalloc():
    assert not tracemalloc.is_tracing()
    with pytest.raises(HeapProfilingDisabled, match="^heap profiling is not enabled in this process: it needs "
                                                    "tracemalloc"):
        profile_heap()


SAMPLE_MODULE = """\
import functools
def outer():
    def inner():
        return [x for x in range(3)]
    return inner
class Shape:
    sides = 4
    @functools.lru_cache
    def area(self):
        return (lambda: 1)()
    corners = sides
async def fetch():
    pass
after = 1
"""


def test_enclosing_function_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "sample_module.py").write_text(SAMPLE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("sample_module")
    monkeypatch.delitem(sys.modules, "sample_module")
    index, name = FunctionIndex(), module.__file__
    expected = {1: ("sample_module.<module>", 1), 2: ("sample_module.outer", 2),
                4: ("sample_module.outer.<locals>.inner", 3), 5: ("sample_module.outer", 2),
                7: ("sample_module.<module>", 1), 10: ("sample_module.Shape.area", 8),
                11: ("sample_module.<module>", 1), 13: ("sample_module.fetch", 12), 14: ("sample_module.<module>", 1)}
    assert {line: index.function_at(name, line) for line in expected} == expected
    assert index.function_at(str(tmp_path / "gone.py"), 7) == (f"{tmp_path / 'gone.py'}:7", 0)
    first = allocate_for_test.__code__.co_firstlineno
    assert index.function_at(__file__, first + 1) == (f"{__name__}.allocate_for_test", first)


def get(heap_enabled: bool, path: str) -> httpx.Response:
    """One request to an app serving the router, in process (Starlette's TestClient warns about httpx)."""
    async def request() -> httpx.Response:
        transport = httpx.ASGITransport(app=build_app([router(heap_enabled)], lambda: []))
        async with httpx.AsyncClient(transport=transport, base_url="http://flamewatch") as client:
            return await client.get(path)

    return asyncio.run(request())


def test_cpu_route_serves_gzip_pprof(workload):
    cpu = get(True, "/debug/pprof/profile?seconds=1")
    assert cpu.status_code == 200, cpu.text
    assert cpu.headers["content-type"] == "application/octet-stream"
    assert cum(decoded(cpu.content), "burn_cpu_for_test", 1) > 0


def test_heap_route_serves_gzip_pprof(heap_tracking):
    kept = allocate_for_test()
    heap = get(True, "/debug/pprof/heap?gc=1")
    assert heap.status_code == 200, heap.text
    assert heap.headers["content-type"] == "application/octet-stream"
    assert cum(decoded(heap.content), "allocate_for_test", 1) >= 4 * MB  # sampled: an estimate of 6 MB
    del kept


@pytest.mark.parametrize(("query", "message"), [
    ("seconds=0", "seconds must be between 1 and 300, got 0"),
    ("seconds=301", "seconds must be between 1 and 300, got 301"),
    ("seconds=ten", "invalid request: query.seconds: Input should be a valid integer, unable to parse string as "
                    "an integer"),
])
def test_route_rejects_bad_seconds(query, message):
    response = get(False, f"/debug/pprof/profile?{query}")
    assert (response.status_code, response.json()) == (400, {"error": message})


def test_heap_route_when_disabled_says_how_to_turn_it_on():
    response = get(False, "/debug/pprof/heap")
    assert response.status_code == 404
    assert response.json()["error"].startswith("heap profiling is off in this service: start it with "
                                               "--self-profiling.heap")


def test_heap_route_when_enabled_but_not_tracing():
    response = get(True, "/debug/pprof/heap")
    assert response.status_code == 404
    assert response.json()["error"].startswith("heap profiling is not enabled in this process")


def test_exports():
    assert sorted(flamewatch.selfprofile.__all__) == [
        "HeapProfilingDisabled", "ProfilerBusy", "SelfProfileError", "profile_cpu", "profile_heap", "router",
        "start_heap_tracking",
    ]
