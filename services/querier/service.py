"""The querier: label, series, totals and merged-profile queries over gRPC and REST.

Inputs: the Postgres index and block objects (read through a local cache).
Outputs: QueryService (gRPC) and /api/v1/* (REST/JSON), both served by `api`. Reads take the tenants the
`x-scope-orgid` metadata names (one, or several joined by "|"), as the REST API does.
"""

from __future__ import annotations

import asyncio
import threading

import grpc

from flamewatch.api.flamewatch.v1 import partial_pb2_grpc, query_pb2, query_pb2_grpc
from flamewatch.querier import api, convert, deadline, fanout
from flamewatch.querier.engine import Querier
from flamewatch.rpc.auth import grpc_caller, grpc_tenants
from flamewatch.rpc.grpc_server import handled


def _range(r) -> tuple[int, int]:
    """An unset range means "the last hour", as in the REST API."""
    if r.start_ns == 0 and r.end_ns == 0:
        return api.time_range(None, None)
    if r.start_ns > r.end_ns:
        raise ValueError(f"range start {r.start_ns} is after its end {r.end_ns}")
    return r.start_ns, r.end_ns


class QueryServicer(query_pb2_grpc.QueryServiceServicer):
    def __init__(self, querier: Querier):
        self._q = querier

    async def _call(self, context, fn, *args):
        return await asyncio.to_thread(fn, grpc_tenants(context), *args)


    @handled
    async def Tenants(self, request, context):
        found = await asyncio.to_thread(api.tenants, self._q, grpc_caller())
        return query_pb2.TenantsResponse(tenants=[convert.tenant(t) for t in found])

    @handled
    async def ProfileTypes(self, request, context: grpc.aio.ServicerContext):
        types = await self._call(context, self._q.profile_types, *_range(request.range))
        return query_pb2.ProfileTypesResponse(profile_types=[convert.profile_type(t) for t in types])

    @handled
    async def LabelNames(self, request, context):
        names = await self._call(context, self._q.label_names, list(request.matchers), *_range(request.range))
        return query_pb2.LabelNamesResponse(names=names)

    @handled
    async def LabelValues(self, request, context):
        values = await self._call(context, self._q.label_values, request.name, list(request.matchers),
                                  *_range(request.range))
        return query_pb2.LabelValuesResponse(values=values)

    @handled
    async def Series(self, request, context):
        found = await self._call(context, self._q.series, list(request.matchers), *_range(request.range))
        return query_pb2.SeriesResponse(series=[convert.labels(s.labels) for s in found])

    @handled
    async def QueryRange(self, request, context):
        start, end = _range(request.range)
        step = api.step_ns(request.step_ns, start, end)
        totals = await self._call(context, self._q.query_range, request.query, start, end, step,
                                  api.group_by(request.group_by))
        return query_pb2.QueryRangeResponse(series=[convert.series_points(p) for p in totals.series],
                                            warnings=totals.warnings)

    @handled
    async def Query(self, request, context):
        tenant = grpc_tenants(context)  # first: a caller who may not read learns nothing else
        fmt = convert.FORMAT_NAMES.get(request.format)
        if fmt is None:
            raise ValueError(f"unknown format {request.format}")
        granularity = convert.GRANULARITY_NAMES.get(request.granularity)
        if granularity is None:
            raise ValueError(f"unknown granularity {request.granularity}")
        start, end = _range(request.range)
        max_nodes = api.check_max_nodes(request.max_nodes or None, self._q.config.default_max_nodes)
        rendered = await asyncio.to_thread(api.query, self._q, tenant, request.query, start, end,
                                           request.time_ns or None, fmt, max_nodes, granularity)
        field, make = convert.RESULT_FIELDS[fmt]
        return query_pb2.QueryResponse(profile_type=convert.profile_type(rendered.merged.profile_type),
                                       profiles=rendered.merged.profiles, partial=rendered.merged.partial,
                                       warnings=rendered.merged.warnings, **{field: make(rendered.body)})

    @handled
    async def Diff(self, request, context):
        tenant = grpc_tenants(context)
        left = (request.left_query, *_range(request.left_range))
        right = (request.right_query, *_range(request.right_range))
        max_nodes = api.check_max_nodes(request.max_nodes or None, self._q.config.default_max_nodes)
        body = await asyncio.to_thread(api.diff, self._q, tenant, left, right, max_nodes)
        return query_pb2.DiffResponse(flamegraph=convert.diff(body))

    @handled
    async def Changes(self, request, context):
        tenant = grpc_tenants(context)
        a = (request.a_query, *_range(request.a_range))
        b = (request.b_query, *_range(request.b_range))
        found = await asyncio.to_thread(api.changes, self._q, tenant, a, b, request.order or "self",
                                        request.alpha or None, request.limit or None)
        return query_pb2.ChangesResponse(
            functions=[query_pb2.FunctionChange(name=f.name, self=_share(f.self), total=_share(f.total))
                       for f in found.functions],
            a_profiles=found.profiles[0], b_profiles=found.profiles[1], notes=list(found.notes))

    @handled
    async def AnalyzeQuery(self, request, context):
        tenant = grpc_tenants(context)
        found = await asyncio.to_thread(api.analyze, self._q, tenant, request.query, *_range(request.range))
        return query_pb2.AnalyzeQueryResponse(blocks=found.cost.blocks, series=found.cost.series,
                                              profiles=found.cost.profiles, block_bytes=found.cost.bytes,
                                              max_bytes=found.max_bytes)


def _share(m) -> query_pb2.ShareChange:
    return query_pb2.ShareChange(a=m.a, b=m.b, change=m.change, low=m.low, high=m.high, p=m.p,
                                 significant=m.significant)


class PartialServicer(partial_pb2_grpc.PartialServiceServicer):
    """Pieces of other queriers' merges (`fanout`): merged here as this querier merges its own, within
    the asker's deadline, and stopped when the asker goes away."""

    def __init__(self, querier: Querier):
        self._q = querier

    @handled
    async def MergePartial(self, request, context):
        tenant = grpc_tenants(context)
        query, piece, divisors = fanout.request_range(request)
        gone = threading.Event()
        context.add_done_callback(lambda _: gone.set())
        left = context.time_remaining()
        timeout = min(t for t in (left, self._q.config.query_timeout_s or None, float("inf")) if t is not None)

        def run():
            with deadline.bounded(None if timeout == float("inf") else timeout, gone):
                return self._q.partial(tenant, query, piece, divisors, request.granularity, request.symbolize)

        merged, warnings = await asyncio.to_thread(run)
        fanout.PARTIAL_PROFILES.inc(merged.profiles)
        return await asyncio.to_thread(fanout.tree_response, merged, warnings)


def register_grpc(querier: Querier):
    def register(server) -> None:
        query_pb2_grpc.add_QueryServiceServicer_to_server(QueryServicer(querier), server)
        partial_pb2_grpc.add_PartialServiceServicer_to_server(PartialServicer(querier), server)
    return register
