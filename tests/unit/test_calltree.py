"""Call-tree merging, totals and truncation: hand-built trees, and random trees against dict references."""

import numpy as np
import pytest

from flamewatch.querier.calltree import (
    CallTree,
    align_trees,
    depths,
    totals,
    truncate,
)


def make_tree(rows: list[tuple[int, str, float]]) -> CallTree:
    """A CallTree from (parent, name, self) rows, node 0 first."""
    names = np.array(sorted({name for _, name, _ in rows}), dtype=object)
    return CallTree(
        names=names,
        parent=np.array([p for p, _, _ in rows], np.int64),
        name=np.searchsorted(names, [n for _, n, _ in rows]).astype(np.int64),
        self_value=np.array([v for _, _, v in rows]),
    )


def merge_trees(trees: list[CallTree]) -> CallTree:
    """The trees merged by path, as a diff merges its two sides (the sum of `align_trees`' columns)."""
    return align_trees(trees)[0]


def rows_of(tree: CallTree) -> list[tuple[int, str, int]]:
    return list(zip(tree.parent.tolist(), tree.names[tree.name].tolist(), tree.self_value.tolist(), strict=True))


# total -> main -> {parse, compute -> sqrt}; total -> gc
SIX = [(-1, "total", 0), (0, "main", 1), (0, "gc", 5), (1, "parse", 3), (1, "compute", 4), (4, "sqrt", 2)]


def test_depths_and_totals():
    tree = make_tree(SIX)
    assert depths(tree).tolist() == [0, 1, 1, 2, 2, 3]
    assert totals(tree).tolist() == [15, 10, 5, 3, 6, 2]


def test_merge_overlapping_and_disjoint_paths():
    left = make_tree([(-1, "?", 0), (0, "main", 1), (1, "work", 2), (1, "io", 3)])
    right = make_tree([(-1, "ignored", 1), (0, "main", 0), (1, "work", 5), (0, "gc", 7), (2, "sweep", 0)])
    merged = merge_trees([left, right])
    # Ids grow level by level; siblings in name order. "sweep" has no value and is dropped.
    assert rows_of(merged) == [
        (-1, "total", 1),
        (0, "gc", 7),
        (0, "main", 1),
        (2, "io", 3),
        (2, "work", 7),
    ]
    assert merged.names.tolist() == ["?", "gc", "ignored", "io", "main", "sweep", "total", "work"]  # sorted


def test_merge_joins_siblings_with_the_same_name_within_one_part():
    part = make_tree([(-1, "", 0), (0, "f", 1), (0, "f", 2), (1, "g", 3), (2, "g", 4)])
    assert rows_of(merge_trees([part])) == [(-1, "total", 0), (0, "f", 3), (1, "g", 7)]


def test_merge_keeps_zero_self_ancestors_of_values():
    part = make_tree([(-1, "", 0), (0, "a", 0), (1, "b", 0), (2, "c", 9), (0, "idle", 0)])
    assert rows_of(merge_trees([part])) == [(-1, "total", 0), (0, "a", 0), (1, "b", 0), (2, "c", 9)]


def test_merge_of_nothing_is_an_empty_root():
    assert rows_of(merge_trees([])) == [(-1, "total", 0)]


def test_merge_keeps_float_gauges_as_float():
    part = make_tree([(-1, "", 0.0), (0, "f", 2.5)])
    merged = merge_trees([part, make_tree([(-1, "", 0), (0, "f", 1)])])
    assert merged.self_value.dtype == np.float64
    assert merged.self_value.tolist() == [0.0, 3.5]


def test_align_trees_gives_one_column_per_tree():
    left = make_tree([(-1, "total", 0), (0, "a", 1), (0, "b", 2)])
    right = make_tree([(-1, "total", 0), (0, "b", 5), (0, "c", 7)])
    union, columns = align_trees([left, right])
    assert union.names[union.name].tolist() == ["total", "a", "b", "c"]
    assert columns.tolist() == [[0, 0], [1, 0], [2, 5], [0, 7]]
    assert union.self_value.tolist() == [0, 1, 7, 7]


def test_truncate_folds_dropped_children_into_other():
    tree = make_tree(SIX)
    small = truncate(tree, 5)
    # Ranked: total 15, main 10, compute 6, gc 5, parse 3, sqrt 2. Keeping total and main needs an
    # "other" under each (gc; parse and compute): 4 nodes. Adding compute would need a third: 6 nodes.
    assert rows_of(small) == [(-1, "total", 0), (0, "main", 1), (0, "other", 5), (1, "other", 9)]
    assert totals(small).tolist() == [15, 10, 5, 9]


def test_truncate_keeps_the_tree_when_it_fits():
    tree = make_tree(SIX)
    assert truncate(tree, 6) is tree
    assert rows_of(truncate(tree, 7)) == SIX


def test_truncate_to_one_node_keeps_root_and_other():
    small = truncate(make_tree(SIX), 1)
    assert rows_of(small) == [(-1, "total", 0), (0, "other", 15)]


def test_truncate_breaks_ties_by_id():
    tree = make_tree([(-1, "total", 0), (0, "c", 3), (0, "a", 3), (0, "b", 3)])
    assert rows_of(truncate(tree, 3)) == [(-1, "total", 0), (0, "c", 3), (0, "other", 6)]


# A comparison (`go tool pprof -diff_base`): total -> a (-10) -> {b (+3), d (-1)}; total -> {c (+4), e (+1)}.
SIGNED = [(-1, "total", 0), (0, "a", -10), (0, "c", 4), (0, "e", 1), (1, "b", 3), (1, "d", -1)]


def test_truncate_ranks_signed_values_by_weight_and_keeps_exact_totals():
    tree = make_tree(SIGNED)
    assert totals(tree).tolist() == [-3, -8, 4, 1, 3, -1]
    # Weights (absolute values summed): total 19, a 14, c 4, b 3, then d and e. By signed totals c, b
    # and e would outrank the root and a, and b would be kept without its parent.
    small = truncate(tree, 5)
    assert rows_of(small) == [(-1, "total", 0), (0, "a", -10), (0, "c", 4), (0, "other", 1), (1, "other", 2)]
    assert totals(small).tolist() == [-3, -8, 4, 1, 2]
    assert rows_of(truncate(tree, 1)) == [(-1, "total", 0), (0, "other", -3)]


def test_truncate_rejects_a_non_positive_limit():
    with pytest.raises(ValueError, match="max_nodes must be at least 1"):
        truncate(make_tree(SIX), 0)


# --- random trees against plain-dict references ---------------------------------------------------------


def random_part(rng: np.random.Generator, n: int, vocabulary: int, signed: bool = False) -> CallTree:
    # Parents close to the child make deep stacks; some far parents make bushy ones.
    near = np.maximum(np.arange(n) - rng.integers(1, 8, n), 0)
    far = (rng.random(n) * np.arange(n)).astype(np.int64)
    parent = np.where(rng.random(n) < 0.8, near, far)
    parent[0] = -1
    key = np.array([f"fn{i}" for i in rng.integers(0, vocabulary, n)], dtype=object)
    value = np.where(rng.random(n) < 0.4, 0, rng.integers(-1000 if signed else 1, 1000, n))
    names, name = np.unique(key, return_inverse=True)
    return CallTree(names, parent, name, value)


def reference_paths(parts: list[CallTree]) -> dict[tuple[str, ...], int]:
    """Path -> summed self value, including zero-valued paths, with a plain loop."""
    result: dict[tuple[str, ...], int] = {}
    for part in parts:
        paths: list[tuple[str, ...]] = []
        for i, p in enumerate(part.parent.tolist()):
            paths.append(() if p < 0 else paths[p] + (part.names[part.name[i]],))
            result[paths[i]] = result.get(paths[i], 0) + int(part.self_value[i])
    return result


def reference_totals(paths: dict[tuple[str, ...], int]) -> dict[tuple[str, ...], int]:
    result = dict.fromkeys(paths, 0)
    for path, value in paths.items():
        for depth in range(len(path) + 1):
            result[path[:depth]] += value
    return result


def tree_paths(tree: CallTree, values: np.ndarray) -> dict[tuple[str, ...], int]:
    paths: list[tuple[str, ...]] = []
    for i, p in enumerate(tree.parent.tolist()):
        paths.append(() if p < 0 else paths[p] + (str(tree.names[tree.name[i]]),))
    assert len(set(paths)) == len(paths), "a path occurs twice"
    return dict(zip(paths, values.tolist(), strict=True))


@pytest.mark.parametrize("seed", range(5))
def test_merge_matches_reference(seed):
    rng = np.random.default_rng(seed)
    parts = [random_part(rng, int(rng.integers(1, 4000)), 40) for _ in range(int(rng.integers(1, 6)))]
    merged = merge_trees(parts)
    expected_totals = reference_totals(reference_paths(parts))
    expected = {path: value for path, value in reference_paths(parts).items() if expected_totals[path] > 0}
    expected[()] = reference_paths(parts)[()]
    assert tree_paths(merged, merged.self_value) == expected
    assert tree_paths(merged, totals(merged)) == {path: expected_totals[path] for path in expected}
    assert (merged.parent[1:] < np.arange(1, len(merged))).all()
    assert merged.names.tolist() == sorted(set(merged.names.tolist()))


@pytest.mark.parametrize("seed", range(5))
def test_truncate_matches_reference(seed):
    rng = np.random.default_rng(100 + seed)
    tree = merge_trees([random_part(rng, 3000, 25) for _ in range(3)])
    full_totals = tree_paths(tree, totals(tree))
    for max_nodes in (1, 2, 7, 50, 400, len(tree) - 1):
        small = truncate(tree, max_nodes)
        kept = tree_paths(small, totals(small))
        assert len(small) <= max(max_nodes, 2)
        assert kept[()] == full_totals[()]
        real = {path: value for path, value in kept.items() if path[-1:] != ("other",)}
        assert real == {path: full_totals[path] for path in real}
        assert real.keys() == set(reference_kept(tree, max_nodes))


@pytest.mark.parametrize("seed", range(3))
def test_truncate_of_signed_values_matches_reference(seed):
    rng = np.random.default_rng(200 + seed)
    tree = merge_trees([random_part(rng, 2000, 25, signed=True) for _ in range(3)])
    full_totals = tree_paths(tree, totals(tree))
    for max_nodes in (1, 2, 5, 7, 50, 400, len(tree) - 1):
        small = truncate(tree, max_nodes)
        kept = tree_paths(small, totals(small))
        assert len(small) <= max(max_nodes, 2)
        assert kept[()] == full_totals[()]
        real = {path: value for path, value in kept.items() if path[-1:] != ("other",)}
        assert real == {path: full_totals[path] for path in real}
        assert real.keys() == set(reference_kept(tree, max_nodes))


def reference_kept(tree: CallTree, max_nodes: int) -> list[tuple[str, ...]]:
    """The longest prefix of nodes by (weight desc, depth, id) that fits with its "other" nodes; a
    node's weight is the sum of the absolute self values in its subtree."""
    weight = make_weights(tree)
    total, depth = weight.tolist(), depths(tree).tolist()
    ranked = sorted(range(len(tree)), key=lambda i: (-total[i], depth[i], i))
    missing = [0] * len(tree)  # children not kept yet, per node
    for p in tree.parent.tolist()[1:]:
        missing[p] += 1
    parent = tree.parent.tolist()
    best, others = 0, 0
    for k, node in enumerate(ranked, start=1):
        others += missing[node] > 0
        if parent[node] >= 0:
            missing[parent[node]] -= 1
            others -= missing[parent[node]] == 0
        if k + others > max_nodes:
            break
        best = k
    best = max(best, 1)
    paths = list(tree_paths(tree, np.zeros(len(tree))))
    return [paths[i] for i in ranked[:best]]


def make_weights(tree: CallTree) -> np.ndarray:
    paths = list(tree_paths(tree, np.zeros(len(tree))))
    weight = dict.fromkeys(paths, 0)
    for path, value in zip(paths, np.abs(tree.self_value).tolist(), strict=True):
        for depth in range(len(path) + 1):
            weight[path[:depth]] += value
    return np.array([weight[path] for path in paths])
