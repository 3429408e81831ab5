"""The stack tree a flush's stacks become (`build_stack_tree`, built by the pprof reader's extension):
against a trie made the plain way, node for node, and its refusals of input out of range."""

import numpy as np
import pytest

from flamewatch.storage.frames import build_stack_tree


def reference(stacks: list[list[int]]) -> tuple[list[int], list[int], list[int]]:
    """The tree in its documented order: root, then each depth, a depth's nodes by (parent, frame)."""
    paths = {tuple(reversed(s[len(s) - d:])) for s in stacks for d in range(1, len(s) + 1)}
    number = {(): 0}
    parent, frame = [-1], [-1]
    for depth in range(1, max(map(len, paths), default=0) + 1):
        level = sorted((number[p[:-1]], p[-1], p) for p in paths if len(p) == depth)
        for up, f, path in level:
            number[path] = len(parent)
            parent.append(up)
            frame.append(f)
    return parent, frame, [number[tuple(reversed(s))] for s in stacks]


@pytest.mark.parametrize("seed", range(5))
def test_random_stacks_give_the_tree_made_the_plain_way(seed):
    rng = np.random.default_rng(seed)
    n_frames = int(rng.integers(1, 40))
    # Stacks that share prefixes (each a walk down a small random program) and some repeated exactly.
    stacks = [rng.integers(0, n_frames, int(rng.integers(0, 12))).tolist() for _ in range(300)]
    stacks += [stacks[int(i)] for i in rng.integers(0, len(stacks), 100)]
    stacks += [s[int(rng.integers(0, len(s))):] for s in stacks[:100] if s]  # their callers' stacks
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in stacks])]).astype(np.int64)
    frames = np.array([f for s in stacks for f in s], np.int64)
    tree = build_stack_tree(offsets, frames, n_frames)
    assert (tree.parent.tolist(), tree.frame.tolist(), tree.leaf.tolist()) == reference(stacks)


def test_no_stacks_is_the_root_alone():
    tree = build_stack_tree(np.zeros(1, np.int64), np.zeros(0, np.int64), 0)
    assert (tree.parent.tolist(), tree.frame.tolist(), tree.leaf.tolist()) == ([-1], [-1], [])


def test_arrays_of_other_types_and_strides_are_taken():
    frames = np.array([2, 9, 1, 9, 0, 9], np.int32)[::2]  # not int64, not contiguous
    tree = build_stack_tree(np.array([0, 3], np.uint32), frames, 3)
    assert tree.frame.tolist() == [-1, 0, 1, 2] and tree.leaf.tolist() == [3]


@pytest.mark.parametrize(("offsets", "frames", "message"), [
    ([0, 1], [4], "frame 4 is outside [0, 4)"),  # frames up to n_frames are keys of the tree
    ([0, 1], [-1], "frame -1 is outside [0, 4)"),
    ([0, 2], [1], "offsets end at 2 but there are 1 frames"),
    ([1, 0], [1], "offsets decrease at stack 0"),
])
def test_input_out_of_range_is_refused_with_what_is_wrong(offsets, frames, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        build_stack_tree(np.array(offsets, np.int64), np.array(frames, np.int64), 3)


@pytest.mark.parametrize("seed", range(5))
def test_stacks_of_locations_give_the_tree_of_their_expanded_frames(seed):
    """A flush's stacks are walked as locations, each standing for its run of frames (a location's
    lines, innermost first); the tree is the one of the stacks expanded into frames."""
    rng = np.random.default_rng(seed)
    count = rng.integers(1, 4, int(rng.integers(1, 30)))  # lines per location
    first = np.cumsum(count) - count
    n_frames = int(count.sum())
    stacks = [rng.integers(0, len(count), int(rng.integers(0, 10))).tolist() for _ in range(200)]
    stacks += [s[int(rng.integers(0, len(s))):] for s in stacks[:80] if s]
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in stacks])]).astype(np.int64)
    locations = np.array([x for s in stacks for x in s], np.int64)
    tree = build_stack_tree(offsets, locations, n_frames, runs=(first, count))
    expanded = [[int(first[x]) + j for x in s for j in range(int(count[x]))] for s in stacks]
    assert (tree.parent.tolist(), tree.frame.tolist(), tree.leaf.tolist()) == reference(expanded)


@pytest.mark.parametrize(("first", "count", "locations", "message"), [
    ([0, 3], [2, 2], [1], "location 1's frames 3+2 are outside [0, 4)"),  # frames up to n_frames are keys
    ([0, 1], [1, 0], [0], "location 1's frames 1+0 are outside [0, 4)"),  # a location has at least one frame
    ([0, 1], [1, 1], [2], "location 2 is outside [0, 2)"),
    ([0, 1], [1], [0], "2 run starts but 1 run lengths"),
])
def test_locations_out_of_range_are_refused_with_what_is_wrong(first, count, locations, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
                       .replace("+", r"\+")):
        build_stack_tree(np.array([0, len(locations)], np.int64), np.array(locations, np.int64), 3,
                         runs=(np.array(first, np.int64), np.array(count, np.int64)))
