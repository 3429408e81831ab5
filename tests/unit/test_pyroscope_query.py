"""Pyroscope's query protocol pieces that need no server: the tree encoding, request fields joined into our
query text, millisecond ranges, SelectSeries' limit and average, the render timeline."""

import numpy as np
import pytest

from flamewatch.labels.errors import SelectorError
from flamewatch.querier.calltree import CallTree
from flamewatch.querier.connect import _top, parse_profile_ids, profile_id, query_text, span_matcher
from flamewatch.querier.pyroscope_render import timeline, timeline_step_s
from flamewatch.querier.pyroscope_tree import encode_tree
from flamewatch.querier.steps import Points, bucket_totals, largest_per_step
from flamewatch.storage.index import ProfileRows

# total -> main -> {parse, compute -> sqrt}; total -> gc, as (parent, name, self), node 0 first
SIX = [(-1, "total", 0), (0, "main", 1), (0, "gc", 5), (1, "parse", 3), (1, "compute", 4), (4, "sqrt", 2)]


def make_tree(rows: list[tuple[int, str, int]]) -> CallTree:
    names = np.array([name for _, name, _ in rows], object)
    return CallTree(names, np.array([p for p, _, _ in rows], np.int64), np.arange(len(rows), dtype=np.int64),
                    np.array([v for _, _, v in rows], np.int64))


def _varints(*values: int) -> bytes:
    return bytes(values)  # every value below is < 128: one byte each


def test_tree_golden_six_nodes():
    # Depth first, parents first, children in node order: root(""), main, parse, compute, sqrt, gc.
    expected = b"".join([
        _varints(0, 0, 2),
        _varints(4) + b"main" + _varints(1, 2),
        _varints(5) + b"parse" + _varints(3, 0),
        _varints(7) + b"compute" + _varints(4, 1),
        _varints(4) + b"sqrt" + _varints(2, 0),
        _varints(2) + b"gc" + _varints(5, 0),
    ])
    assert encode_tree(make_tree(SIX), 100) == expected


def test_tree_truncation_keeps_the_total():
    data = encode_tree(make_tree(SIX), 3)
    assert b"other" in data and b"sqrt" not in data


def test_tree_writes_negative_self_values_as_twos_complement():
    data = encode_tree(make_tree([(-1, "total", 0), (0, "f", -1)]), 10)
    assert data == _varints(0, 0, 1) + _varints(1) + b"f" + b"\xff" * 9 + b"\x01" + _varints(0)


@pytest.mark.parametrize(("ptype", "selector", "expected"), [
    ("process_cpu:cpu:nanoseconds:cpu:nanoseconds", '{service_name="a"}',
     'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="a"}'),
    ("memory:inuse_space:bytes:space:bytes", "", "memory:inuse_space:bytes:space:bytes"),
    ("memory:inuse_space:bytes:space:bytes", "{}", "memory:inuse_space:bytes:space:bytes"),
])
def test_query_text_joins_profile_type_and_selector(ptype: str, selector: str, expected: str):
    assert query_text(ptype, selector) == expected


def test_span_ids_become_one_anchored_sample_matcher():
    text = query_text("process_cpu:cpu:nanoseconds:cpu:nanoseconds", '{service_name="a"}',
                      [span_matcher(["a1", "b.2"])])
    assert text == r'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="a",span_id=~"a1|b\\.2"}'


@pytest.mark.parametrize(("ptype", "selector", "error", "message"), [
    ("", "{}", ValueError, "profile_typeID is empty"),
    ("cpu", "{}", SelectorError, 'invalid profile type id "cpu"'),
    ("process_cpu:cpu:nanoseconds:cpu:nanoseconds", "{a=}", ValueError, "label_selector: "),
])
def test_query_text_names_the_bad_field(ptype: str, selector: str, error: type, message: str):
    with pytest.raises(error, match=message):
        query_text(ptype, selector)


def _points(label: str, values: list[float]) -> Points:
    return Points({"s": label}, np.arange(len(values), dtype=np.int64), np.array(values, float))


def test_limit_keeps_the_largest_series_in_their_order():
    series = [_points("a", [1, 1]), _points("b", [5]), _points("c", [3, 0]), _points("d", [0.5])]
    assert [p.labels["s"] for p in _top(series, 2)] == ["b", "c"]
    assert _top(series, None) == series and _top(series, 0) == series and _top(series, 9) == series
    with pytest.raises(ValueError, match="limit must not be negative"):
        _top(series, -1)


def test_average_is_the_mean_profile_total_of_each_step():
    rows = ProfileRows.of(series_id=np.array([1, 2, 1]), time=np.array([0, 1, 5]), block_id=np.zeros(3, object),
                       row=np.zeros(3, np.int64), total=np.array([10, 20, 40]), content_hash=np.zeros(3, np.int64))
    group, bucket = np.zeros(3, np.int64), np.array([0, 0, 1])
    [(steps, sums)] = bucket_totals(rows, group, bucket, 1, gauge=False)
    [(_, means)] = bucket_totals(rows, group, bucket, 1, gauge=False, average=True)
    assert steps.tolist() == [0, 1] and sums.tolist() == [30, 40] and means.tolist() == [15, 40]


def test_render_timeline_fills_missing_steps_with_zero():
    step = timeline_step_s(0, 3600 * 10**9)
    assert step == 15
    points = Points({}, np.array([15, 45], np.int64) * 10**9, np.array([2.0, 3.0]))
    body = timeline(points, 0, 90 * 10**9, step)
    assert body == {"startTime": 0, "samples": [0, 2, 0, 3, 0, 0], "durationDelta": 15, "watermarks": None}
    assert timeline_step_s(0, 86_400 * 10**9) == 58  # a day in about 1500 steps



def test_exemplar_of_a_step_is_its_largest_profile_earliest_on_ties():
    rows = ProfileRows.of(series_id=np.array([1, 2, 3, 1, 2]), time=np.array([0, 1, 2, 10, 11]),
                       block_id=np.zeros(5, object), row=np.zeros(5, np.int64), total=np.array([5, 9, 9, 4, 3]),
                       content_hash=np.zeros(5, np.int64))
    group, bucket = np.array([0, 0, 0, 1, 1]), np.array([0, 0, 0, 1, 1])
    (s0, t0, v0), (s1, t1, v1) = largest_per_step(rows, group, bucket, 2)
    assert (s0.tolist(), t0.tolist(), v0.tolist()) == ([2], [1], [9])
    assert (s1.tolist(), t1.tolist(), v1.tolist()) == ([1], [10], [4])


def test_profile_ids_round_trip_and_strangers_are_refused():
    assert parse_profile_ids([profile_id(12, -5), profile_id(3, 1_700_000_000_000_000_000)]) == [
        (12, -5), (3, 1_700_000_000_000_000_000)]
    with pytest.raises(ValueError, match='"abc" is not a profile id of this server'):
        parse_profile_ids(["abc"])
