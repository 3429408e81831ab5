"""Giving memory that the process has freed back to the operating system, every few seconds.

glibc's malloc returns freed memory to the system only from the top of each arena; what is freed below
a block still in use stays resident. A querier parsing blocks and an ingester building them interleave
short-lived arrays with long-lived cached ones across many threads (each with its own arena), so the
resident size kept climbing while the live data did not: loading 384 flush blocks into the block cache
left 186 MB resident of which `malloc_trim(0)` gave 108 MB back. `malloc_trim` returns the free pages of
every arena (MADV_DONTNEED), so resident memory follows what is live, bounded by the configured caches.

pyarrow allocates from its own pool (mimalloc), which keeps what threads freed for reuse: after a compaction
round read and wrote its blocks the pool held 67 MB more, and three threads that built and dropped 320 MB
of arrays left 976 MB resident, 58 MB once the pool released what it held unused. The pool is asked too,
when pyarrow is imported (this module never imports it).

On a C library without `malloc_trim` (musl, macOS) glibc's part does nothing.

Python's cyclic garbage collector walks every object it tracks at each full collection, and a started
service holds more than a hundred thousand (modules, classes, routes, the configuration) that live as long
as it does. A querier's full collections took 75 ms each and came every few long merges, a fifth of a
week's fleet merge; `freeze_started` sets what a process holds once it serves aside (`gc.freeze`), and
a full collection then takes 8 ms.

`register_gauges` exports where the memory is, for a process whose resident size grows: malloc's bytes
in use and free but kept (glibc's `mallinfo2`) and pyarrow's pool. The rest of the resident size is
Python's own small-object arenas, thread stacks and the code of the process and its libraries.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import logging
import sys

from flamewatch.periodic import every

log = logging.getLogger(__name__)

RELEASE_INTERVAL_S = 10.0


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


@functools.cache
def _malloc_trim():
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_memory() -> bool:
    """Return the free pages of every malloc arena, and what pyarrow's pool holds unused, to the system;
    whether malloc returned any."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]


@functools.cache
def _mallinfo2():
    info = getattr(_libc(), "mallinfo2", None)  # glibc 2.33 and later
    if info is not None:
        info.argtypes, info.restype = [], _MallInfo2
    return info


def malloc_bytes() -> tuple[int, int]:
    """(in use, free but kept) by glibc's malloc, mmapped chunks counted as in use; (0, 0) without glibc."""
    info = _mallinfo2()
    if info is None:
        return 0, 0
    m = info()
    return m.uordblks + m.hblkhd, m.fordblks


@functools.cache  # once per process: a metric can be registered only once
def register_gauges() -> None:
    """Gauges of where this process's memory is (evaluated when /metrics is read)."""
    from prometheus_client import Gauge

    kinds = Gauge("flamewatch_memory_bytes", "Memory by who holds it: malloc in use, malloc free but kept, "
                  "pyarrow's pool", ["holder"])
    kinds.labels("malloc_in_use").set_function(lambda: malloc_bytes()[0])
    kinds.labels("malloc_free").set_function(lambda: malloc_bytes()[1])
    kinds.labels("arrow_pool").set_function(_arrow_bytes)
    Gauge("flamewatch_gc_frozen_objects", "Objects set aside from Python's garbage collector once the process "
          "served (gc.freeze): its full collections walk only what it made since").set_function(gc.get_freeze_count)


def freeze_started() -> None:
    """Set what the process holds now, once started, aside from the garbage collector: it lives as long as
    the process, and walking it made every full collection a pause (see the module docstring)."""
    gc.collect()  # what start-up left unreachable is freed, not kept for good
    gc.freeze()


def _arrow_bytes() -> int:
    arrow = sys.modules.get("pyarrow")
    return arrow.default_memory_pool().bytes_allocated() if arrow is not None else 0


async def release_periodically(interval_s: float = RELEASE_INTERVAL_S) -> None:
    """`release_free_memory` every `interval_s`, off the event loop (it walks every arena), until cancelled."""
    if _malloc_trim() is None:
        log.debug("no malloc_trim in this C library: freed memory is left to the allocator")
        return
    await every(interval_s, release_free_memory, "giving freed memory back", log)
