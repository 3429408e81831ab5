"""How the C allocator keeps the memory of a Flamewatch process.

glibc's malloc gives each thread that allocates at once an arena of its own, up to eight per core, and
an arena keeps what is freed in it for the next allocation rather than returning it. Flamewatch's
threads (the pushes decoded at once, the flushes, the queries) each allocate tens of megabytes of numpy
arrays and free them again, so every arena ends up holding its own high-water mark: under the 300 KB
ingest bench the all-in-one peaked at 1.4-2.0 GB, of which a flush's live arrays are about 100 MB. Two
arenas alone gave 0.98 GB in a run against 1.55 GB without; with Arrow's pool as below too, 0.84-1.2 GB
(median 1.0 of 5 runs), and the CPU per push did not change beyond the runs' own spread
(bench/README.md, "Ingest cost").

pyarrow allocates from a pool of its own, mimalloc by default, which keeps freed pages as well; on the
system allocator (and so on the two arenas) the peak was 0.90-0.93 GB in two runs against 1.02-1.25 GB
on mimalloc, at the same CPU.

`configure` does both before the first thread starts and before pyarrow is imported: it caps the arenas
(`MALLOC_ARENA_MAX` in the environment, read by glibc itself, takes precedence, so a deployment can choose
another value, or `8 * cores`, glibc's own default) and sets `ARROW_DEFAULT_MEMORY_POOL=system` unless
the environment chooses a pool (`mimalloc`, `jemalloc`); child processes inherit it. Other C libraries
(musl) have no arenas: nothing is done there.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

ARENAS = 2
_M_ARENA_MAX = -8  # glibc's malloc.h


def configure() -> None:
    """The arena cap and Arrow's pool, as the module docstring says; call before anything else runs."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    limit_arenas()


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas at `arenas` unless MALLOC_ARENA_MAX is set; True when the cap was set."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    if mallopt(_M_ARENA_MAX, arenas) != 1:
        log.debug("mallopt(M_ARENA_MAX, %d) was refused; malloc keeps its default arenas", arenas)
        return False
    return True
