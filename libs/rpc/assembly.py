"""What a service adds to the process that runs it, so `flamewatch <service>` and `flamewatch all` wire
each service the same way.

Each service has `assemble(stack, ...)` (`services/<svc>/assemble.py`): it builds the service's parts
from its config and already open storage, starts what runs in the background, puts their closing on the
`stack` (last opened, first closed), and returns an `Assembly`. The command line opens the ports and the
storage, calls one `assemble` or several, `combine`s them and serves the result (`flamewatch.cli.process`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Assembly:
    routers: Sequence[Any] = ()  # FastAPI routers, served under the process's HTTP address
    register_grpc: Callable[[Any], None] | None = None  # adds its servicers to the gRPC server
    # Work done while the servers still answer, when the process is asked to stop (the collector sends
    # what it has queued to the ingester, which may be the same process)
    before_stop: Callable[[], Awaitable[None]] | None = None
    reload: Callable[[], None] | None = None  # what SIGHUP and POST /-/reload re-read
    parts: dict[str, Any] = field(default_factory=dict)  # the service objects, by name, for the caller's use


def combine(*assemblies: Assembly) -> Assembly:
    """One process of several services: every router and servicer, each `before_stop` in order."""
    registers = [a.register_grpc for a in assemblies if a.register_grpc]
    stops = [a.before_stop for a in assemblies if a.before_stop]
    reloads = [a.reload for a in assemblies if a.reload]

    def register(server) -> None:
        for add in registers:
            add(server)

    async def before_stop() -> None:
        for stop in stops:
            await stop()

    def reload() -> None:
        for again in reloads:
            again()

    return Assembly(routers=[r for a in assemblies for r in a.routers], register_grpc=register if registers else None,
                    before_stop=before_stop if stops else None, reload=reload if reloads else None,
                    parts={k: v for a in assemblies for k, v in a.parts.items()})
