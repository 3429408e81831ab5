"""`POST /-/reload`, as Prometheus has it: read the process's files again (the scrape configuration, the
rule file), the same as SIGHUP. A file that fails to load is a 400 naming the problem, and the process
keeps what it runs."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter

from flamewatch.rpc.auth import AdminOnly


def reload_router(reload: Callable[[], None]) -> APIRouter:
    router = APIRouter()

    @router.post("/-/reload", summary="Load the configuration and rule files again", dependencies=[AdminOnly])
    async def reload_files() -> dict:  # async: applying starts tasks on the event loop
        reload()
        return {"status": "success"}

    return router
