"""The arithmetic of Pyroscope's heatmap (`flamewatch.querier.heatmap`) without storage: which slot a time is
in and which value bucket a value is in, at the edges where an off-by-one would show. The cases of slots
are those Pyroscope's own tests of its time bucketing check, as (time, first slot edge, end, step) in ms."""

from __future__ import annotations

import numpy as np
import pytest

from flamewatch.querier import heatmap
from flamewatch.storage.index import Series


@pytest.mark.parametrize("time_ms, first, end, step, edge", [
    (50, 200, 1000, 100, 200),  # before the first slot: in it
    (100, 100, 1000, 100, 100),  # on the first edge
    (150, 100, 1000, 100, 200),
    (200, 100, 1000, 100, 200),  # on an edge: the slot it closes
    (550, 100, 1000, 100, 600),
    (1000, 100, 1000, 100, 1000),  # on the end
    (1001, 100, 1000, 100, 1000),  # after the end: in the last slot
    (180, 12, 1000, 200, 212),  # a start off the step's grid
])
def test_a_time_is_in_the_slot_its_right_edge_closes(time_ms, first, end, step, edge):
    span = heatmap.Range(first + step, end, step)  # the first slot is one step before the start
    assert span.edge(int(span.slots(np.array([time_ms * 10**6]))[0])) == edge


def test_values_go_to_twenty_buckets_from_the_smallest_to_the_largest():
    edges = heatmap.value_edges(0, 10_000)
    assert edges.tolist() == list(range(0, 10_001, 500))
    assert heatmap.value_buckets(np.array([0, 499, 500, 9_999, 10_000]), edges).tolist() == [0, 0, 1, 19, 19]
    # equal values: the largest is the smallest + 1, and they all land in the last bucket of their edge
    assert heatmap.value_edges(7, 7).tolist() == [7] * 20 + [8]
    assert heatmap.value_buckets(np.array([7, 7]), heatmap.value_edges(7, 7)).tolist() == [19, 19]
    # a span of 10: edges 0, 0, 1, 1, 2, ...; 1 is in the last bucket whose edge is 1
    assert heatmap.value_buckets(np.array([0, 1, 10]), heatmap.value_edges(0, 10)).tolist() == [1, 3, 19]


def test_limit_keeps_the_series_with_most_counts_most_first_and_leaves_order_alone_otherwise():
    series = [Series(1, {"pod": "a"}), Series(2, {"pod": "b"}), Series(3, {"pod": "c"})]
    points = heatmap.Points(np.array([1, 2, 2, 3, 3, 3]), np.full(6, 5 * 10**9), np.array([1, 2, 3, 4, 5, 6]))
    span = heatmap.Range(0, 60_000, 10_000)
    pods = [s.labels["pod"] for s in heatmap.build(points, series, span, ["pod"], False, 2).series]
    assert pods == ["c", "b"]
    pods = [s.labels["pod"] for s in heatmap.build(points, series, span, ["pod"], False, 3).series]
    assert pods == ["a", "b", "c"]
