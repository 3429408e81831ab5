"""Pyroscope's `querier.v1.QuerierService` over Connect, as Grafana's profiling datasource calls it.

A thin adapter: each method converts the Pyroscope request to the engine's arguments, calls the same
`Querier` function as our own APIs (in a thread: the engine blocks on Postgres and the object store),
and converts the answer back. Nothing is computed here. Pyroscope's times are milliseconds since the
epoch; an end of 0 means now and a start of 0 an hour before the end, as our APIs' defaults. The
protocol itself (codecs, gzip, errors) is `flamewatch.rpc.connect`.

To add a method: write `_method(q, tenant, request) -> response` and add it to `METHODS`; methods of the
service that are not in the table answer Connect `unimplemented`. `tenant` is every tenant X-Scope-OrgID
names (`team-a|team-b` names two, all of which the caller may read): the engine answers over all of them,
as Pyroscope's v2 read path does, with no label telling them apart.
"""

from __future__ import annotations

import asyncio
import gzip
import re
import time
from collections.abc import Callable, Sequence

import numpy as np
from fastapi import APIRouter
from google.protobuf.message import Message

from flamewatch.api.google.v1 import profile_pb2
from flamewatch.api.querier.v1 import querier_pb2
from flamewatch.api.types.v1 import types_pb2
from flamewatch.auth.caller import Action
from flamewatch.labels.names import DERIVED_FROM, DERIVED_LABELS, derived_label
from flamewatch.labels.selector import Matcher, Query, parse_selector
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier import api, heatmap
from flamewatch.querier.calltree import CallTree
from flamewatch.querier.engine import Querier
from flamewatch.querier.formats.flamegraph import render_flamegraph
from flamewatch.querier.pyroscope_tree import encode_tree
from flamewatch.querier.steps import Points
from flamewatch.rpc import connect, labelpairs
from flamewatch.rpc.errors import UnimplementedError
from flamewatch.rpc.tenant import Tenants

SERVICE = querier_pb2.DESCRIPTOR.services_by_name["QuerierService"]

_NS_PER_MS = 10**6
_DEFAULT_SPAN_NS = 3600 * 10**9  # as our APIs' default range
_SPAN_LABEL = "span_id"
_LEGACY_SPAN_LABEL = "profile_id"  # the span id's label in Pyroscope's first span profiles, which it still reads
_SUM, _AVERAGE = types_pb2.TIME_SERIES_AGGREGATION_TYPE_SUM, types_pb2.TIME_SERIES_AGGREGATION_TYPE_AVERAGE

# (querier, tenant or tenants, request) -> response; plain and blocking.
Method = Callable[[Querier, Tenants, Message], Message]


def time_range_ms(start_ms: int, end_ms: int, empty_is_all_time: bool = False) -> tuple[int, int]:
    """A Pyroscope range in ms → ours in ns: an end of 0 is now, a start of 0 an hour before the end; with
    `empty_is_all_time`, both 0 is all time (as Grafana's Profiles Drilldown lists every series)."""
    if start_ms < 0 or end_ms < 0:
        raise ValueError(f"start ({start_ms}) and end ({end_ms}) must be milliseconds since the epoch")
    if empty_is_all_time and start_ms == end_ms == 0:
        return 0, 2**63 - 1
    end = end_ms * _NS_PER_MS if end_ms else time.time_ns()
    start = start_ms * _NS_PER_MS if start_ms else end - _DEFAULT_SPAN_NS
    if start > end:
        raise ValueError(f"start ({start // _NS_PER_MS} ms) is after end ({end // _NS_PER_MS} ms)")
    return start, end


def profile_type(t: ProfileType) -> types_pb2.ProfileType:
    return types_pb2.ProfileType(ID=t.id, name=t.name, sample_type=t.sample_type, sample_unit=t.sample_unit,
                                 period_type=t.period_type, period_unit=t.period_unit)


def label_pairs(labels: dict[str, str]) -> list[types_pb2.LabelPair]:
    return labelpairs.label_pairs(labels, types_pb2.LabelPair)


def _profile_types(q: Querier, tenant: str, req: querier_pb2.ProfileTypesRequest) -> Message:
    types = q.profile_types(tenant, *time_range_ms(req.start, req.end))
    return querier_pb2.ProfileTypesResponse(profile_types=[profile_type(t) for t in types])


def _label_names(q: Querier, tenant: str, req: types_pb2.LabelNamesRequest) -> Message:
    """As `GET labels`, with the labels Pyroscope derives from the profile type and the service name
    (`__type__`, `__unit__`, `__period_type__`, `__period_unit__`, `__service_name__`), as its LabelNames
    lists them."""
    names = set(q.label_names(tenant, list(req.matchers), *time_range_ms(req.start, req.end)))
    names.update(derived for derived, stored in DERIVED_FROM.items() if stored in names)
    return types_pb2.LabelNamesResponse(names=sorted(names))


def _label_values(q: Querier, tenant: str, req: types_pb2.LabelValuesRequest) -> Message:
    if not req.name:
        raise ValueError("name: the label whose values to list is missing")
    span = time_range_ms(req.start, req.end)
    if req.name not in DERIVED_LABELS:
        return types_pb2.LabelValuesResponse(names=q.label_values(tenant, req.name, list(req.matchers), *span))
    stored = DERIVED_FROM[req.name]
    values = {derived_label({stored: v}, req.name) for v in q.label_values(tenant, stored, list(req.matchers), *span)}
    return types_pb2.LabelValuesResponse(names=sorted(v for v in values if v is not None))


def _series(q: Querier, tenant: str, req: querier_pb2.SeriesRequest) -> Message:
    found = q.series(tenant, list(req.matchers), *time_range_ms(req.start, req.end, empty_is_all_time=True))
    return querier_pb2.SeriesResponse(labels_set=[types_pb2.Labels(labels=label_pairs(labels))
                                                  for labels in _label_sets(found, req.label_names)])


def _label_sets(found, names: Sequence[str]) -> list[dict[str, str]]:
    """With `names`, each series keeps only those labels, and series that become equal are one."""
    if not names:
        return [s.labels for s in found]
    wanted = set(names)
    unique = {tuple(sorted((k, v) for k, v in s.labels.items() if k in wanted)) for s in found}
    return [dict(pairs) for pairs in sorted(unique)]


# ------------------------------------------------------------------------- merges, series, diff, stats
# Requests name a profile type and a label selector apart: they are joined into our query text, so
# selector and profile-type semantics are those of /api/v1.


def query_text(profile_type_id: str, label_selector: str, extra: Sequence[Matcher] = ()) -> str:
    """Our query text, `<profile type>{<matchers>}`, from Pyroscope's separate fields."""
    if not profile_type_id:
        raise ValueError("profile_typeID is empty: name a profile type, e.g. "
                         "process_cpu:cpu:nanoseconds:cpu:nanoseconds")
    try:
        matchers = parse_selector(label_selector or "{}")
    except ValueError as exc:
        raise ValueError(f"label_selector: {exc}") from exc
    return str(Query(profile_type_id, (*matchers, *extra)))  # Query names a bad profile type


def span_matcher(span_ids: Sequence[str], label: str = _SPAN_LABEL) -> Matcher:
    """The sample matcher that keeps the samples of any of the spans, by the span's id in `label`."""
    if not span_ids:
        raise ValueError("span_selector is empty: give the span ids whose samples to merge")
    return Matcher(label, "=~", "|".join(re.escape(s) for s in span_ids))


def span_queries(profile_type_id: str, label_selector: str, span_ids: Sequence[str]) -> list[str]:
    """The queries of the spans' samples: those whose `span_id` is one of them, and, as Pyroscope reads
    them, those of clients that label the span `profile_id` instead (its canary, the older Go
    otel-profiling package) and have no `span_id`. Disjoint, for `Querier.merge_any`."""
    return [query_text(profile_type_id, label_selector, [span_matcher(span_ids)]),
            query_text(profile_type_id, label_selector,
                       [span_matcher(span_ids, _LEGACY_SPAN_LABEL), Matcher(_SPAN_LABEL, "=", "")])]


def _max_nodes(q: Querier, requested: int | None) -> int:
    """Pyroscope's max_nodes: unset or 0 means the default."""
    return api.check_max_nodes(requested or None, q.config.default_max_nodes)


def _optional(message, field: str) -> int | None:
    return getattr(message, field) if message.HasField(field) else None


def _select_merge_stacktraces(q: Querier, tenant: str, req: querier_pb2.SelectMergeStacktracesRequest
                              ) -> querier_pb2.SelectMergeStacktracesResponse:
    extra = [span_matcher(req.span_selector)] if req.span_selector else []
    text = query_text(req.profile_typeID, req.label_selector, extra)  # pprof: spans by `span_id` only
    start, end = time_range_ms(req.start, req.end)
    limit = _max_nodes(q, _optional(req, "max_nodes"))
    if req.format == querier_pb2.PROFILE_FORMAT_PPROF:
        if req.profile_id_selector:
            raise UnimplementedError("profile_id_selector with PROFILE_FORMAT_PPROF is not supported; "
                                     "ask for PROFILE_FORMAT_FLAMEGRAPH or PROFILE_FORMAT_TREE")
        _, body = q.pprof(tenant, text, start, end, None)
        return querier_pb2.SelectMergeStacktracesResponse(pprof=querier_pb2.PprofProfile(profile=_pprof_message(body)))
    profiles = parse_profile_ids(req.profile_id_selector) if req.profile_id_selector else None
    merged = (q.merge_any(tenant, span_queries(req.profile_typeID, req.label_selector, req.span_selector), start,
                          end, profiles=profiles) if req.span_selector
              else q.merge(tenant, text, start, end, profiles=profiles))
    if req.format == querier_pb2.PROFILE_FORMAT_TREE:
        return querier_pb2.SelectMergeStacktracesResponse(tree=encode_tree(merged.tree, limit))
    if req.format not in (querier_pb2.PROFILE_FORMAT_UNSPECIFIED, querier_pb2.PROFILE_FORMAT_FLAMEGRAPH):
        raise UnimplementedError(f"format {querier_pb2.ProfileFormat.Name(req.format)} is not supported; "
                                 "supported: PROFILE_FORMAT_FLAMEGRAPH, PROFILE_FORMAT_TREE, PROFILE_FORMAT_PPROF")
    return querier_pb2.SelectMergeStacktracesResponse(flamegraph=_rendered_flamegraph(merged.tree, limit))


def _select_merge_span_profile(q: Querier, tenant: str, req: querier_pb2.SelectMergeSpanProfileRequest
                               ) -> querier_pb2.SelectMergeSpanProfileResponse:
    queries = span_queries(req.profile_typeID, req.label_selector, req.span_selector)
    merged = q.merge_any(tenant, queries, *time_range_ms(req.start, req.end))
    limit = _max_nodes(q, _optional(req, "max_nodes"))
    if req.format == querier_pb2.PROFILE_FORMAT_TREE:
        return querier_pb2.SelectMergeSpanProfileResponse(tree=encode_tree(merged.tree, limit))
    return querier_pb2.SelectMergeSpanProfileResponse(flamegraph=_rendered_flamegraph(merged.tree, limit))


def _select_merge_profile(q: Querier, tenant: str, req: querier_pb2.SelectMergeProfileRequest) -> profile_pb2.Profile:
    """The merge as pprof, with everything stored (lines, mappings, sample labels); not truncated."""
    text = query_text(req.profile_typeID, req.label_selector)
    _, body = q.pprof(tenant, text, *time_range_ms(req.start, req.end), None)
    return _pprof_message(body)


def _diff(q: Querier, tenant: str, req: querier_pb2.DiffRequest) -> querier_pb2.DiffResponse:
    sides = []
    for name, side in (("left", req.left), ("right", req.right)):
        if not side.profile_typeID:
            raise ValueError(f"{name}: profile_typeID is empty: both sides need a query")
        sides.append((query_text(side.profile_typeID, side.label_selector), *time_range_ms(side.start, side.end)))
    limit = _max_nodes(q, max(_optional(req.left, "max_nodes") or 0, _optional(req.right, "max_nodes") or 0))
    body = api.diff(q, tenant, sides[0], sides[1], limit)
    return querier_pb2.DiffResponse(flamegraph=querier_pb2.FlameGraphDiff(
        names=body["names"], levels=[querier_pb2.Level(values=v) for v in body["levels"]], total=body["total"],
        max_self=body["max_self"], leftTicks=body["left_ticks"], rightTicks=body["right_ticks"]))


def _rendered_flamegraph(tree: CallTree, limit: int) -> querier_pb2.FlameGraph:
    return _flamegraph_message(render_flamegraph(tree, limit))


def _flamegraph_message(body: dict) -> querier_pb2.FlameGraph:
    return querier_pb2.FlameGraph(names=body["names"], levels=[querier_pb2.Level(values=v) for v in body["levels"]],
                                  total=body["total"], max_self=body["max_self"])


def _pprof_message(gzipped: bytes) -> profile_pb2.Profile:
    """Our rendered pprof as Pyroscope's google.v1.Profile (the same field numbers)."""
    return profile_pb2.Profile.FromString(gzip.decompress(gzipped))


def _select_series(q: Querier, tenant: str, req: querier_pb2.SelectSeriesRequest) -> querier_pb2.SelectSeriesResponse:
    if req.step < 0 or not np.isfinite(req.step):
        raise ValueError(f"step must be a positive number of seconds, got {req.step}")
    text = query_text(req.profile_typeID, req.label_selector)
    start, end = time_range_ms(req.start, req.end)
    step = api.step_ns(int(req.step * 10**9) or None, start, end)
    aggregation = _optional(req, "aggregation")
    if aggregation not in (None, _SUM, _AVERAGE):
        raise ValueError(f"unknown aggregation {aggregation}; known: TIME_SERIES_AGGREGATION_TYPE_SUM, "
                         "TIME_SERIES_AGGREGATION_TYPE_AVERAGE")
    if req.exemplar_type == types_pb2.EXEMPLAR_TYPE_SPAN:
        raise UnimplementedError("exemplar_type EXEMPLAR_TYPE_SPAN is not supported; "
                                 "EXEMPLAR_TYPE_INDIVIDUAL names individual profiles")
    totals = q.query_range(tenant, text, start, end, step, list(req.group_by),
                           average=aggregation == _AVERAGE,
                           exemplars=req.exemplar_type == types_pb2.EXEMPLAR_TYPE_INDIVIDUAL)
    series = _top(totals.series, _optional(req, "limit"))
    return querier_pb2.SelectSeriesResponse(series=[_series_message(p) for p in series])


def _top(series: list[Points], limit: int | None) -> list[Points]:
    """The `limit` series with the largest sums, in their original order (all when unset or 0)."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    if not limit or limit >= len(series):
        return series
    sums = np.array([float(np.sum(p.values)) for p in series])
    keep = np.sort(np.argsort(-sums, kind="stable")[:limit])
    return [series[i] for i in keep.tolist()]


def _series_message(p: Points) -> types_pb2.Series:
    points = [types_pb2.Point(timestamp=t, value=v)
              for t, v in zip((p.timestamps // _NS_PER_MS).tolist(), p.values.tolist(), strict=True)]
    if p.exemplars is not None:
        e = p.exemplars
        for point, i, t, v, labels in zip(points, e.series_id.tolist(), e.time.tolist(), e.value.tolist(),
                                          e.labels, strict=True):
            point.exemplars.add(timestamp=t // _NS_PER_MS, profile_id=profile_id(i, t), value=v,
                                labels=label_pairs(labels))
    return types_pb2.Series(labels=label_pairs(p.labels), points=points)


# A profile is known by its series and its time in ns: both survive compaction, which moves it to
# another block and row.
def profile_id(series_id: int, time_ns: int) -> str:
    return f"{series_id}-{time_ns}"


def parse_profile_ids(ids: Sequence[str]) -> list[tuple[int, int]]:
    """`profile_id_selector` as (series id, time) pairs; an id this server did not give is refused."""
    pairs = []
    for text in ids:
        series_id, _, time_ns = text.partition("-")
        if not (series_id.isdigit() and time_ns.lstrip("-").isdigit()):
            raise ValueError(f'profile_id_selector: "{text}" is not a profile id of this server '
                             '(<series id>-<time ns>, as SelectSeries exemplars give them)')
        pairs.append((int(series_id), int(time_ns)))
    return pairs


# ------------------------------------------------------------------------------------------- heatmap
# Pyroscope's rules and the counting are `heatmap`'s; here the request is checked as its query frontend
# and query backend check it, and the answer converted.

_INDIVIDUAL, _SPAN = querier_pb2.HEATMAP_QUERY_TYPE_INDIVIDUAL, querier_pb2.HEATMAP_QUERY_TYPE_SPAN
_EXEMPLARS_OF = {_INDIVIDUAL: types_pb2.EXEMPLAR_TYPE_INDIVIDUAL, _SPAN: types_pb2.EXEMPLAR_TYPE_SPAN}
_NO_EXEMPLARS = (types_pb2.EXEMPLAR_TYPE_UNSPECIFIED, types_pb2.EXEMPLAR_TYPE_NONE)
_MAX_STEP_S = 10**9  # about 30 years: a step past the int64 milliseconds of any range is a mistake


def _select_heatmap(q: Querier, tenant: str, req: querier_pb2.SelectHeatmapRequest
                    ) -> querier_pb2.SelectHeatmapResponse:
    span = heatmap.Range(*_heatmap_range(req))
    spans, exemplars = _heatmap_types(req.query_type, req.exemplar_type)
    limit = _optional(req, "limit")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    text = query_text(req.profile_typeID, req.label_selector)
    found = q.profile_values(tenant, text, span.read_from_ns, span.read_until_ns,
                             heatmap.SPAN_LABELS if spans else ())
    points = heatmap.spans(found) if spans else heatmap.individual(found)
    built = heatmap.build(points, found.series, span, list(req.group_by), exemplars, limit)
    return querier_pb2.SelectHeatmapResponse(series=[_heatmap_series(s, built.y_min) for s in built.series])


def _heatmap_range(req: querier_pb2.SelectHeatmapRequest) -> tuple[int, int, int]:
    """(start, end, step) in ms, the step cut to whole ms as Pyroscope cuts it: under 1 ms it would be 0,
    so it is refused, as Pyroscope refuses it."""
    step_ms = int(req.step * 10**9) // _NS_PER_MS if np.isfinite(req.step) and abs(req.step) < _MAX_STEP_S else 0
    if step_ms < 1:
        raise ValueError(f"step must be a number of seconds from 0.001 (1 ms) to {_MAX_STEP_S:g}, got {req.step}")
    start, end = time_range_ms(req.start, req.end)
    if start == end:
        raise ValueError(f"start ({start // _NS_PER_MS} ms) must be before end ({end // _NS_PER_MS} ms)")
    return start // _NS_PER_MS, end // _NS_PER_MS, step_ms


def _heatmap_types(query_type: int, exemplar_type: int) -> tuple[bool, bool]:
    """Whether the heatmap counts spans (not whole profiles), and whether it names exemplars, which must
    be of what it counts."""
    if query_type not in _EXEMPLARS_OF:
        raise ValueError(f"query_type {_enum_name(querier_pb2.HeatmapQueryType, query_type)}: say what to count, "
                         "HEATMAP_QUERY_TYPE_INDIVIDUAL (profiles) or HEATMAP_QUERY_TYPE_SPAN (spans)")
    if exemplar_type in _NO_EXEMPLARS or exemplar_type == _EXEMPLARS_OF[query_type]:
        return query_type == _SPAN, exemplar_type not in _NO_EXEMPLARS
    name = _enum_name(types_pb2.ExemplarType, exemplar_type)
    if exemplar_type in _EXEMPLARS_OF.values():
        raise ValueError(f"exemplar_type {name} does not go with query_type "
                         f"{querier_pb2.HeatmapQueryType.Name(query_type)}: ask for "
                         f"{types_pb2.ExemplarType.Name(_EXEMPLARS_OF[query_type])} or EXEMPLAR_TYPE_NONE")
    raise ValueError(f"unknown exemplar_type {name}; known: EXEMPLAR_TYPE_NONE, EXEMPLAR_TYPE_INDIVIDUAL, "
                     "EXEMPLAR_TYPE_SPAN")


def _enum_name(enum, value: int) -> str:
    """An enum value's name, or its number when this server knows no name for it."""
    return enum.Name(value) if value in enum.values() else str(value)


def _heatmap_series(s: heatmap.HeatmapSeries, y_min: list[float]) -> types_pb2.HeatmapSeries:
    return types_pb2.HeatmapSeries(labels=label_pairs(s.labels), slots=[
        types_pb2.HeatmapSlot(timestamp=slot.timestamp_ms, y_min=y_min, counts=slot.counts,
                              exemplars=[_heatmap_exemplar(e) for e in slot.exemplars]) for slot in s.slots])


def _heatmap_exemplar(e: heatmap.Exemplar) -> types_pb2.Exemplar:
    """A profile's exemplar names the profile (as SelectSeries's do), a span's its span, as Pyroscope's."""
    return types_pb2.Exemplar(timestamp=e.time_ns // _NS_PER_MS, value=e.value, labels=label_pairs(e.labels),
                              profile_id="" if e.span_id else profile_id(e.series_id, e.time_ns),
                              span_id=e.span_id, trace_id=e.trace_id)


def _get_profile_stats(q: Querier, tenant: str, _req: types_pb2.GetProfileStatsRequest
                       ) -> types_pb2.GetProfileStatsResponse:
    bounds = q.time_bounds(tenant)
    if bounds is None:
        return types_pb2.GetProfileStatsResponse(data_ingested=False)
    oldest, newest = bounds
    return types_pb2.GetProfileStatsResponse(data_ingested=True, oldest_profile_time=oldest // _NS_PER_MS,
                                             newest_profile_time=newest // _NS_PER_MS)


def _analyze_query(q: Querier, tenant: str, req: querier_pb2.AnalyzeQueryRequest) -> querier_pb2.AnalyzeQueryResponse:
    found = api.analyze(q, tenant, req.query, *time_range_ms(req.start, req.end)).cost
    scope = querier_pb2.QueryScope(component_type="blocks", component_count=1, block_count=found.blocks,
                                   series_count=found.series, profile_count=found.profiles,
                                   profile_bytes=found.bytes)
    return querier_pb2.AnalyzeQueryResponse(query_scopes=[scope], query_impact=querier_pb2.QueryImpact(
        total_bytes_in_time_range=found.bytes, total_queried_series=found.series))


METHODS: dict[str, Method] = {
    "ProfileTypes": _profile_types,
    "LabelNames": _label_names,
    "LabelValues": _label_values,
    "Series": _series,
    "SelectMergeStacktraces": _select_merge_stacktraces,
    "SelectMergeSpanProfile": _select_merge_span_profile,
    "SelectMergeProfile": _select_merge_profile,
    "SelectSeries": _select_series,
    "SelectHeatmap": _select_heatmap,
    "Diff": _diff,
    "GetProfileStats": _get_profile_stats,
    "AnalyzeQuery": _analyze_query,
}


def _handler(q: Querier, method: Method) -> connect.Handler:
    async def handle(request: Message, call: connect.Call) -> Message:
        return await asyncio.to_thread(method, q, call.tenants, request)

    return handle


def service(q: Querier) -> connect.Service:
    return connect.Service(SERVICE, Action.READ, {name: _handler(q, method) for name, method in METHODS.items()},
                           reads_several=True)


def router(q: Querier) -> APIRouter:
    """`POST /querier.v1.QuerierService/<Method>` for the querier's HTTP app."""
    return connect.router(service(q))
