"""The frontend in a process: `flamewatch frontend` builds it here; `flamewatch all` serves its UI only
(its API is in the same process)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from flamewatch.frontend.service import api_proxy_router, collector_proxy_router, ui_router
from flamewatch.rpc.assembly import Assembly


def assemble(stack: contextlib.AsyncExitStack, querier_url: str, collector_urls: Sequence[str],
             ui_dir: Path | None) -> Assembly:
    """The UI, /api/* passed to the querier and /api/v1/targets to the collectors (listed together)."""
    import httpx

    from flamewatch.rpc.channels import http_client_options

    client = httpx.AsyncClient(timeout=600, **http_client_options())
    stack.push_async_callback(client.aclose)
    targets = [collector_proxy_router(collector_urls, client)] if collector_urls else []
    return Assembly([*targets, api_proxy_router(querier_url, client), ui_router(ui_dir)])
