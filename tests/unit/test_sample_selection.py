"""Which matchers apply to a series and which to its samples, and matchers over many values at once."""

import numpy as np
import pytest

from flamewatch.labels.selector import parse_selector
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier import selection
from flamewatch.storage.index import ProfileRows, Series

CPU = ProfileType.parse("process_cpu:cpu:nanoseconds:cpu:nanoseconds")
API = Series(1, {"service_name": "api"})
API_X = Series(2, {"service_name": "api", "handler": "/x"})
WEB = Series(3, {"service_name": "web", "handler": "/login"})


def test_a_matcher_applies_to_the_series_that_has_its_label_and_to_the_samples_of_the_others():
    sel = selection.split([API, API_X, WEB], parse_selector('{service_name=~"api|web", handler="/login"}'), CPU)
    assert [s.id for s in sel.series] == [1, 3]  # api/x fails on its own handler label
    assert sel.filters[sel.series_filter[1]] == parse_selector('{handler="/login"}')
    assert sel.filters[sel.series_filter[3]] == ()
    assert sel.by_samples


def test_series_sharing_their_sample_matchers_share_a_filter():
    other = Series(4, {"service_name": "api", "pod": "p"})
    sel = selection.split([API, other], parse_selector('{span_id="7"}'), CPU)
    assert sel.series_filter == {1: 1, 4: 1}
    assert sel.filters == [(), parse_selector('{span_id="7"}')]
    rows = ProfileRows.of(np.array([4, 1, 4]), np.zeros(3, np.int64), np.array(["b"] * 3), np.arange(3),
                       np.ones(3, np.int64), np.zeros(3, np.int64))
    assert sel.row_filters(rows).tolist() == [1, 1, 1]


def test_series_label_matchers_only_need_no_block_reads():
    sel = selection.split([API, WEB], parse_selector('{service_name="web"}'), CPU)
    assert [s.id for s in sel.series] == [3]
    assert not sel.by_samples


def test_only_labels_every_series_has_go_to_the_index():
    matchers = parse_selector('{service_name="a", __name__="x", handler="/h", pod=~"p.*"}')
    assert [m.name for m in selection.index_matchers(matchers)] == ["service_name", "__name__"]


@pytest.mark.parametrize("text", ['{a="x"}', '{a!="x"}', '{a=~"x|"}', '{a!~"x.*"}', '{a=""}', '{a=~"(?i)X"}'])
def test_matches_many_agrees_with_matches(text):
    (matcher,) = parse_selector(text)
    values = np.array(["x", "", "xy", "X", "y", "x"], object)
    assert matcher.matches_many(values).tolist() == [matcher.matches(v) for v in values.tolist()]
    assert matcher.matches_many(np.zeros(0, object)).tolist() == []


def test_the_labels_pyroscope_derives_select_series_and_never_reach_samples():
    cpu = Series(5, {"service_name": "api", "__name__": "process_cpu", "__profile_type__": CPU.id})
    heap = Series(6, {"service_name": "web", "__name__": "memory",
                      "__profile_type__": "memory:inuse_space:bytes:space:bytes"})
    sel = selection.split([cpu, heap], parse_selector('{__type__="cpu", __period_unit__="nanoseconds"}'), CPU)
    assert [s.id for s in sel.series] == [5] and not sel.by_samples
    sel = selection.split([cpu, heap], parse_selector('{__service_name__=~"web|db", __unit__="bytes"}'), CPU)
    assert [s.id for s in sel.series] == [6] and not sel.by_samples
    assert all(m.name in selection.ALWAYS_SERIES_LABELS for m in parse_selector('{__type__="cpu"}'))
