"""Synthetic CPU profiles shaped like a real service's, for benchmarks.

A fixed "program" of `n_functions` functions yields a pool of call stacks (random walks from a few
entry points, depth 8-48); each profile samples a few thousand of those stacks with skewed weights, so
profiles differ from one another but share most stacks, as consecutive profiles of one process do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flamewatch.pprof.encode import encode
from flamewatch.pprof.model import Functions, Locations, Mappings, Profile, Samples

PERIOD_NS = 10_000_000  # 100 Hz


@dataclass(frozen=True)
class Program:
    names: np.ndarray  # object
    stack_offsets: np.ndarray
    stack_functions: np.ndarray  # leaf first, 1-based function ids


def make_program(n_functions: int = 4000, n_stacks: int = 30_000, seed: int = 7, fanout: int = 5) -> Program:
    """Stacks are random walks down a layered call graph: each function calls `fanout` functions of
    later layers, favouring the first, so stacks share long prefixes as real ones do."""
    rng = np.random.default_rng(seed)
    names = np.array([f"service/pkg{i % 97}.(*Type{i % 13}).Method{i}" for i in range(n_functions)], object)
    callees = np.sort(rng.integers(1, n_functions, (n_functions, fanout)), axis=1)
    callees = np.maximum(callees, np.arange(n_functions)[:, None] + 1) % n_functions  # call "forward"
    preference = np.cumsum(1.0 / np.arange(1, fanout + 1) ** 1.5)
    depth = rng.integers(8, 48, n_stacks)
    walk = np.zeros((n_stacks, int(depth.max())), np.int64)
    walk[:, 0] = rng.integers(0, 4, n_stacks)
    for d in range(1, walk.shape[1]):
        pick = np.searchsorted(preference / preference[-1], rng.random(n_stacks))
        walk[:, d] = callees[walk[:, d - 1], pick]
    walk = walk + 1  # 1-based function ids
    keep = np.arange(walk.shape[1]) < depth[:, None]
    leaf_first = np.where(keep, walk, 0)[:, ::-1]
    functions = leaf_first[leaf_first > 0]
    return Program(names, np.concatenate([[0], np.cumsum(depth)]), functions)


def make_profile(program: Program, seed: int, n_samples: int = 3000, time_ns: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    n_stacks = len(program.stack_offsets) - 1
    weights = 1.0 / np.arange(1, n_stacks + 1) ** 0.9
    chosen = np.unique(rng.choice(n_stacks, n_samples, p=weights / weights.sum()))
    counts = rng.integers(1, 20, len(chosen))
    depth = np.diff(program.stack_offsets)[chosen]
    starts = program.stack_offsets[chosen]
    index = np.repeat(starts - np.cumsum(np.concatenate([[0], depth[:-1]])), depth) + np.arange(depth.sum())
    n_fn = len(program.names)
    ids = np.arange(1, n_fn + 1, dtype=np.uint64)
    empty = np.zeros(0, np.int64)
    strings = np.concatenate([np.array(["", "samples", "count", "cpu", "nanoseconds", "main.go"], object),
                              program.names])
    profile = Profile(
        strings=strings,
        sample_types=np.array([[1, 2], [3, 4]], np.int64),
        samples=Samples(np.concatenate([[0], np.cumsum(depth)]), program.stack_functions[index].astype(np.uint64),
                        np.stack([counts, counts * PERIOD_NS], axis=1), empty, empty, empty, empty, empty),
        locations=Locations(ids, np.zeros(n_fn, np.uint64), ids * np.uint64(64), np.zeros(n_fn, bool),
                            np.arange(n_fn + 1, dtype=np.int64), ids, np.arange(n_fn, dtype=np.int64) % 500 + 1,
                            np.zeros(n_fn, np.int64)),
        functions=Functions(ids, np.arange(6, 6 + n_fn), np.arange(6, 6 + n_fn), np.full(n_fn, 5), np.zeros(n_fn,
                                                                                                        np.int64)),
        mappings=Mappings(*([np.zeros(0, np.uint64)] * 4), empty, empty, *([np.zeros(0, bool)] * 4)),
        period_type=(3, 4),
        period=PERIOD_NS,
        time_nanos=time_ns,
        duration_nanos=10 * 10**9,
    )
    return encode(profile)
