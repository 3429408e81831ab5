"""`flamewatch all`: every service in one process, on embedded storage by default (the laptop mode).

Each service is assembled as its own command assembles it (`services/<svc>/assemble.py`); the process
shares one storage, one HTTP and one gRPC port, and the collector pushes to the ingester through the
process's own gRPC port, as it would to another process.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from pathlib import Path

from flamewatch.cli import flags
from flamewatch.cli.alerts import alert_sender, alerting_config, alerting_flags
from flamewatch.cli.compactor import start_beside as start_compactor
from flamewatch.cli.frontend import DEFAULT_UI_DIR
from flamewatch.cli.ingester import ingester_config
from flamewatch.cli.limits import limit_flags
from flamewatch.cli.process import browsable, config_loader, listen, local, open_storage, run, serve, with_port
from flamewatch.cli.querypool import QueryWorkers, default_workers
from flamewatch.cli.symbolizer import symbolizer_config, symbolizer_flags
from flamewatch.querier.config import QuerierConfig


def add_parser(sub) -> None:
    p = sub.add_parser("all", help="everything in one process: collector, ingester, querier (the default "
                       "for a laptop)",
                       description="Run the collector, ingester and querier in one process behind the same "
                       "interfaces they use when split: REST API and /ingest on --http-address, gRPC on "
                       "--grpc-address. With no flags: data under ./data (embedded Postgres, filesystem "
                       "objects), and Flamewatch scrapes its own /debug/pprof endpoints. Compaction and retention run "
                       "in a child process (`flamewatch compactor`) at a lower CPU priority.")
    p.add("--config.file", "YAML configuration with scrape_configs (default: scrape this process only)",
          dest="config_file")
    p.address("--http-address", "HTTP listen address (API, /ingest, /debug/pprof, /metrics); loopback only by "
              "default, :8080 for every interface", "127.0.0.1:8080")
    p.address("--grpc-address", "gRPC listen address (IngestService, QueryService, SymbolizerService); loopback "
              "only by default, :8081 for every interface", "127.0.0.1:8081")
    flags.query_limit_flags(p)
    flags.cache_bytes_flag(p, QuerierConfig.embedded_cache_bytes, ", in this process and in each query worker")
    p.add("--query.workers", "querier processes beside this one that take pieces of long merges (cut by time), "
          "so a month's flamegraph uses more than one core; started at the first merge long enough to split, "
          "stopped after 5 minutes without one, each with its own block cache of --cache-bytes (0: off; default "
          "one per core beyond the first, at most 3)", dest="query_workers", type=int, default=default_workers())
    flags.rules_flag(p)
    symbolizer_flags(p)
    flags.storage_flags(p)
    flags.flush_flags(p)
    limit_flags(p)
    flags.maintenance_flags(p)
    alerting_flags(p, external_url_default="this process's own address")
    flags.common_flags(p)
    p.set_defaults(run=run_all)


def routers_of_all(ingester, querier, collector, ui_dir: Path | None = DEFAULT_UI_DIR) -> list:
    """The HTTP routers `flamewatch all` serves (besides /metrics, /debug/pprof and the probes every
    process has); the routes' tests build them from here, so a router added to a service is checked there."""
    from flamewatch.collector.assemble import routers as collector_routers
    from flamewatch.events.api import Recorder
    from flamewatch.events.api import router as events_router
    from flamewatch.frontend.service import ui_router
    from flamewatch.ingester.assemble import routers as ingester_routers
    from flamewatch.querier.assemble import routers as querier_routers
    from flamewatch.rpc.reload import reload_router

    return [*ingester_routers(ingester), events_router(Recorder(querier.db)), *querier_routers(querier),
            *collector_routers(collector), reload_router(lambda: None), ui_router(ui_dir)]


def run_all(args: argparse.Namespace) -> int:
    from flamewatch.collector import assemble as collector
    from flamewatch.collector.config import parse_config
    from flamewatch.events import api as events
    from flamewatch.frontend.service import ui_router
    from flamewatch.ingester import assemble as ingester
    from flamewatch.querier import assemble as querier
    from flamewatch.rpc.assembly import Assembly, combine
    from flamewatch.rpc.channels import identity
    from flamewatch.rpc.readiness import storage_readiness
    from flamewatch.selfprofile.scrape_config import self_scrape_config
    from flamewatch.symbolizer import assemble as symbolizer

    load = config_loader(args.config_file) if args.config_file else None
    if load:
        load()  # a broken file fails before anything starts
    storage = flags.storage_config(args)
    alerting_config(args)  # bad alerting flags fail before anything starts

    async def main(stack: contextlib.AsyncExitStack) -> None:
        listeners = listen(args, stack, args.http_address, args.grpc_address)
        own_grpc = local(with_port(args.grpc_address, listeners.grpc_port))  # port 0 resolved
        own_http = with_port(args.http_address, listeners.http_port)
        own_url = f"{'https' if listeners.tls else 'http'}://{browsable(own_http)}"
        # The built-in configuration scrapes this process where it listens.
        text = self_scrape_config(local(own_http), args.heap_profiling, identity())
        config = load or (lambda: parse_config(text, "built-in configuration"))
        store, db = open_storage(stack, storage)
        start_compactor(stack, args, store, db)  # compaction's CPU and memory peaks stay out of this process
        notify = alert_sender(stack, alerting_config(args, own_url), db)
        querier_config = QuerierConfig(cache_bytes=args.cache_bytes, **flags.query_limits(args))
        workers = None
        if args.query_workers > 0:
            workers = QueryWorkers(args.query_workers, args, db.dsn, own_grpc, args.cache_bytes)
            stack.callback(workers.stop)
        # Listed in the order they start; the stack stops them in reverse: the collector first (after it
        # has sent what it queued, `before_stop`), the ingester's last flush last.
        recording = events.assemble(db, notify)
        services = combine(ingester.assemble(stack, _without_maintenance(ingester_config(args)), store, db), recording,
                           symbolizer.assemble(stack, store, symbolizer_config(args)),
                           querier.assemble(stack, querier_config, store, db, own_grpc, args.rules_file,
                                            recording.parts["recorder"].record, workers),
                           collector.assemble(stack, config, own_grpc),
                           Assembly([ui_router(DEFAULT_UI_DIR)]))
        await serve(args, listeners, services, ready=storage_readiness(store, db, flags.local_disks(storage)),
                    ready_message=f"Flamewatch is ready: open {own_url} (the API is under /api/v1, scrape targets "
                    "at /api/v1/targets); "
                    "Ctrl-C stops it")

    return run(main)


def _without_maintenance(config):
    """The ingester's config with no compaction loop of its own: the compactor process runs it."""
    return dataclasses.replace(config, maintenance=dataclasses.replace(config.maintenance, interval_s=0))
