"""Codes for distinct rows and runs, and folding entry values into per-node sums."""

import numpy as np
import pytest

from flamewatch.querier.merging import _fold
from flamewatch.storage.frames import row_codes, run_codes, run_firsts


@pytest.mark.parametrize("spread", [3, 10**6, 2**40])
def test_codes_number_the_distinct_rows_in_lexicographic_order(spread):
    rng = np.random.default_rng(spread)
    columns = [rng.integers(-spread, spread, 5_000), rng.integers(0, 7, 5_000), rng.integers(-spread, 3, 5_000)]
    code, first = row_codes(columns)
    unique, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    assert code.tolist() == inverse.reshape(-1).tolist()
    assert np.stack(columns, axis=1)[first].tolist() == unique.tolist()


def test_extreme_values_take_the_exact_path():
    columns = [np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0, 0]), np.array([1, 1, 2, 2])]
    code, first = row_codes(columns)
    assert code.tolist() == [0, 2, 1, 1]
    assert sorted(first.tolist())[:2] == [0, 1]


def test_no_rows():
    code, first = row_codes([np.zeros(0, np.int64), np.zeros(0, np.int64)])
    assert len(code) == len(first) == 0


def test_run_codes_number_values_that_come_in_runs():
    values = np.array(["b", "b", "a", "a", "a", "c", "b", "b"])
    distinct, codes = run_codes(values)
    assert distinct.tolist() == ["a", "b", "c"]
    assert distinct[codes].tolist() == values.tolist()
    assert [len(x) for x in run_codes(values[:0])] == [0, 0]


@pytest.mark.parametrize("values", [[7, 7, 3, 3, 3, 9, 7, 7, 3], [5], [4, 2, 4, 2, 1], list(range(20, 0, -1)) * 2])
def test_run_firsts_is_numpys_unique_with_first_indices(values):
    values = np.array(values, np.int64)
    distinct, first = run_firsts(values)
    want_distinct, want_first = np.unique(values, return_index=True)
    assert distinct.tolist() == want_distinct.tolist() and first.tolist() == want_first.tolist()
    assert [len(x) for x in run_firsts(values[:0])] == [0, 0]


def test_folding_stays_exact_for_integer_sums_past_float_precision():
    nodes = np.array([0, 1, 1, 2] * 50, np.int64)
    big = np.full(len(nodes), 2**55 + 1, np.int64)
    sums = np.zeros(3, np.int64)
    _fold(sums, nodes, big)
    assert sums.tolist() == [50 * (2**55 + 1), 100 * (2**55 + 1), 50 * (2**55 + 1)]
    small = np.arange(len(nodes), dtype=np.int64)
    again = np.zeros(3, np.int64)
    _fold(again, nodes, small)  # the bincount path
    want = np.zeros(3, np.int64)
    np.add.at(want, nodes, small)
    assert again.tolist() == want.tolist()
