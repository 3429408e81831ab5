"""The order profile rows come out of the index in: by time, then block id, then row, whatever order
Postgres returned them in; the fast path (one int64 key) gives exactly what sorting by all three gives."""

import numpy as np
import pytest

from flamewatch.storage.index import _time_block_row_order

BASE = 1_790_000_000 * 10**9


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("shape", ["sorted runs", "shuffled", "ties of time and block", "times far apart"])
def test_the_order_is_by_time_then_block_then_row(seed, shape):
    rng = np.random.default_rng(seed)
    n = 5000
    time = BASE + rng.integers(0, 7 * 86400 * 10**9, n)
    block = rng.integers(0, 9, n)
    row = rng.integers(0, 10**5, n)
    if shape == "sorted runs":
        runs = np.sort(rng.choice(n, 40, replace=False))
        for part in np.split(np.arange(n), runs):
            time[part] = np.sort(time[part])
    if shape == "ties of time and block":
        time[rng.integers(0, n, n // 10)] = time[0]
        block[:] = block % 2
    if shape == "times far apart":  # the key would overflow: sorted by all three
        time[0] = 0
        time[1] = 2**62
    expected = np.lexsort((row, block, time))
    assert _time_block_row_order(time, block, row).tolist() == expected.tolist()


def test_no_rows_no_order():
    empty = np.zeros(0, np.int64)
    assert _time_block_row_order(empty, empty, empty).tolist() == []
