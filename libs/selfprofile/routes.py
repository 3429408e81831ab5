"""`/debug/pprof/profile` and `/debug/pprof/heap` for every Flamewatch service, as Go's net/http/pprof serves them.

Profiles are taken on a worker thread so the event loop keeps serving while a CPU profile samples for
its seconds. Errors are raised, not answered here: the app maps them (ValueError -> 400, a heap
profile of a process without heap tracking -> 404, JSON `error` saying how to turn it on).
"""

from __future__ import annotations

import gc as garbage_collector

from fastapi import APIRouter, Response
from starlette.concurrency import run_in_threadpool

from flamewatch.rpc.auth import AdminOnly
from flamewatch.selfprofile.cpu import profile_cpu
from flamewatch.selfprofile.errors import HeapProfilingDisabled
from flamewatch.selfprofile.heap import profile_heap

DEFAULT_SECONDS = 10

HEAP_DISABLED = ("heap profiling is off in this service: start it with --self-profiling.heap (or "
                 "FLAMEWATCH_SELF_PROFILING_HEAP=true) to serve /debug/pprof/heap. It is off by default because "
                 "tracemalloc records every allocation, which costs several times the CPU of the service's own work")


def router(heap_enabled: bool) -> APIRouter:
    api = APIRouter(dependencies=[AdminOnly])  # the service's own code and memory: no tenant's

    @api.get("/debug/pprof/profile", include_in_schema=False)
    async def cpu_profile(seconds: int = DEFAULT_SECONDS) -> Response:
        return _pprof(await run_in_threadpool(profile_cpu, seconds), "profile")

    @api.get("/debug/pprof/heap", include_in_schema=False)
    async def heap_profile(gc: int = 0) -> Response:
        if not heap_enabled:
            raise HeapProfilingDisabled(HEAP_DISABLED)
        if gc > 0:  # as in Go: ?gc=1 collects garbage first, so only reachable memory is counted
            garbage_collector.collect()
        return _pprof(await run_in_threadpool(profile_heap), "heap")

    return api


def _pprof(data: bytes, name: str) -> Response:
    return Response(data, media_type="application/octet-stream",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})
