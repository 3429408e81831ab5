"""Memory a process has freed goes back to the system, so resident memory follows what is live.

The measurement runs in a fresh interpreter, whose resident size is not shaped by the tests before it.
"""

import asyncio
import json
import subprocess
import sys
import textwrap

from flamewatch.rpc import memory

FRAGMENTED = textwrap.dedent("""
    import json, threading
    from flamewatch.rpc.memory import release_free_memory

    def rss():
        return int(open("/proc/self/statm").read().split()[1]) * 4096

    def churn(kept):
        # 2 KB objects come from malloc; one in 64 is kept, so every page below the top stays in use
        chunks = [bytes(2000) for _ in range(40_000)]
        kept.extend(chunks[::64])

    kept = []
    threads = [threading.Thread(target=churn, args=(kept,)) for _ in range(4)]  # an arena each
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    before = rss()
    released = release_free_memory()
    print(json.dumps({"before": before, "after": rss(), "released": released, "kept": len(kept)}))
""")


def test_freed_memory_below_live_memory_goes_back_to_the_system():
    done = subprocess.run([sys.executable, "-c", FRAGMENTED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    # 4 x 40,000 x 2 KB = 320 MB allocated, 1/64 of it kept: at least 200 MB of freed pages go back
    assert figures["released"] is True
    assert figures["before"] - figures["after"] >= 200e6, figures


ARROW_POOL = textwrap.dedent("""
    import json, threading
    import numpy as np
    import pyarrow as pa
    from flamewatch.rpc.memory import release_free_memory

    def rss():
        return int(open("/proc/self/statm").read().split()[1]) * 4096

    def build_and_drop():
        arrays = [pa.array(np.arange(2_000_000) + i).cast(pa.float64()) for i in range(20)]  # 320 MB from the pool
        del arrays

    threads = [threading.Thread(target=build_and_drop) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    before = rss()
    release_free_memory()
    print(json.dumps({"before": before, "after": rss(), "pool": pa.total_allocated_bytes()}))
""")


def test_what_pyarrow_freed_goes_back_to_the_system():
    done = subprocess.run([sys.executable, "-c", ARROW_POOL], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["pool"] == 0  # nothing is alive: what is resident is the pool's own keeping
    assert figures["before"] - figures["after"] >= 200e6, figures


def test_release_runs_every_interval_until_cancelled(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "release_free_memory", lambda: calls.append(1) or True)

    async def run() -> None:
        task = asyncio.create_task(memory.release_periodically(0.01))
        while len(calls) < 3:
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled()

    asyncio.run(asyncio.wait_for(run(), 10))
    assert len(calls) >= 3


FREEZING = textwrap.dedent("""
    import gc, json, weakref
    from flamewatch.rpc.memory import freeze_started

    class Node:
        pass

    held = [[i] for i in range(50_000)]  # what a started service keeps for good (lists are always tracked)
    cycle = Node()
    cycle.me = cycle
    dropped = weakref.ref(cycle)
    del cycle  # unreachable, but only a collection frees a cycle
    freeze_started()
    made_since = [[i] for i in range(10)]
    print(json.dumps({"frozen": gc.get_freeze_count(), "tracked": len(gc.get_objects()),
                      "dropped_freed": dropped() is None}))
""")


def test_a_started_process_sets_what_it_holds_aside_from_the_collector_after_freeing_its_garbage():
    done = subprocess.run([sys.executable, "-c", FREEZING], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["frozen"] >= 50_000 and found["tracked"] < 5_000  # a full collection walks only the few
    assert found["dropped_freed"]
