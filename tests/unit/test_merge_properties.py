"""Properties of the querier's merge, on random profiles pushed through the real ingest and block path.

Random sets of pprof profiles (stacks over a small alphabet of functions, values of either sign as a
`go tool pprof -diff_base` comparison has) are prepared as the ingester prepares them, written into
blocks in a filesystem object store and merged by the querier's `merge_blocks`. The references are
plain dicts from stack path to summed value, computed from the generated stacks alone.

- The merge equals the sum of every profile's stacks, per path, for each sample type.
- Truncation at any `max_nodes` keeps the exact total, and every kept node its exact total.
- The comparison of two merges keeps each side's exact total.
"""

import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from infra.querypath import QueryPath

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from flamewatch.querier.calltree import CallTree, totals, truncate
from flamewatch.querier.formats.diff import render_diff
from flamewatch.querier.formats.flamegraph import render_flamegraph
from flamewatch.querier.formats.top import render_top
from flamewatch.querier.formats.tree import render_tree

FUNCTIONS = ["main", "run", "parse", "alloc", "gc"]
SAMPLE_TYPES = [("samples", "count"), ("cpu", "nanoseconds")]
TYPE_IDS = ["process_cpu:samples:count:cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"]

Stack = tuple[str, ...]  # root first
Sample = tuple[Stack, int, int]  # a stack and one value per sample type

stacks = st.lists(st.sampled_from(FUNCTIONS), max_size=6).map(tuple)
samples = st.tuples(stacks, st.integers(0, 1000), st.integers(-10**12, 10**12))
profiles = st.lists(samples, min_size=1, max_size=12)
blocks = st.lists(st.lists(profiles, min_size=1, max_size=3), min_size=1, max_size=3)

PROPERTY_SETTINGS = settings(max_examples=25, deadline=None, database=None,
                             suppress_health_check=[HealthCheck.too_slow])


def pprof_bytes(profile: list[Sample]) -> bytes:
    """A pprof profile with one function and one location per name (id = index + 1)."""
    strings = ["", "process_cpu"] + [s for pair in SAMPLE_TYPES for s in pair] + FUNCTIONS
    ref = pb.Profile(string_table=strings, period=1)
    for kind, unit in SAMPLE_TYPES:
        ref.sample_type.add(type=strings.index(kind), unit=strings.index(unit))
    ref.period_type.type, ref.period_type.unit = strings.index("cpu"), strings.index("nanoseconds")
    for i, name in enumerate(FUNCTIONS, start=1):
        ref.function.add(id=i, name=strings.index(name))
        ref.location.add(id=i).line.add(function_id=i)
    for stack, *values in profile:
        ref.sample.add(location_id=[FUNCTIONS.index(name) + 1 for name in reversed(stack)], value=values)
    return ref.SerializeToString()


def reference_self(stored: list[list[list[Sample]]], column: int) -> dict[Stack, int]:
    """Path -> summed value of the samples whose stack it is: only paths with a non-zero sum, their
    ancestors (with their own sums, possibly zero) and the root."""
    summed: dict[Stack, int] = defaultdict(int)
    for block in stored:
        for profile in block:
            for stack, *values in profile:
                summed[stack] += values[column]
    kept = {(): summed.get((), 0)}
    for stack, value in summed.items():
        if value:
            for depth in range(len(stack) + 1):
                kept[stack[:depth]] = summed.get(stack[:depth], 0)
    return kept


def reference_totals(self_values: dict[Stack, int]) -> dict[Stack, int]:
    result = dict.fromkeys(self_values, 0)
    for stack, value in self_values.items():
        for depth in range(len(stack) + 1):
            result[stack[:depth]] += value
    return result


def by_path(tree: CallTree, values: np.ndarray) -> dict[Stack, int]:
    paths: list[Stack] = []
    for i, p in enumerate(tree.parent.tolist()):
        paths.append(() if p < 0 else paths[p] + (str(tree.names[tree.name[i]]),))
    assert len(set(paths)) == len(paths), "a path occurs twice"
    return dict(zip(paths, values.tolist(), strict=True))


def merged_trees(stored: list[list[list[Sample]]]) -> dict[str, CallTree]:
    with tempfile.TemporaryDirectory() as directory, QueryPath(Path(directory)) as path:
        for block in stored:
            path.push_block([pprof_bytes(profile) for profile in block])
        assert path.profile_types() == sorted(TYPE_IDS)
        return {type_id: path.merge(type_id) for type_id in TYPE_IDS}


@PROPERTY_SETTINGS
@given(blocks)
def test_merge_is_the_sum_of_the_stacks(stored):
    for column, tree in enumerate(merged_trees(stored).values()):
        expected = reference_self(stored, column)
        assert by_path(tree, tree.self_value) == expected
        assert by_path(tree, totals(tree)) == reference_totals(expected)


@PROPERTY_SETTINGS
@given(blocks, st.lists(st.integers(1, 60), min_size=1, max_size=4))
def test_truncation_keeps_the_total_and_every_kept_nodes_total(stored, limits):
    for column, tree in enumerate(merged_trees(stored).values()):
        expected = reference_totals(reference_self(stored, column))
        for max_nodes in limits:
            small = truncate(tree, max_nodes)
            assert len(small) <= max(max_nodes, 2)
            kept = by_path(small, totals(small))
            assert kept[()] == expected[()]
            assert {p: v for p, v in kept.items() if p[-1:] != ("other",)} == \
                {p: expected[p] for p in kept if p[-1:] != ("other",)}
            for render in (render_flamegraph, render_tree, render_top):
                assert render(tree, max_nodes)["total"] == expected[()], render.__name__


@PROPERTY_SETTINGS
@given(blocks, blocks, st.integers(1, 60))
def test_comparison_keeps_both_totals(left, right, max_nodes):
    left_tree, right_tree = merged_trees(left)[TYPE_IDS[1]], merged_trees(right)[TYPE_IDS[1]]
    answer = render_diff(left_tree, right_tree, max_nodes)
    assert answer["left_ticks"] == reference_totals(reference_self(left, 1))[()]
    assert answer["right_ticks"] == reference_totals(reference_self(right, 1))[()]
