"""A discoverer that polls: call `refresh()` every interval and report the groups when they change.

Concrete discoverers that re-list their targets supply only the `refresh` coroutine. A refresh that
raises is logged and the last good groups stay in place, so a flaky source does not empty a job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from flamewatch.collector.discovery import Up
from flamewatch.collector.targetgroup import TargetGroup

__all__ = ["RefreshDiscoverer"]

logger = logging.getLogger(__name__)


class RefreshDiscoverer:
    def __init__(self, name: str, interval_s: float, refresh: Callable[[], Awaitable[list[TargetGroup]]]):
        self.name = name
        self.interval_s = interval_s
        self._refresh = refresh

    def __repr__(self) -> str:
        return f"RefreshDiscoverer({self.name!r}, interval_s={self.interval_s})"

    async def run(self, up: Up) -> None:
        last: list[TargetGroup] | None = None
        while True:
            groups = await self._try_refresh()
            if groups is not None and groups != last:
                last = groups
                up(list(groups))
            await asyncio.sleep(self.interval_s)

    async def _try_refresh(self) -> list[TargetGroup] | None:
        """The groups, or None (logged) when this refresh failed."""
        try:
            return list(await self._refresh())
        except Exception as exc:  # any failure of a source keeps the last good groups
            logger.warning("discoverer %s: refresh failed, keeping the last good targets: %s", self.name, exc,
                           exc_info=exc)
            return None
