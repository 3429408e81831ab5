"""The querier's REST/JSON API under /api/v1/ (tenants, labels, series, totals, merged profiles, diff).

Every read may name several tenants (`X-Scope-OrgID: team-a|team-b`, `ReadTenants`) and answers over all
of them, as Pyroscope's v2 read path does."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier import api
from flamewatch.querier.engine import Querier
from flamewatch.querier.rest_models import (
    AnalyzeAnswer,
    DiffAnswer,
    NamesAnswer,
    ProfileTypesAnswer,
    QueryAnswer,
    QueryRangeAnswer,
    SeriesAnswer,
    TenantsAnswer,
)
from flamewatch.rpc.auth import Authenticated, ReadTenants
from flamewatch.rpc.openapi import ERROR_RESPONSES, ErrorBody

From = Annotated[str | None, Query(alias="from", description="start: epoch s/ms/ns, RFC 3339 or now-1h")]
Until = Annotated[str | None, Query(description="end, default now")]
Match = Annotated[list[str] | None, Query(alias="match[]", description='series selector, e.g. {job="demo"}')]
# Documented, not validated by FastAPI: api.py checks them with messages that name the accepted values.
Format = Annotated[str, Query(json_schema_extra={"enum": list(api.FORMATS)})]
Granularity = Annotated[str | None, Query(description="frames by function (default) or by function, file and line",
                                          json_schema_extra={"enum": list(api.GRANULARITIES)})]
MaxNodes = Annotated[int | None, Query(description="nodes (rows for top) to keep, default from the configuration",
                                       json_schema_extra={"minimum": 1, "maximum": api.MAX_NODES_LIMIT})]


def _type_json(t: ProfileType) -> dict:
    return {"id": t.id, "name": t.name, "sample_type": t.sample_type, "sample_unit": t.sample_unit,
            "period_type": t.period_type, "period_unit": t.period_unit}


def _answers(model: type) -> dict:
    """The route's 200 body, documented only: the dicts are not validated per request."""
    return {"response_model": None, "responses": {200: {"model": model, "description": "the answer"}}}


TIMEOUT_RESPONSE = {"model": ErrorBody, "description": "the query ran longer than --query.timeout"}
PPROF_BODY = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}


def router(q: Querier) -> APIRouter:
    r = APIRouter(prefix="/api/v1", responses={**ERROR_RESPONSES, 504: TIMEOUT_RESPONSE})

    @r.get("/tenants", summary="Tenants the caller may read, its default first", **_answers(TenantsAnswer))
    def tenants(caller: Authenticated) -> dict:
        # Not a ReadTenant: X-Scope-OrgID chooses among these, so a wrong one must not hide the list.
        return {"status": "success", "data": [{"name": t.name, "series": t.series, "default": t.default}
                                              for t in api.tenants(q, caller)]}

    @r.get("/profile_types", summary="Profile types with data in the range", **_answers(ProfileTypesAnswer))
    def profile_types(tenant: ReadTenants, start: From = None, until: Until = None) -> dict:
        types = q.profile_types(tenant, *api.time_range(start, until))
        return {"status": "success", "data": [_type_json(t) for t in types]}

    @r.get("/labels", summary="Label names of matching series", **_answers(NamesAnswer))
    def labels(tenant: ReadTenants, match: Match = None, start: From = None, until: Until = None) -> dict:
        names = q.label_names(tenant, match or [], *api.time_range(start, until))
        return {"status": "success", "data": names}

    @r.get("/label/{name}/values", summary="Values of one label across matching series", **_answers(NamesAnswer))
    def label_values(name: str, tenant: ReadTenants, match: Match = None, start: From = None,
                     until: Until = None) -> dict:
        values = q.label_values(tenant, name, match or [], *api.time_range(start, until))
        return {"status": "success", "data": values}

    @r.get("/series", summary="Label sets of matching series", **_answers(SeriesAnswer))
    def series(tenant: ReadTenants, match: Match = None, start: From = None, until: Until = None) -> dict:
        found = q.series(tenant, match or [], *api.time_range(start, until))
        return {"status": "success", "data": [s.labels for s in found]}

    @r.get("/query_range", summary="Profile totals per step, from the index", **_answers(QueryRangeAnswer))
    def query_range(query: str, tenant: ReadTenants, start: From = None, until: Until = None,
                    step: str | None = None, group_by: Annotated[list[str] | None, Query()] = None) -> dict:
        lo, hi = api.time_range(start, until)
        totals = q.query_range(tenant, query, lo, hi, api.step_ns(step, lo, hi),
                               api.group_by(group_by))
        return {"series": [{"labels": p.labels,
                            "points": [[t // 10**6, v] for t, v in zip(p.timestamps.tolist(), p.values.tolist())]}
                           for p in totals.series],
                "warnings": totals.warnings}

    @r.get("/query", summary="Merge of all matching profiles (or the one nearest `time`)", response_model=None,
           responses={200: {"model": QueryAnswer, "content": PPROF_BODY,
                            "description": "JSON, or with format=pprof a gzipped pprof profile"}})
    def query(query: str, tenant: ReadTenants, start: From = None, until: Until = None,
              time: str | None = None, format: Format = "flamegraph", max_nodes: MaxNodes = None,
              granularity: Granularity = None):
        lo, hi = api.time_range(start, until)
        rendered = api.query(q, tenant, query, lo, hi, api.optional_time(time), format,
                             api.check_max_nodes(max_nodes, q.config.default_max_nodes), granularity or "functions")
        if isinstance(rendered.body, bytes):
            return Response(rendered.body, media_type="application/octet-stream", headers={
                "Content-Disposition": f'attachment; filename="{rendered.merged.profile_type.name}.pb.gz"'})
        # plain lists and numbers already: json.dumps them directly, not through FastAPI's encoder, which
        # walks every element of a 20,000-node flamegraph in Python
        return JSONResponse({"profile_type": rendered.merged.profile_type.id, "profiles": rendered.merged.profiles,
                             format: rendered.body, "partial": rendered.merged.partial,
                             "warnings": list(rendered.merged.warnings)})

    @r.get("/analyze", summary="What the query would read (blocks, their bytes, series, profiles), from the "
           "index alone, and the tenant's limit on it", **_answers(AnalyzeAnswer))
    def analyze(query: str, tenant: ReadTenants, start: From = None, until: Until = None) -> dict:
        return api.analyze(q, tenant, query, *api.time_range(start, until)).json()

    @r.get("/changes", summary="What changed from selection a to b, function by function, with significance")
    def changes(tenant: ReadTenants, query: str | None = None, label: str | None = None, a: str | None = None,
                b: str | None = None, a_query: str | None = None, b_query: str | None = None,
                start: From = None, until: Until = None, a_from: str | None = None, a_until: str | None = None,
                b_from: str | None = None, b_until: str | None = None, order: Literal["self", "total"] = "self",
                alpha: float | None = None, limit: int | None = None) -> dict:
        left, right = api.sides(query, label, a, b, a_query, b_query)
        a_range = api.time_range(a_from or start, a_until or until)
        b_range = api.time_range(b_from or start, b_until or until)
        found = api.changes(q, tenant, (left, *a_range), (right, *b_range), order, alpha, limit)
        return {"a": {"query": left, "from": a_range[0], "until": a_range[1]},
                "b": {"query": right, "from": b_range[0], "until": b_range[1]}, "order": order, **found.json()}

    @r.get("/diff", summary="Two merges side by side as one diff flamegraph: left_query and right_query, or "
           "query, label, a and b as /changes takes them", **_answers(DiffAnswer))
    def diff(tenant: ReadTenants, left_query: str | None = None, right_query: str | None = None,
             query: str | None = None, label: str | None = None, a: str | None = None, b: str | None = None,
             start: From = None, until: Until = None, left_from: str | None = None, left_until: str | None = None,
             right_from: str | None = None, right_until: str | None = None, max_nodes: MaxNodes = None) -> dict:
        left_q, right_q = api.sides(query, label, a, b, left_query, right_query, ("left_query", "right_query"))
        left = (left_q, *api.time_range(left_from or start, left_until or until))
        right = (right_q, *api.time_range(right_from or start, right_until or until))
        return {"flamegraph": api.diff(q, tenant, left, right,
                                       api.check_max_nodes(max_nodes, q.config.default_max_nodes))}

    return r
