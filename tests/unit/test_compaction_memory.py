"""What compacting holds: about one row group's entries at a time, not every entry of its profiles.

Peaks are Python's traced allocations (`tracemalloc`), which count numpy's arrays: exact and the same
on every run, unlike the process's resident memory. Row groups and batches are made small, so that a
few dozen small blocks hold many groups' worth of entries.
"""

import tracemalloc

import numpy as np
import pytest
from test_block import build, entry, typed

from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.blockwrite import compact, series_order, write_block

STACKS = [[f"leaf{j}", f"mid{j % 20}", "main"] for j in range(600)]


@pytest.fixture(scope="module")
def blocks() -> list[bytes]:
    """40 blocks of 12 profiles, each profile 600 entries over the same 622 stack nodes."""
    profile = typed(build(STACKS, [[j + 1] for j in range(len(STACKS))]))[0]
    return [write_block([entry(profile, 1_000 * b + i, service_name=f"svc{i % 3}", pod=f"p{b % 4}")
                         for i in range(12)]) for b in range(40)]


@pytest.fixture
def small_groups(monkeypatch) -> None:
    monkeypatch.setattr("flamewatch.storage.blockwrite.PROFILE_GROUP_ENTRIES", 4096)
    monkeypatch.setattr("flamewatch.storage.gather.STAGE_BATCH", 4)


def compacted(blocks: list[bytes]) -> tuple[bytes, int]:
    """The block compacted from `blocks` in series order, and the peak traced while compacting."""
    readers = [BlockReader(b) for b in blocks]
    parts = [(r, np.arange(r.profiles.num_rows)) for r in readers]
    order = series_order(parts)
    tracemalloc.start()
    try:
        return compact(parts, order), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_four_times_the_profiles_take_little_more_memory_to_compact(blocks, small_groups):
    # 120 profiles against 480 (72,000 entries against 288,000): holding every entry, as compaction
    # once did, took 3.9 times the memory (8.7 against 33.8 MiB); one group at a time, 1.14 times.
    _, few = compacted(blocks[:10])
    _, many = compacted(blocks)
    assert many < 1.5 * few


def test_blocks_merged_in_batches_are_the_blocks_merged_at_once(blocks, small_groups, monkeypatch):
    in_batches, _ = compacted(blocks[:13])
    monkeypatch.setattr("flamewatch.storage.gather.STAGE_BATCH", 1000)
    assert BlockReader(in_batches).profiles.num_rows == 13 * 12
    assert in_batches == compacted(blocks[:13])[0]
