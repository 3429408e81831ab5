"""Output formats of the querier and the one registry that lists them.

A format renders a merged `CallTree` (a comparison: two of them) into a JSON-ready dict and truncates it
to `max_nodes` as it sees fit. To add one: write a module here with a function matching `Renderer` or
`DiffRenderer`, then add it to `RENDERERS` or `DIFF_RENDERERS` below. Nothing registers itself on import.
"""

from __future__ import annotations

from typing import Any, Protocol

from flamewatch.querier.calltree import CallTree
from flamewatch.querier.formats.diff import render_diff
from flamewatch.querier.formats.flamegraph import render_flamegraph
from flamewatch.querier.formats.top import render_top
from flamewatch.querier.formats.tree import render_tree

__all__ = ["DIFF_RENDERERS", "RENDERERS", "DiffRenderer", "Renderer", "diff_renderer", "renderer"]


class Renderer(Protocol):
    """Renders one merged tree, keeping the output to about `max_nodes` nodes or rows."""

    def __call__(self, tree: CallTree, max_nodes: int) -> dict[str, Any]: ...


class DiffRenderer(Protocol):
    """Renders a comparison of two merged trees."""

    def __call__(self, left: CallTree, right: CallTree, max_nodes: int) -> dict[str, Any]: ...


RENDERERS: dict[str, Renderer] = {
    "flamegraph": render_flamegraph,
    "top": render_top,
    "tree": render_tree,
}

DIFF_RENDERERS: dict[str, DiffRenderer] = {
    "diff": render_diff,
}


def renderer(name: str) -> Renderer:
    """The renderer registered as `name`; a ValueError names the known formats otherwise."""
    return _lookup(RENDERERS, name)


def diff_renderer(name: str) -> DiffRenderer:
    """The comparison renderer registered as `name`."""
    return _lookup(DIFF_RENDERERS, name)


def _lookup(registry: dict[str, Any], name: str) -> Any:
    try:
        return registry[name]
    except KeyError:
        known = ", ".join(sorted(registry))
        raise ValueError(f"unknown format {name!r}; known formats: {known}") from None
