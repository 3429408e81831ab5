"""`row_codes`: distinct integer rows in lexicographic order, packed into one key or not."""

import numpy as np
import pytest

from flamewatch.storage.frames import row_codes


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
