"""A sampling CPU profiler over the Python threads of this process, answering in pprof.

A background thread wakes every 10 ms (100 Hz) for the requested seconds, reads every thread's stack
with `sys._current_frames()` (its own thread excepted) and counts identical stacks. The stacks are
read in one pass that runs no Python bytecode (see `_all_stacks`): on CPython 3.11, following
`f_back` from another thread's frame after that thread has moved on reads freed memory and can
crash the process, and the interpreter only hands the GIL to another thread between bytecodes. Frames become
functions named `module.qualname` (`co_qualname`) with their file and first line, and locations
(one per function and line), leaf first. The result has the sample types of Go's CPU profile,
`samples/count` and `cpu/nanoseconds` (samples x the 10 ms period), so every pprof tool reads it.

Sampling stacks is wall-clock sampling: a thread blocked in a wait would be seen at every tick and
bury the threads that work. So a thread is sampled for the CPU it used, not the time it existed:
 - On Linux each thread's CPU time is read from its per-thread CPU clock (`clock_gettime` with the
   clock id the kernel derives from a thread id; reading a gone thread's clock fails cleanly). Every
   10 ms of CPU a thread used since it was last charged is one sample of the stack it is seen in,
   much like Go's SIGPROF: an idle thread (sleeping, in `recv`, waiting for a lock or the GIL) earns
   none, and one the sampler fell behind on is charged all it used.
 - Whatever the CPU clock says, a thread whose innermost Python frame is a known idle wait is not
   sampled: `threading.Condition.wait` (which `Event.wait`, `Queue.get` and `Semaphore.acquire`
   block in), `Thread.join`, `queue.Queue.get`, the `selectors` `select` methods (an idle asyncio
   loop), `socket.accept` and an idle `ThreadPoolExecutor` worker. Its CPU then went to bookkeeping
   just before the wait, which the stack no longer shows.
 - Where there is no per-thread clock (not Linux, or a thread the `threading` module does not know),
   that thread is sampled at every tick the threads are looked at (below) unless it is in a known
   idle wait: wall-clock sampling, with `time.sleep` and C-level waits counted as time in their caller.

A tick costs a clock read per thread, and a service has a few dozen threads mostly asleep, so each
tick first reads the process's CPU clock: while the whole process has used less than one period
since the threads' clocks were last read, the tick ends there. A thread's unsampled remainder (under
a period) waits at most until the process has used another period, and is then charged as usual,
so nothing is lost and an idle process is checked in full only every few hundred milliseconds.

One CPU profile runs at a time per process; a second request while one runs fails at once with
`ProfilerBusy` (rather than waiting up to 300 s behind it), as Go's `net/http/pprof` does. A server
that is stopping calls `end_early`: the profile being taken answers at once with what it has sampled,
so a scrape in flight does not hold the shutdown for the rest of its seconds.
"""

from __future__ import annotations

import concurrent.futures.thread
import gc
import itertools
import operator
import queue
import selectors
import socket
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import CodeType, FrameType

import numpy as np

from flamewatch.pprof.encode import encode
from flamewatch.pprof.model import Profile
from flamewatch.selfprofile.errors import ProfilerBusy
from flamewatch.selfprofile.stacks import Measure, StackTable

PERIOD_NS = 10_000_000  # 100 Hz
MIN_SECONDS, MAX_SECONDS = 1, 300
MAX_DEPTH = 512  # frames kept per stack, leaf first; deeper stacks lose their outermost callers

CPU = Measure(sample_types=(("samples", "count"), ("cpu", "nanoseconds")), period_type=("cpu", "nanoseconds"),
              period=PERIOD_NS)

_one_at_a_time = threading.Lock()
_running: set[_Sampler] = set()  # guarded by _running_lock
_running_lock = threading.Lock()


def profile_cpu(seconds: float) -> bytes:
    """Sample every Python thread for `seconds` (1..300) and return a gzip-compressed pprof CPU profile."""
    check_seconds(seconds)
    with _exclusive():
        return encode(sample_for(seconds))


def check_seconds(seconds: float) -> None:
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise ValueError(f"seconds must be between {MIN_SECONDS} and {MAX_SECONDS}, got {seconds}")


@contextmanager
def _exclusive() -> Iterator[None]:
    if not _one_at_a_time.acquire(blocking=False):
        raise ProfilerBusy("a CPU profile of this process is already being taken; only one runs at a time, "
                           "retry when it has finished")
    try:
        yield
    finally:
        _one_at_a_time.release()


def end_early() -> None:
    """End every CPU profile being taken now; each answers with the samples it has (its duration says
    how long it ran). Profiles started afterwards run their full seconds."""
    with _running_lock:
        for sampler in _running:
            sampler.ending.set()


def sample_for(seconds: float) -> Profile:
    """Run the sampler on its own thread for `seconds` (less if `end_early` is called) and return what
    it saw (no exclusion)."""
    sampler = _Sampler()
    start_wall, start = time.time_ns(), time.monotonic_ns()
    thread = threading.Thread(target=sampler.run, args=(seconds,), name="flamewatch-cpu-sampler", daemon=True)
    with _running_lock:
        _running.add(sampler)
    try:
        thread.start()
        thread.join()
    finally:
        with _running_lock:
            _running.discard(sampler)
    if sampler.error is not None:
        raise sampler.error
    return sampler.profile(start_wall, time.monotonic_ns() - start)


def _idle_waits() -> frozenset[CodeType]:
    """Code of the Python functions a thread sits in while it waits for something to do."""
    waits: list[object] = [threading.Condition.wait, getattr(threading.Thread, "_wait_for_tstate_lock", None),
                           queue.Queue.get, socket.socket.accept, getattr(concurrent.futures.thread, "_worker", None)]
    waits += [kind.select for kind in vars(selectors).values()
              if isinstance(kind, type) and issubclass(kind, selectors.BaseSelector) and "select" in vars(kind)]
    return frozenset(code for code in (getattr(w, "__code__", None) for w in waits) if code is not None)


_IDLE_WAITS = _idle_waits()


class _Sampler:
    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.ending = threading.Event()
        self._table = StackTable()
        self._counts: dict[tuple[int, ...], int] = {}  # stack (location ids, leaf first) -> samples
        self._location_of: dict[tuple[CodeType, int], int] = {}
        self._function_of: dict[CodeType, int] = {}
        self._clocks = _ThreadClocks()
        self._own_ident = 0

    def run(self, seconds: float) -> None:
        try:
            self._own_ident = threading.get_ident()
            self._loop(time.monotonic() + seconds)
        except BaseException as exc:  # handed to the requesting thread, which raises it
            self.error = exc

    def _loop(self, deadline: float) -> None:
        period = PERIOD_NS / 1e9
        self._clocks.start(sys._current_frames().keys())
        tick = time.monotonic()
        while tick < deadline:
            tick = min(tick + period, deadline)
            if self.ending.wait(max(0.0, tick - time.monotonic())):
                return
            self.sample()
            if time.monotonic() - tick > period:  # fallen behind: skip the missed ticks, the CPU clocks kept count
                tick = time.monotonic()

    def sample(self) -> None:
        if not self._clocks.process_used_a_period():
            return
        threads = _all_stacks()
        self._clocks.track(ident for ident, _ in threads)
        for ident, frames in threads:
            if ident == self._own_ident:
                continue
            owed = self._clocks.owed(ident)
            if owed and frames[0].f_code not in _IDLE_WAITS:
                stack = self._stack(frames)
                self._counts[stack] = self._counts.get(stack, 0) + owed

    def _stack(self, frames: tuple[FrameType, ...]) -> tuple[int, ...]:
        stack = []
        location_of = self._location_of
        for frame in frames:
            key = (frame.f_code, frame.f_lineno or 0)
            location = location_of.get(key)
            if location is None:
                location = location_of[key] = self._new_location(frame)
            stack.append(location)
        return tuple(stack)

    def _new_location(self, frame: FrameType) -> int:
        code = frame.f_code
        function = self._function_of.get(code)
        if function is None:
            module = frame.f_globals.get("__name__")
            name = f"{module}.{code.co_qualname}" if module else code.co_qualname
            function = self._function_of[code] = self._table.function(name, code.co_filename, code.co_firstlineno)
        return self._table.location(function, frame.f_lineno or 0)

    def profile(self, time_nanos: int, duration_nanos: int) -> Profile:
        stacks = list(self._counts)
        depths = np.fromiter(map(len, stacks), np.int64, len(stacks))
        locations = np.fromiter(itertools.chain.from_iterable(stacks), np.uint64, int(depths.sum()))
        counts = np.fromiter(self._counts.values(), np.int64, len(stacks))
        values = np.stack([counts, counts * PERIOD_NS], axis=1)
        return self._table.profile(CPU, locations, depths, values, time_nanos, duration_nanos)


_CALLERS = ("f_back",) * (MAX_DEPTH - 1)


def _all_stacks() -> list[tuple[int, tuple[FrameType, ...]]]:
    """Every thread's ident and frames, leaf first (at most MAX_DEPTH), read while no other thread runs.

    The frames `sys._current_frames()` returns belong to threads that keep running whenever this
    one lets go of the GIL, which CPython does between bytecodes. On 3.11 a frame whose thread
    returned from it may keep a dangling link to its caller, and `f_back` then reads freed memory:
    garbage objects, then a segfault. So the snapshot and every `f_back` are composed of C
    iterators and builtins (`getattr` over a tuple of "f_back", stopped at the first None), which
    `list` drives to the end without running a bytecode, with the cyclic GC paused so that no
    finalizer runs Python code in between. Each frame is followed only while its thread is still
    in it; reading `f_code` and `f_lineno` later is safe, as a returned frame keeps its own copy.
    """
    snapshot, same_snapshot = itertools.tee(itertools.islice(iter(sys._current_frames, None), 1))
    idents = itertools.chain.from_iterable(map(dict.keys, snapshot))
    tops = itertools.chain.from_iterable(map(dict.values, same_snapshot))
    walks = map(itertools.chain, map(itertools.repeat, tops, itertools.repeat(1)), itertools.repeat(_CALLERS))
    chains = map(itertools.accumulate, walks, itertools.repeat(getattr))
    stacks = map(tuple, map(itertools.takewhile, itertools.repeat(operator.truth), chains))
    collecting = gc.isenabled()
    gc.disable()
    try:
        return list(zip(idents, stacks))
    finally:
        if collecting:
            gc.enable()


class _ThreadClocks:
    """How many samples each thread has earned by the CPU time it used since it was last charged."""

    def __init__(self) -> None:
        self._enabled = _thread_clocks_work()
        self._idents: frozenset[int] = frozenset()
        self._native: dict[int, int] = {}  # thread ident -> kernel thread id
        self._clock: dict[int, int] = {}  # thread ident -> its CPU clock id
        self._charged: dict[int, int] = {}  # kernel thread id -> CPU ns already turned into samples
        self._process_seen = 0  # the process's CPU ns when the threads' clocks were last read

    def start(self, idents: Iterable[int]) -> None:
        """Take every thread's CPU time now as the baseline, so CPU used before the profile is not counted."""
        self._process_seen = time.process_time_ns()
        self.track(idents)
        for ident in self._idents:
            self.owed(ident)

    def process_used_a_period(self) -> bool:
        """Whether the process used a period of CPU since the threads were last looked at (always True
        without per-thread clocks: wall-clock sampling looks at every tick)."""
        if not self._enabled:
            return True
        used = time.process_time_ns()
        if used - self._process_seen < PERIOD_NS:
            return False
        self._process_seen = used
        return True

    def track(self, idents: Iterable[int]) -> None:
        idents = frozenset(idents)
        if self._enabled and idents != self._idents:  # a thread started or ended: idents may be reused
            self._native = {t.ident: t.native_id for t in threading.enumerate()
                            if t.ident is not None and t.native_id is not None}
            self._clock = {ident: _thread_clock_id(native) for ident, native in self._native.items()}
        self._idents = idents

    def owed(self, ident: int) -> int:
        clock = self._clock.get(ident)
        if clock is None:
            return 1  # no CPU clock for this thread: wall-clock sampling
        native = self._native[ident]
        try:
            used = time.clock_gettime_ns(clock)
        except OSError:  # the thread has ended
            self._charged.pop(native, None)
            return 0
        charged = self._charged.get(native)
        if charged is None or used < charged:  # first seen, or a new thread that reuses the id
            self._charged[native] = used
            return 0
        owed = (used - charged) // PERIOD_NS
        self._charged[native] = charged + owed * PERIOD_NS
        return owed


def _thread_clock_id(native_id: int) -> int:
    """Linux's clock id for a thread's CPU time (`MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`)."""
    return ((~native_id) << 3) | 6


def _thread_clocks_work() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        time.clock_gettime_ns(_thread_clock_id(threading.get_native_id()))
    except (OSError, OverflowError):
        return False
    return True
