"""`flamewatch collector`: scrape pprof endpoints on schedule and push the profiles to an ingester."""

from __future__ import annotations

import argparse
import contextlib

from flamewatch.cli import flags
from flamewatch.cli.process import config_loader, listen, run, serve


def add_parser(sub) -> None:
    p = sub.add_parser("collector", help="scrape pprof endpoints and send the profiles to an ingester",
                       description="Discover targets from the configuration file, scrape their pprof endpoints "
                       "on schedule and push the profiles to an ingester over gRPC. Reloads the file on SIGHUP "
                       "or POST /-/reload; target health at GET /api/v1/targets.")
    p.add("--config.file", "YAML configuration with scrape_configs", dest="config_file", required=True)
    p.add("--ingester.address", "the ingester's gRPC address; batches are spread over every address a "
          "`dns:///NAME:PORT` resolves to, or that `ipv4:HOST:PORT,HOST:PORT` lists", dest="ingester_address",
          default="127.0.0.1:4101")
    p.add("--tenant", "tenant the profiles are stored under", default="anonymous")
    p.address("--http-address", "HTTP listen address (/api/v1/targets, /-/reload, /metrics)", ":4300")
    p.address("--grpc-address", "gRPC listen address (CollectorService)", ":4301")
    flags.common_flags(p)
    p.set_defaults(run=run_collector)


def run_collector(args: argparse.Namespace) -> int:
    from flamewatch.collector import assemble

    load = config_loader(args.config_file)
    load()  # a broken file fails before anything starts

    async def main(stack: contextlib.AsyncExitStack) -> None:
        listeners = listen(args, stack, args.http_address, args.grpc_address)
        await serve(args, listeners, assemble.assemble(stack, load, args.ingester_address, args.tenant))

    return run(main)
