"""Pyroscope's `querier.v1` merges, time series, diff and stats, converted to and from the engine.

Each function takes the querier, the tenant and a decoded request message and returns the response
message; the engine computes every answer (`engine.py`, through `api.py` as our own APIs do). Requests
name a profile type and a label selector apart: they are joined into our query text, so time, selector
and profile-type semantics are those of `/api/v1`. Times are epoch milliseconds; a zero end is now and a
zero start an hour before the end. Errors are raised as for our APIs and mapped by the Connect plumbing.
"""

from __future__ import annotations

import gzip
import re
import time
from collections.abc import Sequence

import numpy as np

from flamewatch.api.google.v1 import profile_pb2
from flamewatch.api.querier.v1 import querier_pb2
from flamewatch.api.types.v1 import types_pb2
from flamewatch.labels.selector import Matcher, Query, parse_selector
from flamewatch.querier import api
from flamewatch.querier.calltree import CallTree
from flamewatch.querier.engine import Points, Querier
from flamewatch.querier.formats.flamegraph import render_flamegraph
from flamewatch.querier.pyroscope_tree import encode_tree
from flamewatch.timerange import TimeParseError, TimeRangeError, format_ns

_NS_PER_MS = 10**6
_DEFAULT_SPAN_NS = 3600 * 10**9  # our APIs' default range: the hour before the end
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_SPAN_LABEL = "span_id"
_SUM, _AVERAGE = types_pb2.TIME_SERIES_AGGREGATION_TYPE_SUM, types_pb2.TIME_SERIES_AGGREGATION_TYPE_AVERAGE


# ---------------------------------------------------------------------------------------- requests

def time_range(start_ms: int, end_ms: int) -> tuple[int, int]:
    """Epoch milliseconds as nanoseconds, checked as our APIs check them (0: unset)."""
    end = _ns_of_ms("end", end_ms) if end_ms else time.time_ns()
    start = _ns_of_ms("start", start_ms) if start_ms else max(end - _DEFAULT_SPAN_NS, _INT64_MIN)
    if start > end:
        raise TimeRangeError(f"from ({format_ns(start)}) is after until ({format_ns(end)})")
    return start, end


def _ns_of_ms(field: str, ms: int) -> int:
    ns = ms * _NS_PER_MS
    if not _INT64_MIN <= ns <= _INT64_MAX:
        raise TimeParseError(f"{field} {ms} ms is outside the representable range (years 1677 to 2262)")
    return ns


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


def span_matcher(span_ids: Sequence[str]) -> Matcher:
    """The sample matcher that keeps the samples of any of the spans."""
    if not span_ids:
        raise ValueError("span_selector is empty: give the span ids whose samples to merge")
    return Matcher(_SPAN_LABEL, "=~", "|".join(re.escape(s) for s in span_ids))


def max_nodes(q: Querier, requested: int | None) -> int:
    """Pyroscope's max_nodes: unset or 0 means the default."""
    return api.check_max_nodes(requested or None, q.config.default_max_nodes)


def _optional(message, field: str) -> int | None:
    return getattr(message, field) if message.HasField(field) else None


# ---------------------------------------------------------------------------------------- merges

def select_merge_stacktraces(q: Querier, tenant: str, req: querier_pb2.SelectMergeStacktracesRequest
                             ) -> querier_pb2.SelectMergeStacktracesResponse:
    extra = [span_matcher(req.span_selector)] if req.span_selector else []
    text = query_text(req.profile_typeID, req.label_selector, extra)
    start, end = time_range(req.start, req.end)
    limit = max_nodes(q, _optional(req, "max_nodes"))
    if req.format == querier_pb2.PROFILE_FORMAT_PPROF:
        _, body = q.pprof(tenant, text, start, end, None)
        return querier_pb2.SelectMergeStacktracesResponse(pprof=querier_pb2.PprofProfile(profile=pprof_message(body)))
    merged = q.merge(tenant, text, start, end)
    if req.format == querier_pb2.PROFILE_FORMAT_TREE:
        return querier_pb2.SelectMergeStacktracesResponse(tree=encode_tree(merged.tree, limit))
    if req.format not in (querier_pb2.PROFILE_FORMAT_UNSPECIFIED, querier_pb2.PROFILE_FORMAT_FLAMEGRAPH):
        raise ValueError(f"format {querier_pb2.ProfileFormat.Name(req.format)} is not supported; "
                         "supported: PROFILE_FORMAT_FLAMEGRAPH, PROFILE_FORMAT_TREE, PROFILE_FORMAT_PPROF")
    return querier_pb2.SelectMergeStacktracesResponse(flamegraph=rendered_flamegraph(merged.tree, limit))


def select_merge_span_profile(q: Querier, tenant: str, req: querier_pb2.SelectMergeSpanProfileRequest
                              ) -> querier_pb2.SelectMergeSpanProfileResponse:
    text = query_text(req.profile_typeID, req.label_selector, [span_matcher(req.span_selector)])
    merged = q.merge(tenant, text, *time_range(req.start, req.end))
    limit = max_nodes(q, _optional(req, "max_nodes"))
    if req.format == querier_pb2.PROFILE_FORMAT_TREE:
        return querier_pb2.SelectMergeSpanProfileResponse(tree=encode_tree(merged.tree, limit))
    return querier_pb2.SelectMergeSpanProfileResponse(flamegraph=rendered_flamegraph(merged.tree, limit))


def select_merge_profile(q: Querier, tenant: str, req: querier_pb2.SelectMergeProfileRequest) -> profile_pb2.Profile:
    """The merge as pprof, with everything stored (lines, mappings, sample labels); not truncated."""
    text = query_text(req.profile_typeID, req.label_selector)
    _, body = q.pprof(tenant, text, *time_range(req.start, req.end), None)
    return pprof_message(body)


def diff(q: Querier, tenant: str, req: querier_pb2.DiffRequest) -> querier_pb2.DiffResponse:
    sides = []
    for name, side in (("left", req.left), ("right", req.right)):
        if not side.profile_typeID:
            raise ValueError(f"{name}: profile_typeID is empty: both sides need a query")
        sides.append((query_text(side.profile_typeID, side.label_selector), *time_range(side.start, side.end)))
    limit = max_nodes(q, max(_optional(req.left, "max_nodes") or 0, _optional(req.right, "max_nodes") or 0))
    body = api.diff(q, tenant, sides[0], sides[1], limit)
    return querier_pb2.DiffResponse(flamegraph=querier_pb2.FlameGraphDiff(
        names=body["names"], levels=[querier_pb2.Level(values=v) for v in body["levels"]], total=body["total"],
        max_self=body["max_self"], leftTicks=body["left_ticks"], rightTicks=body["right_ticks"]))


def rendered_flamegraph(tree: CallTree, limit: int) -> querier_pb2.FlameGraph:
    return flamegraph_message(render_flamegraph(tree, limit))


def flamegraph_message(body: dict) -> querier_pb2.FlameGraph:
    return querier_pb2.FlameGraph(names=body["names"], levels=[querier_pb2.Level(values=v) for v in body["levels"]],
                                  total=body["total"], max_self=body["max_self"])


def pprof_message(gzipped: bytes) -> profile_pb2.Profile:
    """Our rendered pprof as Pyroscope's google.v1.Profile (the same field numbers)."""
    return profile_pb2.Profile.FromString(gzip.decompress(gzipped))


# ---------------------------------------------------------------------------------------- series

def select_series(q: Querier, tenant: str, req: querier_pb2.SelectSeriesRequest) -> querier_pb2.SelectSeriesResponse:
    if req.step < 0 or not np.isfinite(req.step):
        raise ValueError(f"step must be a positive number of seconds, got {req.step}")
    text = query_text(req.profile_typeID, req.label_selector)
    start, end = time_range(req.start, req.end)
    step = api.step_ns(int(req.step * 10**9) or None, start, end)
    aggregation = _optional(req, "aggregation")
    if aggregation not in (None, _SUM, _AVERAGE):
        raise ValueError(f"unknown aggregation {aggregation}; known: TIME_SERIES_AGGREGATION_TYPE_SUM, "
                         "TIME_SERIES_AGGREGATION_TYPE_AVERAGE")
    totals = q.query_range(tenant, text, start, end, step, list(req.group_by),
                           average=aggregation == _AVERAGE)
    series = _top(totals.series, _optional(req, "limit"))
    return querier_pb2.SelectSeriesResponse(series=[series_message(p) for p in series])


def _top(series: list[Points], limit: int | None) -> list[Points]:
    """The `limit` series with the largest sums, in their original order (all when unset or 0)."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    if not limit or limit >= len(series):
        return series
    sums = np.array([float(np.sum(p.values)) for p in series])
    keep = np.sort(np.argsort(-sums, kind="stable")[:limit])
    return [series[i] for i in keep.tolist()]


def series_message(p: Points) -> types_pb2.Series:
    return types_pb2.Series(
        labels=[types_pb2.LabelPair(name=k, value=v) for k, v in sorted(p.labels.items())],
        points=[types_pb2.Point(timestamp=t, value=v)
                for t, v in zip((p.timestamps // _NS_PER_MS).tolist(), p.values.tolist(), strict=True)])


# ---------------------------------------------------------------------------------------- stats

def get_profile_stats(q: Querier, tenant: str, _req: types_pb2.GetProfileStatsRequest
                      ) -> types_pb2.GetProfileStatsResponse:
    bounds = q.time_bounds(tenant)
    if bounds is None:
        return types_pb2.GetProfileStatsResponse(data_ingested=False)
    oldest, newest = bounds
    return types_pb2.GetProfileStatsResponse(data_ingested=True, oldest_profile_time=oldest // _NS_PER_MS,
                                             newest_profile_time=newest // _NS_PER_MS)
