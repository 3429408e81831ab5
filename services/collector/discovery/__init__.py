"""Service discovery: the protocol every discoverer implements.

A discoverer finds scrape targets and reports them as `TargetGroup`s. The built-ins and the config type
each is built from are listed in `registry.py`; `manager.py` runs them per job and hands the groups to
the scrape manager. `refresh.py` is the poller that discoverers which re-list periodically build on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from flamewatch.collector.targetgroup import TargetGroup

__all__ = ["Discoverer", "Up"]

Up = Callable[[list[TargetGroup]], None]
"""Receives the full current list of groups of one discoverer; a group absent from it is gone."""


class Discoverer(Protocol):
    async def run(self, up: Up) -> None:
        """Run until cancelled, calling `up` with every group whenever the set of groups changes.

        The first call should come as soon as the discoverer knows its targets, even when there are none.
        """
        ...
