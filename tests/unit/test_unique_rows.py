"""The distinct rows of a matrix in the order of their hash (`unique_rows`, found by the pprof reader's
extension), against numpy doing the same by sorting every row's hash; and the exact method when two
different rows share a hash."""

import numpy as np
import pytest

from flamewatch.storage.frames import row_hash, unique_rows


def by_sorting_hashes(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    _, first, inverse = np.unique(row_hash(rows), return_index=True, return_inverse=True)
    return rows[first], inverse.reshape(-1)


@pytest.mark.parametrize(("n", "width", "low", "high"), [
    (20_000, 4, 0, 300), (20_000, 5, -2**62, 2**62), (1_000, 1, 0, 3), (7, 3, -5, 5), (40, 2, 7, 8),
])
def test_rows_come_in_hash_order_with_their_first_occurrence(n, width, low, high):
    rows = np.random.default_rng(n + width).integers(low, high, (n, width), dtype=np.int64)
    unique, inverse = unique_rows(rows)
    want_unique, want_inverse = by_sorting_hashes(rows)
    assert unique.tolist() == want_unique.tolist() and inverse.tolist() == want_inverse.tolist()
    assert (unique[inverse] == rows).all()


def test_rows_without_columns_are_one_distinct_row():
    unique, inverse = unique_rows(np.zeros((3, 0), np.int64))
    assert unique.shape == (1, 0) and inverse.tolist() == [0, 0, 0]


def test_no_rows():
    unique, inverse = unique_rows(np.zeros((0, 3), np.int64))
    assert unique.shape == (0, 3) and len(inverse) == 0


def test_two_rows_of_one_hash_are_told_apart_exactly():
    # After one column the hash's state is g(c); a second column b makes it g(c) ^ b, so (0, 0) and
    # (1, g(0) ^ g(1)) hash alike.
    g = row_hash(np.array([[0], [1]], np.int64))
    other = np.array([1, g[0] ^ g[1]], np.uint64).view(np.int64)
    rows = np.array([[0, 0], other, other, [0, 0], [5, 5]], np.int64)
    assert row_hash(rows)[0] == row_hash(rows)[1]
    unique, inverse = unique_rows(rows)
    want, want_inverse = np.unique(rows, axis=0, return_inverse=True)  # the exact method: lexicographic
    assert unique.tolist() == want.tolist() and inverse.tolist() == want_inverse.reshape(-1).tolist()
