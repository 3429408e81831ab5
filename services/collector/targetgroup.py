"""The one plain type that service discovery produces and the scrape manager consumes."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TargetGroup"]


@dataclass(frozen=True)
class TargetGroup:
    """Targets sharing a set of labels, as one discoverer found them.

    `source` is unique within the discoverer that produced the group (`demo/static/0`, `/etc/sd/a.json:2`).
    Every target has at least `__address__`; `labels` apply to every target of the group, and a target's
    own labels win over them.
    """

    source: str
    targets: tuple[dict[str, str], ...]
    labels: dict[str, str]
