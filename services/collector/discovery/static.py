"""Static discovery: the targets written in the config, as one group per `static_configs` entry."""

from __future__ import annotations

import asyncio

from flamewatch.collector.config import StaticConfig
from flamewatch.collector.discovery import Up
from flamewatch.collector.targetgroup import TargetGroup

__all__ = ["StaticDiscoverer"]


class StaticDiscoverer:
    """Reports its one group once, then waits to be cancelled. `name` (`<job>/static/<i>`) is its source."""

    def __init__(self, name: str, config: StaticConfig):
        self.name = name
        self.group = TargetGroup(
            source=name,
            targets=tuple({"__address__": address} for address in config.targets),
            labels=dict(config.labels),
        )

    def __repr__(self) -> str:
        return f"StaticDiscoverer({self.name!r})"

    async def run(self, up: Up) -> None:
        up([self.group])
        await asyncio.Event().wait()
