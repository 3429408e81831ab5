"""`flamewatch ingester`: receive pprof pushes and store them."""

from __future__ import annotations

import argparse
import contextlib

from flamewatch.cli import flags
from flamewatch.cli.alerts import alert_sender, alerting_config, alerting_flags
from flamewatch.cli.limits import ingest_limits, limit_flags
from flamewatch.cli.process import listen, open_storage, run, serve
from flamewatch.ingester.config import IngesterConfig


def add_parser(sub) -> None:
    p = sub.add_parser("ingester", help="receive pprof pushes and store them durably",
                       description="Receive pprof profiles over gRPC (IngestService.Push) and HTTP "
                       "(POST /ingest), batch them into blocks and store them; a push is acknowledged once "
                       "its profiles are durable.")
    p.address("--http-address", "HTTP listen address (/ingest, /metrics, /healthz)", IngesterConfig.http_address)
    p.address("--grpc-address", "gRPC listen address (IngestService)", IngesterConfig.grpc_address)
    flags.flush_flags(p)
    limit_flags(p)
    flags.storage_flags(p)
    flags.maintenance_flags(p)
    alerting_flags(p)
    flags.common_flags(p)
    p.set_defaults(run=run_ingester)


def ingester_config(args: argparse.Namespace, **addresses: str) -> IngesterConfig:
    """The ingester's config from its flags (`flamewatch all` has the same ones but its own addresses)."""
    limits, tenant_limits = ingest_limits(args)
    return IngesterConfig(**addresses, flush_interval_s=args.flush_interval, flush_bytes=args.flush_bytes,
                          limits=limits, maintenance=flags.maintenance_config(args), tenant_limits=tenant_limits)


def run_ingester(args: argparse.Namespace) -> int:
    from flamewatch.events import api as events
    from flamewatch.ingester import assemble
    from flamewatch.rpc.assembly import combine
    from flamewatch.rpc.readiness import storage_readiness

    config = ingester_config(args, http_address=args.http_address, grpc_address=args.grpc_address)
    storage = flags.storage_config(args)
    alerting = alerting_config(args)

    async def main(stack: contextlib.AsyncExitStack) -> None:
        listeners = listen(args, stack, config.http_address, config.grpc_address)
        store, db = open_storage(stack, storage)
        notify = alert_sender(stack, alerting)
        await serve(args, listeners, combine(assemble.assemble(stack, config, store, db),
                                             events.assemble(db, notify)),
                    ready=storage_readiness(store, db, flags.local_disks(storage)))

    return run(main)
