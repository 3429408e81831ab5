"""Call-tree figures that used to be printed by unit tests: a diff's path alignment and a flamegraph render.

Random trees shaped like real stacks (mostly deep, some bushy); prints the best of a few runs of each.

    .venv/bin/python bench/calltree.py [--nodes N] [--repeat R]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from flamewatch.querier.calltree import CallTree, align_trees
from flamewatch.querier.formats.flamegraph import render_flamegraph


def random_tree(rng: np.random.Generator, n: int, vocabulary: int) -> CallTree:
    near = np.maximum(np.arange(n) - rng.integers(1, 8, n), 0)
    parent = np.where(rng.random(n) < 0.8, near, (rng.random(n) * np.arange(n)).astype(np.int64))
    parent[0] = -1
    names, name = np.unique(np.array([f"fn{i}" for i in rng.integers(0, vocabulary, n)], dtype=object),
                            return_inverse=True)
    value = np.where(rng.random(n) < 0.4, 0, rng.integers(1, 1000, n))
    return CallTree(names, parent, name, value)


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=200_000, help="nodes of each side of the diff")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    left, right = random_tree(rng, args.nodes, 2000), random_tree(rng, args.nodes, 2000)
    union = align_trees([left, right])[0]
    seconds = best_of(args.repeat, lambda: align_trees([left, right]))
    print(f"align_trees 2 x {args.nodes} nodes -> {len(union)} nodes: {seconds:.3f} s")
    tree = align_trees([random_tree(rng, 60_000, 5000)])[0]
    seconds = best_of(args.repeat, lambda: render_flamegraph(tree, len(tree)))
    print(f"render_flamegraph {len(tree)} nodes: {seconds:.3f} s")


if __name__ == "__main__":
    main()
