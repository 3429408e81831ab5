"""Pyroscope's `push.v1.PusherService/Push` (as Grafana Alloy sends it), over Connect and gRPC.

A thin adapter: a `PushRequest` is series of labels (with `__name__`, e.g. `process_cpu`) and raw pprof
samples, which become the `(labels, [(id, raw pprof)])` pairs of `Ingester.push`, so the same limits,
all-or-nothing write and durability hold as for our own push. Pyroscope's internal labels `__delta__`
(whether the server should compute deltas; Alloy sends deltas already) and `__session_id__` (one per
process start) are dropped: they would make new series without saying anything about the profiles.
Annotations are ignored, as Pyroscope does for pushed ones.

Pyroscope takes label names our selectors cannot name: the Python SDK sends `otel.scope.name` and
`process.runtime.name`. Each character outside `[a-zA-Z0-9_]` becomes `_` (and a leading digit gets a
`_` before it), as Prometheus translates OpenTelemetry's attribute names: `otel_scope_name`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import grpc
from fastapi import APIRouter

from flamewatch.api.push.v1 import push_pb2, push_pb2_grpc
from flamewatch.auth.caller import Action
from flamewatch.ingester.config import IngestLimits
from flamewatch.labels.sanitize import label_name
from flamewatch.pprof import LimitExceeded
from flamewatch.rpc import connect
from flamewatch.rpc.auth import grpc_tenant
from flamewatch.rpc.grpc_server import handled

SERVICE = push_pb2.DESCRIPTOR.services_by_name["PusherService"]
DROPPED_LABELS = frozenset({"__delta__", "__session_id__"})
_MAX_PROFILES = IngestLimits().max_profiles_per_push

Series = list[tuple[dict[str, str], list[tuple[str, bytes]]]]
PushFn = Callable[[str, Series], Awaitable[object]]  # Ingester.push without a name hint


def series_of(request: push_pb2.PushRequest, max_profiles: int = _MAX_PROFILES) -> Series:
    """The push as the ingester takes it; a push without any profile, or with more than `max_profiles`,
    is refused before any of its profiles is read."""
    _check_count(len(request.series), max_profiles, "series")
    _check_count(sum(len(s.samples) for s in request.series), max_profiles, "profiles")
    series = [(labels_of(s.labels), [(sample.ID, sample.raw_profile) for sample in s.samples])
              for s in request.series]
    if not any(samples for _, samples in series):
        raise ValueError("push has no profiles: each series needs at least one sample with a raw_profile")
    return series


def check_json_counts(document: object, max_profiles: int = _MAX_PROFILES) -> None:
    """The counts of `series_of` on a JSON push, before protobuf's JSON parser walks it (~10 µs a series)."""
    series = document.get("series") if isinstance(document, dict) else None
    if isinstance(series, list):
        _check_count(len(series), max_profiles, "series")
        samples = (s.get("samples") for s in series if isinstance(s, dict))
        _check_count(sum(len(x) for x in samples if isinstance(x, list)), max_profiles, "profiles")


def _check_count(count: int, limit: int, what: str) -> None:
    if count > limit:
        raise LimitExceeded(f"push has {count} {what}, the limit is {limit} per push (--limits.max-profiles-per-push)")


def labels_of(pairs: Iterable) -> dict[str, str]:
    labels: dict[str, str] = {}
    sent_as: dict[str, str] = {}  # our name -> the name the client sent
    for pair in pairs:
        name = label_name(pair.name)
        if name in DROPPED_LABELS:  # also when the client wrote it differently, e.g. `__delta..`
            continue
        if labels.get(name, pair.value) != pair.value:
            raise ValueError(f'labels "{sent_as[name]}" and "{pair.name}" both become "{name}" with different values')
        labels[name], sent_as[name] = pair.value, pair.name
    return labels


def connect_router(push: PushFn, max_body_bytes: int, max_profiles: int = _MAX_PROFILES) -> APIRouter:
    """`POST /push.v1.PusherService/Push` for the ingester's HTTP app."""

    async def handle(request: push_pb2.PushRequest, call: connect.Call) -> push_pb2.PushResponse:
        await push(call.tenant, series_of(request, max_profiles))
        return push_pb2.PushResponse()

    checks = {"Push": lambda document: check_json_counts(document, max_profiles)}
    return connect.router(connect.Service(SERVICE, Action.WRITE, {"Push": handle}, max_body_bytes, checks))


class PusherServicer(push_pb2_grpc.PusherServiceServicer):
    def __init__(self, push: PushFn, max_profiles: int = _MAX_PROFILES):
        self._push, self._max_profiles = push, max_profiles

    @handled
    async def Push(self, request: push_pb2.PushRequest, context: grpc.aio.ServicerContext):
        tenant = grpc_tenant(context, Action.WRITE)  # first: a caller who may not write learns nothing else
        await self._push(tenant, series_of(request, self._max_profiles))
        return push_pb2.PushResponse()


def register_grpc(push: PushFn, server: grpc.aio.Server, max_profiles: int = _MAX_PROFILES) -> None:
    push_pb2_grpc.add_PusherServiceServicer_to_server(PusherServicer(push, max_profiles), server)
