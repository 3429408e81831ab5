"""The querier's path index: block trees mapped to shared path ids, merges read off by path."""

import numpy as np
import pytest

from flamewatch.querier.calltree import CallTree, align_trees
from flamewatch.querier.formats.flamegraph import render_flamegraph
from flamewatch.querier.paths import PathIndex
from flamewatch.storage.frames import forest_depths


def block_tree(rng: np.random.Generator, n: int, vocabulary: int):
    """A random stack tree whose nodes index a small, shuffled name table (as a block's locations do)."""
    parent = np.concatenate([[-1], [rng.integers(0, i) for i in range(1, n)]]).astype(np.int64)
    names = np.array([f"fn{i}" for i in rng.permutation(vocabulary)], object)
    node_name = np.concatenate([[-1], rng.integers(0, vocabulary, n - 1)])
    values = np.where(rng.random(n) < 0.4, rng.integers(1, 1000, n), 0)
    return parent, node_name, names, values


def merge_by_paths(blocks) -> dict:
    paths = PathIndex()
    mapped = [paths.map_tree(p, forest_depths(p), k, names) for p, k, names, _ in blocks]
    merged = np.zeros(len(paths), np.int64)
    for (_, _, _, values), path in zip(blocks, mapped):
        np.add.at(merged, path, values)
    return render_flamegraph(paths.tree(merged), 10**6)


def test_two_blocks_share_the_paths_they_have_in_common():
    paths = PathIndex()
    # block 1: total → a → b ; block 2: total → a → c, names listed in another order
    first = paths.map_tree(np.array([-1, 0, 1]), np.array([0, 1, 2]), np.array([-1, 0, 1]),
                           np.array(["a", "b"], object))
    second = paths.map_tree(np.array([-1, 0, 1]), np.array([0, 1, 2]), np.array([-1, 1, 0]),
                            np.array(["c", "a"], object))
    assert first.tolist() == [0, 1, 2]
    assert second.tolist() == [0, 1, 3]
    values = np.zeros(len(paths), np.int64)
    values[[2, 3]] = [5, 7]
    tree = paths.tree(values)
    assert [tree.names[i] for i in tree.name] == ["total", "a", "b", "c"]
    assert tree.parent.tolist() == [-1, 0, 1, 1]
    assert tree.self_value.tolist() == [0, 0, 5, 7]


def test_paths_without_a_value_are_left_out_of_the_tree():
    paths = PathIndex()
    paths.map_tree(np.array([-1, 0, 0]), np.array([0, 1, 1]), np.array([-1, 0, 1]), np.array(["a", "b"], object))
    tree = paths.tree(np.array([0, 0, 4]))
    assert [tree.names[i] for i in tree.name] == ["total", "b"]
    assert tree.self_value.tolist() == [0, 4]


@pytest.mark.parametrize("seed", range(5))
def test_merging_by_paths_equals_merging_trees(seed):
    rng = np.random.default_rng(seed)
    blocks = [block_tree(rng, 2000, 40) for _ in range(6)]
    expected = align_trees([CallTree(names, p, k, v) for p, k, names, v in blocks])[0]
    assert merge_by_paths(blocks) == render_flamegraph(expected, 10**6)
