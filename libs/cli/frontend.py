"""`flamewatch frontend`: serve the web UI and pass /api to a querier."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
from pathlib import Path

from flamewatch.cli import flags
from flamewatch.cli.process import listen, run, serve

# Where the UI's build lands (`make ui`): package data of flamewatch.frontend, so services/frontend/ui/dist
# in a checkout and flamewatch/frontend/ui/dist in an installed wheel. find_spec does not import the package.
DEFAULT_UI_DIR = Path(importlib.util.find_spec("flamewatch.frontend").origin).parent / "ui" / "dist"


def add_parser(sub) -> None:
    p = sub.add_parser("frontend", help="serve the web UI and pass /api to the querier",
                       description="Serve the web UI build and proxy /api/* to a querier, so a browser needs "
                       "one address.")
    p.address("--http-address", "HTTP listen address", ":8080")
    p.add("--querier.url", "the querier's HTTP base URL", dest="querier_url", default="http://127.0.0.1:4200")
    p.add("--collector.url", "the collector's HTTP base URL, for /api/v1/targets (the UI's Targets page); "
          "several, comma-separated, for collector shards: their targets are listed together",
          dest="collector_url", default=None)
    p.add("--ui.dir", "the UI build (index.html, assets/); without one a page points at the API", dest="ui_dir",
          default=str(DEFAULT_UI_DIR))
    flags.common_flags(p)
    p.set_defaults(run=run_frontend)


def run_frontend(args: argparse.Namespace) -> int:
    from flamewatch.frontend import assemble
    from flamewatch.rpc.readiness import upstream_readiness

    collectors = [url.strip() for url in (args.collector_url or "").split(",") if url.strip()]

    async def main(stack: contextlib.AsyncExitStack) -> None:
        listeners = listen(args, stack, args.http_address, None)
        await serve(args, listeners, assemble.assemble(stack, args.querier_url, collectors, Path(args.ui_dir)),
                    ready=upstream_readiness("querier", args.querier_url))

    return run(main)
