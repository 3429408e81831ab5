"""Pyroscope's HTTP `/pyroscope/render` and `/pyroscope/render-diff`, as Grafana's profiles app calls them.

`render?query=<profile type>{<matchers>}&from=&until=&max-nodes=&groupBy=&aggregation=sum|avg` answers
the merge as a flamebearer profile (`flamebearer`, `metadata`) with the totals over time as its `timeline`
(one sample per step from `from`, zero where there is no profile) and, with `groupBy`, one timeline per
value of the first group_by label under `groups`. `render-diff?leftQuery=&leftFrom=&leftUntil=&rightQuery=
&rightFrom=&rightUntil=&max-nodes=` answers the two merges as one diff flamebearer. Times take every form
our API takes (epoch s/ms, RFC 3339, `now-1h`); the engine computes every answer.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Query

from flamewatch.labels.selector import parse_query
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier import api, deadline
from flamewatch.querier.engine import Querier
from flamewatch.querier.formats.flamegraph import render_flamegraph
from flamewatch.querier.steps import Points
from flamewatch.rpc.auth import ReadTenants
from flamewatch.rpc.disconnect import caller_gone
from flamewatch.rpc.openapi import ERROR_RESPONSES

MaxNodes = Annotated[int | None, Query(alias="max-nodes", description="nodes to keep")]
MaxNodesCamel = Annotated[int | None, Query(alias="maxNodes", description="the same as max-nodes")]

_MIN_STEP_S = 15
_TIMELINE_POINTS = 1500  # Pyroscope's resolution: about this many steps over the range, at least 15 s each
_OBJECT_TYPES = frozenset({"inuse_objects", "alloc_objects", "goroutine", "samples"})
_AGGREGATIONS = {"sum": False, "avg": True}


def router(q: Querier) -> APIRouter:
    r = APIRouter(prefix="/pyroscope", responses=ERROR_RESPONSES)

    @r.get("/render", summary="Pyroscope's render: a merge as flamebearer JSON with its timeline",
           response_model=None)
    def render(query: str, tenant: ReadTenants, start: Annotated[str | None, Query(alias="from")] = None,
               until: str | None = None, max_nodes: MaxNodes = None, max_nodes_camel: MaxNodesCamel = None,
               group_by: Annotated[list[str] | None, Query(alias="groupBy")] = None,
               aggregation: str | None = None) -> dict[str, Any]:
        lo, hi = api.time_range(start, until)
        limit = api.check_max_nodes(max_nodes_camel or max_nodes or None, q.config.default_max_nodes)
        average = _average(aggregation)
        step_s = timeline_step_s(lo, hi)
        groups = api.group_by(group_by)
        # one request, one budget for its two engine calls
        with deadline.bounded(q.config.query_timeout_s, caller_gone()):
            merged = q.merge(tenant, query, lo, hi)
            totals = q.query_range(tenant, query, lo, hi, step_s * 10**9, groups, average=average)
        body = flamebearer(render_flamegraph(merged.tree, limit), merged.profile_type, "single")
        single = totals.series[0] if len(totals.series) == 1 and not groups else None
        body["timeline"] = timeline(single, lo, hi, step_s)
        body["groups"] = ({p.labels.get(groups[0], "") or "*": timeline(p, lo, hi, step_s) for p in totals.series}
                          if groups else None)
        return body

    @r.get("/render-diff", summary="Pyroscope's render-diff: two merges as one diff flamebearer",
           response_model=None)
    def render_diff(leftQuery: str, rightQuery: str, tenant: ReadTenants,  # noqa: N803 (Pyroscope's names)
                    leftFrom: str | None = None, leftUntil: str | None = None,  # noqa: N803
                    rightFrom: str | None = None, rightUntil: str | None = None,  # noqa: N803
                    max_nodes: MaxNodes = None, max_nodes_camel: MaxNodesCamel = None) -> dict[str, Any]:
        left = (leftQuery, *api.time_range(leftFrom, leftUntil))
        right = (rightQuery, *api.time_range(rightFrom, rightUntil))
        limit = api.check_max_nodes(max_nodes_camel or max_nodes or None, q.config.default_max_nodes)
        diff = api.diff(q, tenant, left, right, limit)
        body = flamebearer(diff, ProfileType.parse(parse_query(leftQuery).profile_type or ""), "double")
        body.update(leftTicks=diff["left_ticks"], rightTicks=diff["right_ticks"], timeline=None)
        return body

    return r


def _average(aggregation: str | None) -> bool:
    if aggregation is None or aggregation == "":
        return False
    if aggregation not in _AGGREGATIONS:
        raise ValueError(f'unknown aggregation "{aggregation}"; known: sum, avg')
    return _AGGREGATIONS[aggregation]


def flamebearer(rendered: dict, ptype: ProfileType, kind: str) -> dict[str, Any]:
    """Pyroscope's flamebearer profile (version 1) around our flamegraph or diff levels."""
    units, rate = ("samples", 10**9) if ptype.sample_type == "cpu" else (
        "objects" if ptype.sample_type in _OBJECT_TYPES else ptype.sample_unit, 100)
    return {
        "version": 1,
        "flamebearer": {"names": rendered["names"], "levels": rendered["levels"], "numTicks": rendered["total"],
                        "maxSelf": rendered["max_self"]},
        "metadata": {"format": kind, "spyName": "", "sampleRate": rate, "units": units, "name": ptype.sample_type},
        "heatmap": None,
    }


def timeline_step_s(start_ns: int, end_ns: int) -> int:
    """Whole seconds per step: the range over about 1500 steps, at least 15 s."""
    return max(_MIN_STEP_S, -(-(end_ns - start_ns) // (_TIMELINE_POINTS * 10**9)))


def timeline(points: Points | None, start_ns: int, end_ns: int, step_s: int) -> dict[str, Any]:
    """One value per step from the start (zero where no profile), as Pyroscope's flamebearer timeline."""
    start_s, end_s = start_ns // 10**9, end_ns // 10**9
    samples = np.zeros(max(0, (end_s - start_s) // step_s), np.float64)
    if points is not None and len(points.timestamps):
        index = (points.timestamps - start_ns) // (step_s * 10**9)
        keep = (index >= 0) & (index < len(samples))
        np.add.at(samples, index[keep], points.values[keep])
    return {"startTime": start_s, "samples": np.rint(samples).astype(np.int64).tolist(),
            "durationDelta": step_s, "watermarks": None}
