"""Pyroscope's `SelectHeatmap` as the querier answers it (`connect.py` → `Querier.profile_values` →
`heatmap`), on a real Postgres and profiles of known totals written as the ingester writes them: which slot
and value bucket each profile or span lands in, the counts, the exemplars, group_by and limit, all worked
out by hand below from Pyroscope's rules (the `heatmap` module docstring), and the requests it refuses.

The profiles, each at a whole second from the request's start S, with step 20 s over [S, S + 60 s]: slots
are stamped with their right edges S - 20 s, S, S + 20 s, S + 40 s and S + 60 s, and the values run from
100 to 2100, so the 20 value buckets are 100 wide with lower edges 100, 200, ..., 2000.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from e2e.pushes import cpu_profile

from flamewatch.api.querier.v1 import querier_pb2
from flamewatch.api.types.v1 import types_pb2
from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.ingester.writer import BlockWriter
from flamewatch.querier import connect
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.cost import QueryTooCostly
from flamewatch.querier.engine import Querier
from flamewatch.querier.paths import PathIndex
from flamewatch.storage.objstore import FilesystemConfig, open_object_store

pytestmark = [pytest.mark.postgres]

TENANT = "t"
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
S_MS = int(datetime(2026, 3, 2, 9, tzinfo=UTC).timestamp()) * 1000
SEC_MS = 1000
STEP_S = 20
WIDE = [100 * (i + 1) for i in range(20)]  # the lower edges of values 100..2100

# (instance, seconds from S, total) of service "api"
PROFILES = [
    ("a", -25, 5),  # before S - step: not read (read, it would move the lowest edge to 5)
    ("a", -20, 100),  # on the first slot's edge: in it
    ("a", 0, 2100),  # on S: in the slot (S - 20 s, S]
    ("a", 5, 150),
    ("b", 10, 200),  # on a value edge: the bucket above it
    ("b", 15, 180),
    ("a", 20, 1000),  # on S + 20 s: still in (S, S + 20 s]
    ("b", 30, 1999),
    ("b", 50, 1000),
    ("a", 60, 1000),  # on the end: read, in the last slot, tied with b's at 50 s
    ("b", 61, 99_999),  # after the end: not read
]
# (seconds from S; per sample: value, span_id, profile_id, trace_id, span_name) of service "spans"
SPAN_PROFILES = [
    (10, [(30, "s1", "", "", ""), (20, "s1", "", "", ""), (500, "s2", "", "t2", "GET /x"), (7, "", "", "", ""),
          (300, "", "s3", "", "")]),
    (30, [(70, "s1", "", "", "")]),
]


@pytest.fixture
def querier(db, tmp_path: Path) -> Querier:
    store = open_object_store(FilesystemConfig(str(tmp_path / "objects")))
    writer = BlockWriter(store, db)

    def push(labels: dict[str, str], time_ms: int, samples) -> None:
        prepared = prepare({"__name__": "process_cpu", **labels}, cpu_profile(time_ms * 10**6, samples), IngestLimits(),
                           time_ms * 10**6)
        writer.write(TENANT, prepared.entries)

    for instance, seconds, total in PROFILES:
        push({"service_name": "api", "instance": instance}, S_MS + seconds * SEC_MS,
             [(total - total // 3, {}), (total // 3, {})])
    for seconds, samples in SPAN_PROFILES:
        push({"service_name": "spans"}, S_MS + seconds * SEC_MS,
             [(v, {"span_id": a, "profile_id": b, "trace_id": c, "span_name": d}) for v, a, b, c, d in samples])
    return Querier(db, BlockCache(store, 1 << 30, 4, PathIndex()), QuerierConfig())


def select(q: Querier, selector: str = '{service_name="api"}', **fields) -> querier_pb2.SelectHeatmapResponse:
    request = querier_pb2.SelectHeatmapRequest(**{
        "profile_typeID": CPU, "label_selector": selector, "start": S_MS, "end": S_MS + 60 * SEC_MS, "step": STEP_S,
        "query_type": querier_pb2.HEATMAP_QUERY_TYPE_INDIVIDUAL, "exemplar_type": types_pb2.EXEMPLAR_TYPE_INDIVIDUAL,
        **fields})
    return connect.METHODS["SelectHeatmap"](q, TENANT, request)


def slots(series: types_pb2.HeatmapSeries) -> dict[int, dict[int, int]]:
    """{slot edge in seconds from S: {bucket: count}} of the buckets that count something."""
    return {(slot.timestamp - S_MS) // SEC_MS: {b: c for b, c in enumerate(slot.counts) if c}
            for slot in series.slots}


def exemplars(series: types_pb2.HeatmapSeries) -> dict[int, list[tuple[int, int]]]:
    """{slot edge in seconds from S: [(the exemplar's time in seconds from S, its value)]}, bucket order."""
    return {(slot.timestamp - S_MS) // SEC_MS: [((e.timestamp - S_MS) // SEC_MS, e.value) for e in slot.exemplars]
            for slot in series.slots}


def labels(pairs) -> dict[str, str]:
    return {p.name: p.value for p in pairs}


def test_each_profile_is_counted_in_its_slot_and_value_bucket(querier: Querier):
    [series] = select(querier).series
    assert labels(series.labels) == {}
    assert slots(series) == {-20: {0: 1}, 0: {19: 1}, 20: {0: 2, 1: 1, 9: 1}, 40: {18: 1}, 60: {9: 2}}
    assert all(list(slot.y_min) == WIDE for slot in series.slots)
    assert [len(slot.counts) for slot in series.slots] == [20] * 5
    # per bucket, its largest value; of equal ones the earliest (b's at 50 s before a's at 60 s)
    assert exemplars(series) == {-20: [(-20, 100)], 0: [(0, 2100)], 20: [(15, 180), (10, 200), (20, 1000)],
                                 40: [(30, 1999)], 60: [(50, 1000)]}


def test_an_exemplar_names_its_profile_with_its_series_labels(querier: Querier):
    [series] = select(querier).series
    [e] = [e for slot in series.slots for e in slot.exemplars if e.value == 1999]
    series_id, _, time_ns = e.profile_id.partition("-")
    assert int(time_ns) == (S_MS + 30 * SEC_MS) * 10**6 and e.span_id == ""
    assert labels(e.labels)["instance"] == "b" and labels(e.labels)["__profile_type__"] == CPU
    alone = querier.merge(TENANT, CPU + '{service_name="api"}', (S_MS - 60 * SEC_MS) * 10**6, (S_MS + 90 * SEC_MS)
                          * 10**6, profiles=connect.parse_profile_ids([e.profile_id]))
    assert (alone.profiles, int(alone.tree.self_value.sum())) == (1, 1999)


def test_group_by_splits_the_series_over_the_same_value_buckets(querier: Querier):
    a, b = select(querier, group_by=["instance"]).series
    assert (labels(a.labels), labels(b.labels)) == ({"instance": "a"}, {"instance": "b"})
    assert slots(a) == {-20: {0: 1}, 0: {19: 1}, 20: {0: 1, 9: 1}, 60: {9: 1}}
    assert slots(b) == {20: {0: 1, 1: 1}, 40: {18: 1}, 60: {9: 1}}
    assert all(list(slot.y_min) == WIDE for s in (a, b) for slot in s.slots)
    assert exemplars(a)[60] == [(60, 1000)] and "instance" not in labels(a.slots[0].exemplars[0].labels)
    # limit: the series with the most profiles (a has 5, b 4)
    [top] = select(querier, group_by=["instance"], limit=1).series
    assert labels(top.labels) == {"instance": "a"}
    assert len(select(querier, group_by=["instance"], limit=5).series) == 2


def test_without_exemplars_only_counts(querier: Querier):
    for kind in (types_pb2.EXEMPLAR_TYPE_NONE, types_pb2.EXEMPLAR_TYPE_UNSPECIFIED):
        [series] = select(querier, exemplar_type=kind).series
        assert slots(series)[20] == {0: 2, 1: 1, 9: 1}
        assert not any(slot.exemplars for slot in series.slots)


def test_a_span_heatmap_counts_each_span_of_each_profile(querier: Querier):
    [series] = select(querier, '{service_name="spans"}', query_type=querier_pb2.HEATMAP_QUERY_TYPE_SPAN,
                      exemplar_type=types_pb2.EXEMPLAR_TYPE_SPAN).series
    # spans s1 = 30 + 20, s2 = 500 and s3 (its id in profile_id) = 300 at 10 s, s1 = 70 at 30 s; the
    # sample of no span is not counted. Values 50..500: lower edges 50 + int(i * 22.5).
    assert list(series.slots[0].y_min) == [50 + int(i * 22.5) for i in range(20)]
    assert slots(series) == {20: {0: 1, 11: 1, 19: 1}, 40: {0: 1}}
    got = [(e.span_id, e.value, e.trace_id, labels(e.labels).get("span_name"), e.profile_id)
           for slot in series.slots for e in slot.exemplars]
    assert got == [("s1", 50, "", None, ""), ("s3", 300, "", None, ""), ("s2", 500, "t2", "GET /x", ""),
                   ("s1", 70, "", None, "")]


def test_matchers_on_sample_labels_count_each_profile_by_its_kept_samples(querier: Querier):
    [series] = select(querier, '{service_name="spans", span_id="s1"}').series
    assert exemplars(series) == {20: [(10, 50)], 40: [(30, 70)]}
    assert len(select(querier, '{service_name="spans", span_id="none"}').series) == 0


def test_no_profile_in_range_is_no_series(querier: Querier):
    assert len(select(querier, start=S_MS - 3600 * SEC_MS, end=S_MS - 1800 * SEC_MS).series) == 0


@pytest.mark.parametrize("fields, message", [
    ({"step": 0}, "step must be a number of seconds from 0.001 (1 ms)"),
    ({"step": 0.0005}, "step must be a number of seconds from 0.001 (1 ms)"),
    ({"step": -20}, "step must be a number of seconds from 0.001 (1 ms)"),
    ({"step": float("nan")}, "step must be a number of seconds from 0.001 (1 ms)"),
    ({"end": S_MS - 1}, f"start ({S_MS} ms) is after end ({S_MS - 1} ms)"),
    ({"end": S_MS}, f"start ({S_MS} ms) must be before end ({S_MS} ms)"),
    ({"limit": -1}, "limit must not be negative, got -1"),
    ({"query_type": querier_pb2.HEATMAP_QUERY_TYPE_UNSPECIFIED},
     "query_type HEATMAP_QUERY_TYPE_UNSPECIFIED: say what to count, HEATMAP_QUERY_TYPE_INDIVIDUAL (profiles) "
     "or HEATMAP_QUERY_TYPE_SPAN (spans)"),
    ({"query_type": 7}, "query_type 7: say what to count"),
    ({"exemplar_type": types_pb2.EXEMPLAR_TYPE_SPAN},
     "exemplar_type EXEMPLAR_TYPE_SPAN does not go with query_type HEATMAP_QUERY_TYPE_INDIVIDUAL: ask for "
     "EXEMPLAR_TYPE_INDIVIDUAL or EXEMPLAR_TYPE_NONE"),
    ({"exemplar_type": 9}, "unknown exemplar_type 9; known: EXEMPLAR_TYPE_NONE, EXEMPLAR_TYPE_INDIVIDUAL"),
    ({"profile_typeID": ""}, "profile_typeID is empty"),
])
def test_bad_requests_are_refused_naming_the_problem(querier: Querier, fields: dict, message: str):
    with pytest.raises(ValueError) as caught:
        select(querier, **fields)
    assert message in str(caught.value)


def test_a_span_heatmap_is_held_to_the_cost_limit(db, querier: Querier):
    """Spans are read from the blocks, so the tenant's byte limit applies before any is read; whole
    profiles' totals come from the index."""
    limited = Querier(db, querier.blocks, QuerierConfig(max_bytes=1))
    with pytest.raises(QueryTooCostly):
        select(limited, '{service_name="spans"}', query_type=querier_pb2.HEATMAP_QUERY_TYPE_SPAN,
               exemplar_type=types_pb2.EXEMPLAR_TYPE_SPAN)
    assert len(select(limited).series) == 1
