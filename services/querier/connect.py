"""Pyroscope's `querier.v1.QuerierService` over Connect, as Grafana's profiling datasource calls it.

A thin adapter: each method converts the Pyroscope request to the engine's arguments, calls the same
`Querier` function as our own APIs (in a thread: the engine blocks on Postgres and the object store),
and converts the answer back. Nothing is computed here. Pyroscope's times are milliseconds since the
epoch; an end of 0 means now and a start of 0 an hour before the end, as our APIs' defaults. The
protocol itself (codecs, gzip, errors) is `flamewatch.rpc.connect`.

To add a method: write `_method(q, tenant, request) -> response` and add it to `METHODS`; methods of the
service that are not in the table answer Connect `unimplemented`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from fastapi import APIRouter
from google.protobuf.message import Message

from flamewatch.api.querier.v1 import querier_pb2
from flamewatch.api.types.v1 import types_pb2
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier.engine import Querier
from flamewatch.rpc import connect

SERVICE = querier_pb2.DESCRIPTOR.services_by_name["QuerierService"]

_NS_PER_MS = 10**6
_DEFAULT_SPAN_NS = 3600 * 10**9  # as our APIs' default range

# (querier, tenant, request) -> response; plain and blocking.
Method = Callable[[Querier, str, Message], Message]


def time_range_ms(start_ms: int, end_ms: int) -> tuple[int, int]:
    """A Pyroscope range in ms → ours in ns: an end of 0 is now, a start of 0 an hour before the end."""
    if start_ms < 0 or end_ms < 0:
        raise ValueError(f"start ({start_ms}) and end ({end_ms}) must be milliseconds since the epoch")
    end = end_ms * _NS_PER_MS if end_ms else time.time_ns()
    start = start_ms * _NS_PER_MS if start_ms else end - _DEFAULT_SPAN_NS
    if start > end:
        raise ValueError(f"start ({start // _NS_PER_MS} ms) is after end ({end // _NS_PER_MS} ms)")
    return start, end


def profile_type(t: ProfileType) -> types_pb2.ProfileType:
    return types_pb2.ProfileType(ID=t.id, name=t.name, sample_type=t.sample_type, sample_unit=t.sample_unit,
                                 period_type=t.period_type, period_unit=t.period_unit)


def label_pairs(labels: dict[str, str]) -> list[types_pb2.LabelPair]:
    return [types_pb2.LabelPair(name=k, value=v) for k, v in sorted(labels.items())]


def _profile_types(q: Querier, tenant: str, req: querier_pb2.ProfileTypesRequest) -> Message:
    types = q.profile_types(tenant, *time_range_ms(req.start, req.end))
    return querier_pb2.ProfileTypesResponse(profile_types=[profile_type(t) for t in types])


def _label_names(q: Querier, tenant: str, req: types_pb2.LabelNamesRequest) -> Message:
    names = q.label_names(tenant, list(req.matchers), *time_range_ms(req.start, req.end))
    return types_pb2.LabelNamesResponse(names=names)


def _label_values(q: Querier, tenant: str, req: types_pb2.LabelValuesRequest) -> Message:
    if not req.name:
        raise ValueError("name: the label whose values to list is missing")
    values = q.label_values(tenant, req.name, list(req.matchers), *time_range_ms(req.start, req.end))
    return types_pb2.LabelValuesResponse(names=values)


def _series(q: Querier, tenant: str, req: querier_pb2.SeriesRequest) -> Message:
    found = q.series(tenant, list(req.matchers), *time_range_ms(req.start, req.end))
    return querier_pb2.SeriesResponse(labels_set=[types_pb2.Labels(labels=label_pairs(labels))
                                                  for labels in _label_sets(found, req.label_names)])


def _label_sets(found, names: Sequence[str]) -> list[dict[str, str]]:
    """With `names`, each series keeps only those labels, and series that become equal are one."""
    if not names:
        return [s.labels for s in found]
    wanted = set(names)
    unique = {tuple(sorted((k, v) for k, v in s.labels.items() if k in wanted)) for s in found}
    return [dict(pairs) for pairs in sorted(unique)]


METHODS: dict[str, Method] = {
    "ProfileTypes": _profile_types,
    "LabelNames": _label_names,
    "LabelValues": _label_values,
    "Series": _series,
}


def _handler(q: Querier, method: Method) -> connect.Handler:
    async def handle(request: Message, call: connect.Call) -> Message:
        return await asyncio.to_thread(method, q, call.tenant, request)

    return handle


def service(q: Querier) -> connect.Service:
    return connect.Service(SERVICE, {name: _handler(q, method) for name, method in METHODS.items()})


def router(q: Querier) -> APIRouter:
    """`POST /querier.v1.QuerierService/<Method>` for the querier's HTTP app."""
    return connect.router(service(q))
