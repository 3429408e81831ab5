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
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import logging
import sys

log = logging.getLogger(__name__)

RELEASE_INTERVAL_S = 10.0


@functools.cache
def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)
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


async def release_periodically(interval_s: float = RELEASE_INTERVAL_S) -> None:
    """`release_free_memory` every `interval_s`, off the event loop (it walks every arena), until cancelled."""
    if _malloc_trim() is None:
        log.debug("no malloc_trim in this C library: freed memory is left to the allocator")
        return
    while True:
        await asyncio.sleep(interval_s)
        await asyncio.to_thread(release_free_memory)
