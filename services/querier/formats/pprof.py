"""Render a merged call tree as a gzip-compressed pprof profile.

Each function name becomes one function and one location; each tree node with a self value becomes
one sample whose stack is the node's path (leaf first). Unlike the JSON formats this one carries the
profile type (pprof names its sample type) and is never truncated. Stacks are built by walking all
sample nodes up the tree together, one level per round.
"""

from __future__ import annotations

import numpy as np

from flamewatch.pprof.encode import encode
from flamewatch.pprof.model import Functions, Locations, Mappings, Profile, Samples
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier.calltree import CallTree, as_int


def render_pprof(tree: CallTree, profile_type: ProfileType, period: int = 0) -> bytes:
    values = as_int(tree.self_value)
    leaves = np.flatnonzero(values != 0)  # the root's own value is a sample with an empty stack
    names = np.asarray(tree.names, dtype=object)
    strings = np.concatenate([np.array(["", profile_type.sample_type, profile_type.sample_unit,
                                        profile_type.period_type, profile_type.period_unit], object), names])
    n_names = len(names)
    function_ids = np.arange(1, n_names + 1, dtype=np.uint64)
    owner, location = _stacks(tree.parent, tree.name, leaves)
    offsets = np.zeros(len(leaves) + 1, np.int64)
    np.cumsum(np.bincount(owner, minlength=len(leaves)), out=offsets[1:])
    empty = np.zeros(0, np.int64)
    profile = Profile(
        strings=strings,
        sample_types=np.array([[1, 2]], np.int64),
        samples=Samples(offsets, (location + 1).astype(np.uint64), values[leaves].reshape(-1, 1),
                        empty, empty, empty, empty, empty),
        locations=Locations(function_ids, np.zeros(n_names, np.uint64), np.zeros(n_names, np.uint64),
                            np.zeros(n_names, bool), np.arange(n_names + 1, dtype=np.int64), function_ids,
                            np.zeros(n_names, np.int64), np.zeros(n_names, np.int64)),
        functions=Functions(function_ids, np.arange(5, 5 + n_names, dtype=np.int64), np.arange(5, 5 + n_names),
                            np.zeros(n_names, np.int64), np.zeros(n_names, np.int64)),
        mappings=Mappings(*([np.zeros(0, np.uint64)] * 4), empty, empty, *([np.zeros(0, bool)] * 4)),
        period_type=(3, 4),
        period=period,
    )
    return encode(profile)


def _stacks(parent: np.ndarray, name: np.ndarray, leaves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sample, name index) pairs, grouped by sample, leaf first."""
    owners, frames, rounds = [], [], []
    below_root = leaves > 0
    current, sample = leaves[below_root], np.flatnonzero(below_root)
    step = 0
    while len(current):
        owners.append(sample)
        frames.append(name[current])
        rounds.append(np.full(len(current), step))
        up = parent[current]
        live = up > 0  # stop below the root, which is not a frame
        current, sample = up[live], sample[live]
        step += 1
    if not owners:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    owner, frame, order = np.concatenate(owners), np.concatenate(frames), np.concatenate(rounds)
    sort = np.lexsort((order, owner))
    return owner[sort], frame[sort]
