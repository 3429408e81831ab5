"""Output formats: literal expected outputs for small trees and random trees against plain-Python layouts."""

import numpy as np
import pytest

from flamewatch.querier.calltree import (
    CallTree,
    align_trees,
    totals,
    truncate,
    truncate_columns,
)
from flamewatch.querier.formats import (
    DIFF_RENDERERS,
    RENDERERS,
    diff_renderer,
    renderer,
)
from flamewatch.querier.formats.diff import render_diff
from flamewatch.querier.formats.flamegraph import render_flamegraph
from flamewatch.querier.formats.top import render_top
from flamewatch.querier.formats.tree import render_tree


def make_tree(rows: list[tuple[int, str, float]]) -> CallTree:
    """A CallTree from (parent, name, self) rows, node 0 first; the name table is deliberately unsorted."""
    names = np.array(list(dict.fromkeys(name for _, name, _ in rows)), dtype=object)
    index = {name: i for i, name in enumerate(names)}
    return CallTree(
        names=names,
        parent=np.array([p for p, _, _ in rows], np.int64),
        name=np.array([index[n] for _, n, _ in rows], np.int64),
        self_value=np.array([v for _, _, v in rows]),
    )


# total -> main -> {parse, compute -> sqrt}; total -> gc
SIX = [(-1, "total", 0), (0, "main", 1), (0, "gc", 5), (1, "parse", 3), (1, "compute", 4), (4, "sqrt", 2)]


def test_flamegraph_golden_six_nodes():
    assert render_flamegraph(make_tree(SIX), 100) == {
        "names": ["compute", "gc", "main", "parse", "sqrt", "total"],
        "levels": [
            [0, 15, 0, 5],
            [0, 5, 5, 1, 0, 10, 1, 2],  # gc at 0, main at 5
            [5, 6, 4, 0, 0, 3, 3, 3],  # compute at 5, parse at 11
            [5, 2, 2, 4],  # sqrt at 5
        ],
        "total": 15,
        "max_self": 5,
    }


def test_flamegraph_truncated_folds_into_other():
    assert render_flamegraph(make_tree(SIX), 4) == {
        "names": ["main", "other", "total"],
        "levels": [[0, 15, 0, 2], [0, 10, 1, 0, 0, 5, 5, 1], [0, 9, 9, 1]],
        "total": 15,
        "max_self": 9,
    }


def test_flamegraph_gaps_between_parents_show_in_x_delta():
    tree = make_tree([(-1, "total", 0), (0, "a", 2), (0, "b", 3), (1, "x", 1), (2, "y", 1)])
    # a spans [0, 3), b spans [3, 7); x at 0 ends at 1, y at 3: delta 2.
    assert render_flamegraph(tree, 100)["levels"] == [
        [0, 7, 0, 2],
        [0, 3, 2, 0, 0, 4, 3, 1],
        [0, 1, 1, 3, 2, 1, 1, 4],
    ]


def test_flamegraph_rounds_float_gauges():
    tree = make_tree([(-1, "total", 0.0), (0, "a", 1.4), (0, "b", 2.6)])
    assert render_flamegraph(tree, 100) == {
        "names": ["a", "b", "total"],
        "levels": [[0, 4, 0, 2], [0, 1, 1, 0, 0, 3, 3, 1]],
        "total": 4,
        "max_self": 3,
    }


def test_top_counts_recursion_once():
    # total -> a -> b -> a -> c ; total -> c
    tree = make_tree([(-1, "total", 0), (0, "a", 1), (1, "b", 2), (2, "a", 3), (3, "c", 4), (0, "c", 4)])
    assert render_top(tree, 100) == {
        "total": 14,
        "entries": [
            {"name": "c", "self": 8, "total": 8},
            {"name": "a", "self": 4, "total": 10},
            {"name": "b", "self": 2, "total": 9},
        ],
    }


def test_top_limits_rows_and_sorts_ties_by_name():
    tree = make_tree([(-1, "total", 0), (0, "b", 1), (0, "a", 1), (0, "c", 5)])
    assert render_top(tree, 2)["entries"] == [
        {"name": "c", "self": 5, "total": 5},
        {"name": "a", "self": 1, "total": 1},
    ]


# A comparison: improvements are negative. total -> main (+1) -> {fast (-9), slow (+4)}; total -> gc (-2)
SIGNED = [(-1, "total", 0), (0, "main", 1), (1, "fast", -9), (1, "slow", 4), (0, "gc", -2)]


def test_top_ranks_by_absolute_value():
    assert render_top(make_tree(SIGNED), 3) == {"total": -6, "entries": [
        {"name": "fast", "self": -9, "total": -9},
        {"name": "slow", "self": 4, "total": 4},
        {"name": "gc", "self": -2, "total": -2},
    ]}


def test_tree_orders_children_by_absolute_total_and_keeps_signed_totals():
    tree = render_tree(make_tree(SIGNED), 4)
    assert (tree["name"], tree["total"]) == ("total", -6)
    assert [(c["name"], c["total"]) for c in tree["children"]] == [("main", -4), ("other", -2)]
    assert [(c["name"], c["total"]) for c in tree["children"][0]["children"]] == [("other", -5)]


def test_flamegraph_of_signed_values_keeps_the_total_and_names_the_largest_self():
    assert [(g["total"], g["max_self"]) for g in (render_flamegraph(make_tree(SIGNED), n) for n in (4, 100))] \
        == [(-6, 5), (-6, 9)]


def test_top_does_not_treat_the_root_as_a_namesake():
    tree = make_tree([(-1, "total", 0), (0, "total", 3)])
    assert render_top(tree, 10)["entries"] == [{"name": "total", "self": 3, "total": 3}]


def test_tree_nests_children_by_total():
    assert render_tree(make_tree(SIX), 100) == {
        "name": "total",
        "self": 0,
        "total": 15,
        "children": [
            {
                "name": "main",
                "self": 1,
                "total": 10,
                "children": [
                    {
                        "name": "compute",
                        "self": 4,
                        "total": 6,
                        "children": [{"name": "sqrt", "self": 2, "total": 2, "children": []}],
                    },
                    {"name": "parse", "self": 3, "total": 3, "children": []},
                ],
            },
            {"name": "gc", "self": 5, "total": 5, "children": []},
        ],
    }


def test_tree_truncated():
    assert render_tree(make_tree(SIX), 2) == {
        "name": "total",
        "self": 0,
        "total": 15,
        "children": [{"name": "other", "self": 15, "total": 15, "children": []}],
    }


def test_diff_aligns_paths_of_both_sides():
    left = make_tree([(-1, "total", 0), (0, "main", 1), (1, "old", 4), (0, "gc", 2)])
    right = make_tree([(-1, "total", 0), (0, "main", 2), (1, "new", 6)])
    assert render_diff(left, right, 100) == {
        "names": ["gc", "main", "new", "old", "total"],
        "levels": [
            [0, 7, 0, 0, 8, 0, 4],
            # gc: left [0, 2), right empty at 0; main: left [2, 7), right [0, 8)
            [0, 2, 2, 0, 0, 0, 0, 0, 5, 1, 0, 8, 2, 1],
            # new: left empty at 2, right [0, 6); old: left [2, 6), right empty at 6
            [2, 0, 0, 0, 6, 6, 2, 0, 4, 4, 0, 0, 0, 3],
        ],
        "total": 15,
        "max_self": 6,
        "left_ticks": 7,
        "right_ticks": 8,
    }


def test_diff_truncates_by_both_sides():
    left = make_tree([(-1, "total", 0), (0, "a", 10), (0, "b", 1)])
    right = make_tree([(-1, "total", 0), (0, "b", 1), (0, "c", 10)])
    # Ranked by left + right: a 10, c 10, b 2; a with an "other" for b and c fits into 3 nodes.
    diff = render_diff(left, right, 3)
    assert diff["names"] == ["a", "other", "total"]
    assert diff["levels"] == [[0, 11, 0, 0, 11, 0, 2], [0, 10, 10, 0, 0, 0, 0, 0, 1, 1, 0, 11, 11, 1]]


def test_registry_lists_the_formats_and_names_unknown_ones():
    assert sorted(RENDERERS) == ["flamegraph", "top", "tree"]
    assert sorted(DIFF_RENDERERS) == ["diff"]
    assert renderer("flamegraph") is render_flamegraph
    assert diff_renderer("diff") is render_diff
    with pytest.raises(ValueError, match="unknown format 'svg'; known formats: flamegraph, top, tree"):
        renderer("svg")


# --- random trees against plain-Python layouts ---------------------------------------------------------


def random_tree(seed: int, n: int = 3000, vocabulary: int = 30) -> CallTree:
    rng = np.random.default_rng(seed)
    near = np.maximum(np.arange(n) - rng.integers(1, 8, n), 0)
    parent = np.where(rng.random(n) < 0.8, near, (rng.random(n) * np.arange(n)).astype(np.int64))
    parent[0] = -1
    key = np.array([f"fn{i}" for i in rng.integers(0, vocabulary, n)], dtype=object)
    value = np.where(rng.random(n) < 0.4, 0, rng.integers(1, 1000, n))
    names, name = np.unique(key, return_inverse=True)
    return align_trees([CallTree(names, parent, name, value)])[0]


def reference_flamegraph(tree: CallTree) -> list[list[int]]:
    """Depth-first layout with Python lists: children in name order from the parent's left edge."""
    total = totals(tree).tolist()
    names = tree.names[tree.name].tolist()
    children: dict[int, list[int]] = {}
    for i, p in enumerate(tree.parent.tolist()):
        children.setdefault(p, []).append(i)
    placed: dict[int, list[tuple[int, int]]] = {}  # depth -> [(x, node)], left to right
    stack = [(0, 0, 0)]
    while stack:  # depth first, so each level fills left to right even where widths are zero
        node, x, depth = stack.pop()
        placed.setdefault(depth, []).append((x, node))
        laid_out = []
        for child in sorted(children.get(node, []), key=lambda c: names[c]):
            laid_out.append((child, x, depth + 1))
            x += total[child]
        stack.extend(reversed(laid_out))
    used = sorted(set(names))
    levels = []
    for depth in range(len(placed)):
        row, end = [], 0
        for x, node in placed[depth]:
            row += [x - end, total[node], int(tree.self_value[node]), used.index(names[node])]
            end = x + total[node]
        levels.append(row)
    return levels


@pytest.mark.parametrize("seed", range(4))
def test_flamegraph_matches_reference(seed):
    tree = random_tree(seed)
    for max_nodes in (len(tree), 300, 20):
        assert render_flamegraph(tree, max_nodes)["levels"] == reference_flamegraph(truncate(tree, max_nodes))


def reference_top(tree: CallTree) -> dict[str, tuple[int, int]]:
    names = tree.names[tree.name].tolist()
    parent = tree.parent.tolist()
    total = totals(tree).tolist()
    result: dict[str, tuple[int, int]] = {}
    for node in range(1, len(tree)):
        ancestors, p = set(), parent[node]
        while p > 0:
            ancestors.add(names[p])
            p = parent[p]
        self_sum, total_sum = result.get(names[node], (0, 0))
        outermost = names[node] not in ancestors
        result[names[node]] = (self_sum + int(tree.self_value[node]), total_sum + total[node] * outermost)
    return result


@pytest.mark.parametrize("seed", range(4))
def test_top_matches_reference(seed):
    tree = random_tree(seed, vocabulary=8)  # few names: plenty of recursion
    expected = reference_top(tree)
    rows = sorted(expected.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
    entries = [{"name": name, "self": s, "total": t} for name, (s, t) in rows]
    assert render_top(tree, 1000)["entries"] == entries
    assert render_top(tree, 3)["entries"] == entries[:3]


@pytest.mark.parametrize("seed", range(3))
def test_diff_sides_match_flamegraphs_of_the_union(seed):
    left, right = random_tree(seed), random_tree(seed + 50)
    union, columns = align_trees([left, right])
    for max_nodes in (10**6, 200):
        diff = render_diff(left, right, max_nodes)
        small, small_columns = truncate_columns(union, columns, max_nodes)
        for side in (0, 1):
            one_side = CallTree(small.names, small.parent, small.name, small_columns[:, side])
            expected = [np.reshape(row, (-1, 4)) for row in reference_flamegraph(one_side)]
            got = [np.reshape(row, (-1, 7))[:, [3 * side, 3 * side + 1, 3 * side + 2, 6]] for row in diff["levels"]]
            assert [g.tolist() for g in got] == [e.tolist() for e in expected]
    assert diff["left_ticks"] == int(totals(left)[0])
    assert diff["right_ticks"] == int(totals(right)[0])
    assert diff["total"] == diff["left_ticks"] + diff["right_ticks"]
