"""Path ids of stack trees whose frames stand for runs of names: a symbolized address with inlined
functions is several levels of the call tree (`PathIndex.map_tree_runs`)."""

import numpy as np

from flamewatch.querier.paths import PathIndex
from flamewatch.storage.frames import forest_depths


def test_runs_of_one_name_give_the_paths_of_map_tree():
    rng = np.random.default_rng(3)
    n = 400
    parent = np.concatenate([[-1], [rng.integers(0, i) for i in range(1, n)]]).astype(np.int64)
    frames = np.concatenate([[0], rng.integers(0, 30, n - 1)]).astype(np.int64)
    names = np.array([f"fn{i}" for i in range(30)], object)
    depth = forest_depths(parent)
    plain = PathIndex().map_tree(parent, depth, frames, names)
    runs = PathIndex().map_tree_runs(parent, depth, frames, np.arange(31, dtype=np.int64), names)
    assert runs.tolist() == plain.tolist()


def test_a_frame_with_inlined_functions_becomes_one_level_per_function():
    paths = PathIndex()
    # total → main (frame 0) → hash_loop+mix (frame 1, outermost first); and total → main → mix alone (frame 2)
    offsets = np.array([0, 1, 3, 4])
    names = np.array(["main", "hash_loop", "mix", "mix"], object)
    parent = np.array([-1, 0, 1, 1])
    node_frames = np.array([0, 0, 1, 2])
    ids = paths.map_tree_runs(parent, forest_depths(parent), node_frames, offsets, names)
    values = np.zeros(len(paths), np.int64)
    values[ids[2]] += 5
    values[ids[3]] += 7
    tree = paths.tree(values)
    named = {i: str(tree.names[tree.name[i]]) for i in range(len(tree))}
    edges = sorted((named[int(p)] if p >= 0 else "", named[i], int(tree.self_value[i]))
                   for i, p in enumerate(tree.parent.tolist()))
    assert edges == [("", "total", 0), ("hash_loop", "mix", 5), ("main", "hash_loop", 0), ("main", "mix", 7),
                     ("total", "main", 0)]
