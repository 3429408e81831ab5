"""The memory this process holds now, by allocating stack, from tracemalloc, as a sampled pprof heap profile.

tracemalloc records a traceback for every allocation still alive. Its cost grows with the frames it
keeps per allocation (each frame's line number is looked up on every allocation), so
`start_heap_tracking` keeps `DEFAULT_FRAMES` (16) unless told otherwise; `PYTHONTRACEMALLOC=N` in
the environment works too. tracemalloc sees what goes through Python's allocators, which includes
numpy's array data but not memory a C library takes from malloc itself.

A long-running service holds a few hundred thousand live traces, most allocated by a few tens of
thousand distinct stacks. Answering with every one made a ~1 MB profile that took seconds to build
and as long again to store, every scrape. So the answer is sampled as Go samples its heap: a block
of `size` bytes is kept with probability `1 - exp(-size / sample_bytes)` (every block of several
`sample_bytes` is kept, one of a hundred bytes rarely) and counts `1 / probability` times, so the
totals are unbiased estimates. The default, 64 KiB, keeps about one sample per 64 KiB in use: a few
hundred to a few thousand stacks. `sample_bytes=0` keeps every block (exact). The sample types are
Go's, `inuse_objects/count` and `inuse_space/bytes`, period type `space/bytes`, and the period is the
sampling rate (1 when exact), as in Go's heap profiles.

Frames carry only a file and a line; `enclosing` names the function around each line.
"""

from __future__ import annotations

import itertools
import operator
import sys
import time
import tracemalloc
from collections.abc import Sequence

import numpy as np

from flamewatch.pprof.encode import encode
from flamewatch.pprof.model import Profile
from flamewatch.selfprofile.enclosing import FunctionIndex
from flamewatch.selfprofile.errors import HeapProfilingDisabled
from flamewatch.selfprofile.stacks import Measure, StackTable

DEFAULT_FRAMES = 16
SAMPLE_BYTES = 64 * 1024

NOT_TRACING = ("heap profiling is not enabled in this process: it needs tracemalloc, which is not tracing. "
               "Start the process with --self-profiling.heap (or FLAMEWATCH_SELF_PROFILING_HEAP=true)")

_Traceback = tuple[tuple[str, int], ...]  # (file, line) leaf first


def start_heap_tracking(frames: int = DEFAULT_FRAMES) -> bool:
    """Start tracemalloc keeping `frames` frames per allocation; False if it was already tracing."""
    if tracemalloc.is_tracing():
        return False
    tracemalloc.start(frames)
    return True


def profile_heap(sample_bytes: int = SAMPLE_BYTES, rng: np.random.Generator | None = None) -> bytes:
    """A gzip-compressed pprof of the memory live now, by allocating stack, sampled every `sample_bytes`."""
    if not tracemalloc.is_tracing():
        raise HeapProfilingDisabled(NOT_TRACING)
    taken_at = time.time_ns()
    return encode(heap_profile(tracemalloc.take_snapshot(), taken_at, sample_bytes, rng))


def heap_profile(snapshot: tracemalloc.Snapshot, time_nanos: int, sample_bytes: int = SAMPLE_BYTES,
                 rng: np.random.Generator | None = None) -> Profile:
    """One sample per distinct traceback among the kept blocks, with their estimated blocks and bytes.

    Nothing is made per trace: sizes come out through `map` into numpy, the sampling draw is one
    vectorised comparison, and kept traces are grouped by the identity of their traceback tuple
    (tracemalloc hands out one tuple per distinct traceback) with `np.unique`."""
    tracebacks, sizes = _traces(snapshot)
    kept, weights = _sample(sizes, sample_bytes, rng or np.random.default_rng())
    kept_tracebacks = list(map(tracebacks.__getitem__, kept.tolist()))
    identity = np.fromiter(map(id, kept_tracebacks), np.uint64, len(kept_tracebacks))
    _, first, group = np.unique(identity, return_index=True, return_inverse=True)
    distinct = list(map(kept_tracebacks.__getitem__, first.tolist()))
    values = np.stack([np.bincount(group, weights=weights, minlength=len(distinct)),
                       np.bincount(group, weights=sizes[kept] * weights, minlength=len(distinct))], axis=1)
    depths = np.fromiter(map(len, distinct), np.int64, len(distinct))
    table = StackTable()
    frames = map(_FrameLocations(table).__getitem__, itertools.chain.from_iterable(distinct))
    locations = np.fromiter(frames, np.uint64, int(depths.sum()))
    measure = Measure(sample_types=(("inuse_objects", "count"), ("inuse_space", "bytes")),
                      period_type=("space", "bytes"), period=max(sample_bytes, 1))
    return table.profile(measure, locations, depths, np.rint(values).astype(np.int64), time_nanos, 0)


def _sample(sizes: np.ndarray, sample_bytes: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the blocks kept and how many blocks each stands for."""
    if sample_bytes < 0:
        raise ValueError(f"sample_bytes must be 0 (every block) or positive, got {sample_bytes}")
    if sample_bytes == 0:
        return np.arange(len(sizes)), np.ones(len(sizes))
    probability = -np.expm1(-sizes / sample_bytes)
    kept = np.flatnonzero(rng.random(len(sizes)) < probability)
    return kept, 1.0 / probability[kept]


def _traces(snapshot: tracemalloc.Snapshot) -> tuple[Sequence[_Traceback], np.ndarray]:
    """Each live block's traceback ((file, line) leaf first) and size.

    Read from the raw trace tuples the snapshot wraps (domain, size, frames leaf first, ...): the
    public `Trace`/`Traceback`/`Frame` objects cost several objects per trace and frame. They are
    the fallback should the snapshot's layout change."""
    raw = getattr(snapshot.traces, "_traces", None)
    if isinstance(raw, list | tuple) and all(isinstance(t, tuple) and len(t) >= 3 for t in raw[:1]):
        return list(map(operator.itemgetter(2), raw)), np.fromiter(map(operator.itemgetter(1), raw), np.float64,
                                                                    len(raw))
    traces = list(snapshot.traces)
    tracebacks = [tuple((f.filename, f.lineno) for f in reversed(t.traceback)) for t in traces]
    return tracebacks, np.array([t.size for t in traces], np.float64)


class _FrameLocations(dict[tuple[str, int], int]):
    """(file, line) -> location id; a missing frame gets its function named and its location made."""

    def __init__(self, table: StackTable) -> None:
        super().__init__()
        self._table = table
        self._functions = function_index()

    def __missing__(self, frame: tuple[str, int]) -> int:
        filename, lineno = frame
        name, start = self._functions.function_at(filename, lineno)
        location = self[frame] = self._table.location(self._table.function(name, filename, start), lineno)
        return location


_index: FunctionIndex | None = None
_index_modules = 0


def function_index() -> FunctionIndex:
    """The index of the functions alive, kept between profiles and rebuilt only after new imports.

    Building it walks every object the garbage collector tracks, which took most of the time of a
    heap profile when it was done for each one; the functions of a running service rarely change."""
    global _index, _index_modules
    if _index is None or _index_modules != len(sys.modules):
        _index_modules = len(sys.modules)
        _index = FunctionIndex()
    return _index
