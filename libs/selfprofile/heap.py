"""The memory this process holds now, by allocating stack, from tracemalloc, as a pprof heap profile.

tracemalloc records a traceback for every allocation still alive, which slows allocation and costs
memory, so it is off unless the process starts it: `start_heap_tracking(frames=32)` at process start
when heap profiling is enabled (or `PYTHONTRACEMALLOC=32` in the environment). A profile is a
snapshot grouped by traceback: one sample per distinct stack, with Go's heap sample types
`inuse_objects/count` and `inuse_space/bytes`, period type `space/bytes`, period 1 (every allocation
is counted, none is sampled). tracemalloc sees what goes through Python's allocators, which includes
numpy's array data but not memory a C library takes from malloc itself.

Frames carry only a file and a line; `enclosing` names the function around each line.
"""

from __future__ import annotations

import itertools
import time
import tracemalloc

import numpy as np

from flamewatch.pprof.encode import encode
from flamewatch.pprof.model import Profile
from flamewatch.selfprofile.enclosing import FunctionIndex
from flamewatch.selfprofile.errors import HeapProfilingDisabled
from flamewatch.selfprofile.stacks import Measure, StackTable

HEAP = Measure(sample_types=(("inuse_objects", "count"), ("inuse_space", "bytes")), period_type=("space", "bytes"),
               period=1)

NOT_TRACING = ("heap profiling is not enabled in this process: it needs tracemalloc, which is not tracing. "
               "Start the process with --self-profiling.heap (or FLAMEWATCH_SELF_PROFILING_HEAP=true)")


def start_heap_tracking(frames: int = 32) -> bool:
    """Start tracemalloc keeping `frames` frames per allocation; False if it was already tracing."""
    if tracemalloc.is_tracing():
        return False
    tracemalloc.start(frames)
    return True


def profile_heap() -> bytes:
    """A gzip-compressed pprof of the memory live now, by allocating stack."""
    if not tracemalloc.is_tracing():
        raise HeapProfilingDisabled(NOT_TRACING)
    taken_at = time.time_ns()
    return encode(heap_profile(tracemalloc.take_snapshot(), taken_at))


def heap_profile(snapshot: tracemalloc.Snapshot, time_nanos: int) -> Profile:
    """One sample per distinct traceback, with its live blocks and bytes.

    A process traced since start holds ~250k traces, most with distinct tracebacks, and with
    tracemalloc on every object this code makes is traced too. So nothing is made per trace or frame:
    tracebacks are grouped by a dict of the snapshot's own tuples, frames become location ids through
    a dict that names each (file, line) once, and both are driven by `map` into numpy."""
    tracebacks, sizes = _traces(snapshot)
    group_of = dict.fromkeys(tracebacks)  # distinct tracebacks, first seen first
    for i, traceback in enumerate(group_of):
        group_of[traceback] = i
    group = np.fromiter(map(group_of.__getitem__, tracebacks), np.int64, len(tracebacks))
    values = np.stack([np.bincount(group, minlength=len(group_of)),
                       np.bincount(group, weights=sizes, minlength=len(group_of)).astype(np.int64)], axis=1)
    depths = np.fromiter(map(len, group_of), np.int64, len(group_of))
    table = StackTable()
    frames = map(_FrameLocations(table).__getitem__, itertools.chain.from_iterable(group_of))
    locations = np.fromiter(frames, np.uint64, int(depths.sum()))
    return table.profile(HEAP, locations, depths, values, time_nanos, 0)


def _traces(snapshot: tracemalloc.Snapshot) -> tuple[list[tuple[tuple[str, int], ...]], np.ndarray]:
    """Each live block's traceback ((file, line) leaf first) and size.

    Read from the raw trace tuples the snapshot wraps (domain, size, frames leaf first, ...): the
    public `Trace`/`Traceback`/`Frame` objects cost several objects per trace and frame. They are
    the fallback should the snapshot's layout change."""
    raw = getattr(snapshot.traces, "_traces", None)
    if isinstance(raw, list | tuple) and all(isinstance(t, tuple) and len(t) >= 3 for t in raw[:1]):
        return [t[2] for t in raw], np.fromiter((t[1] for t in raw), np.int64, len(raw))
    traces = list(snapshot.traces)
    tracebacks = [tuple((f.filename, f.lineno) for f in reversed(t.traceback)) for t in traces]
    return tracebacks, np.array([t.size for t in traces], np.int64)


class _FrameLocations(dict[tuple[str, int], int]):
    """(file, line) -> location id; a missing frame gets its function named and its location made."""

    def __init__(self, table: StackTable) -> None:
        super().__init__()
        self._table = table
        self._functions = FunctionIndex()

    def __missing__(self, frame: tuple[str, int]) -> int:
        filename, lineno = frame
        name, start = self._functions.function_at(filename, lineno)
        location = self[frame] = self._table.location(self._table.function(name, filename, start), lineno)
        return location
