"""`changes.stats.compare` on shares made here: what it calls significant, what it cannot tell, and how
it says so."""

import json

import numpy as np
import pytest

from flamewatch.changes.stats import Settings, compare

NAMES = np.array(["main.a", "main.b", "main.c"])


def shares(rng: np.random.Generator, n: int, mean: list[float], noise: float = 0.01) -> np.ndarray:
    return np.clip(np.array(mean) + rng.normal(0, noise, (n, len(mean))), 0, 1)


def test_a_real_change_is_significant_with_an_interval_around_it():
    rng = np.random.default_rng(0)
    a, b = shares(rng, 20, [0.5, 0.3, 0.2]), shares(rng, 20, [0.45, 0.3, 0.25])
    found = compare(NAMES, a, a, b, b)
    first = found.functions[0]
    assert first.name == "main.c" and first.self.significant and first.self.low < 0.05 < first.self.high
    assert found.functions[-1].name == "main.a" and found.functions[-1].self.change < 0  # decreases last
    assert not next(f for f in found.functions if f.name == "main.b").self.significant


def test_identical_sides_and_constant_shares_are_not_significant():
    a = np.tile([0.5, 0.5, 0.0], (5, 1))
    found = compare(NAMES, a, a, a.copy(), a.copy(), Settings(min_share=0.0))
    assert all(f.self.p == 1.0 and not f.self.significant for f in found.functions)


def test_a_side_of_one_profile_has_no_interval_and_says_it_cannot_tell():
    rng = np.random.default_rng(1)
    a, b = shares(rng, 1, [0.5, 0.3, 0.2]), shares(rng, 10, [0.2, 0.3, 0.5])
    found = compare(NAMES, a, a, b, b)
    assert "1 profiles on the a side" in found.notes[0]
    assert not any(f.self.significant for f in found.functions)
    as_json = json.loads(json.dumps(found.json(), allow_nan=False))  # infinite bounds become null
    assert as_json["functions"][0]["self"]["low"] is None


def test_tiny_functions_are_left_out_and_the_largest_kept():
    rng = np.random.default_rng(2)
    a = shares(rng, 10, [0.9995, 0.0004, 0.0001], noise=0.00001)
    found = compare(NAMES, a, a, a, a, Settings(min_share=0.001))
    assert [f.name for f in found.functions] == ["main.a"]
    limited = compare(NAMES, a, a, a, a, Settings(min_share=0.0, max_functions=2))
    assert len(limited.functions) == 2 and "only the 2 largest functions" in limited.notes[0]


def test_an_unknown_order_is_refused():
    a = np.ones((3, 3)) / 3
    with pytest.raises(ValueError, match="order must be self or total"):
        compare(NAMES, a, a, a, a, order="sideways")
