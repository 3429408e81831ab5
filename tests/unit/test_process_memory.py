"""How a Flamewatch process sets up its allocators (`flamewatch.cli.memory`): two glibc arenas, Arrow on
the system allocator, each unless the environment chooses otherwise, and set before anything allocates."""

import os
import subprocess
import sys

import pytest

PROBE = """
import os, sys
from flamewatch.cli import main
try:
    main(["--help"])
except SystemExit:
    pass
import pyarrow as pa
print(pa.default_memory_pool().backend_name, os.environ.get("MALLOC_ARENA_MAX", "-"))
"""


def _probe(**env: str) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("ARROW_DEFAULT_MEMORY_POOL", "MALLOC_ARENA_MAX")}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**base, **env}, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    return out.split()[-2:]


def test_a_flamewatch_process_puts_arrow_on_the_system_allocator():
    assert _probe() == ["system", "-"]


def test_the_environment_chooses_arrows_pool_when_it_says_one():
    assert _probe(ARROW_DEFAULT_MEMORY_POOL="mimalloc") == ["mimalloc", "-"]


@pytest.mark.parametrize(("env", "capped"), [({}, "True"), ({"MALLOC_ARENA_MAX": "4"}, "False")])
def test_arenas_are_capped_unless_malloc_arena_max_is_set(env, capped):
    code = "from flamewatch.cli import memory; print(memory.limit_arenas())"
    base = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == capped


def test_with_the_cap_threads_that_allocate_at_once_share_two_arenas():
    # Eight threads alive at once, each allocating: glibc gives each an arena of its own (each then keeps
    # its own high-water mark), unless capped. malloc_stats() prints one "Arena N:" block per arena.
    work = """
import ctypes, sys, threading
if sys.argv[1] == "cap":
    from flamewatch.cli import memory
    memory.limit_arenas()
import numpy as np
together = threading.Barrier(8)
def work():
    kept = [np.ones(10_000) for _ in range(50)]
    together.wait()  # all eight alive, each having allocated
    del kept
threads = [threading.Thread(target=work) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
ctypes.CDLL(None).malloc_stats()
"""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    arenas = {mode: subprocess.run([sys.executable, "-c", work, mode], env=env, capture_output=True, text=True,
                                   timeout=120, check=True).stderr.count("Arena ") for mode in ("default", "cap")}
    assert arenas["cap"] <= 2 < arenas["default"], arenas
