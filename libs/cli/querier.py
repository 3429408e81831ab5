"""`flamewatch querier`: answer queries over gRPC and REST."""

from __future__ import annotations

import argparse
import contextlib

from flamewatch.cli import flags
from flamewatch.cli.alerts import alert_sender, alerting_config, alerting_flags
from flamewatch.cli.process import listen, open_storage, run, serve, watch_parent
from flamewatch.cli.symbolizer import querier_flags as symbolizer_address_flag
from flamewatch.querier.config import QuerierConfig


def add_parser(sub) -> None:
    p = sub.add_parser("querier", help="answer label, series, range and profile queries",
                       description="Serve QueryService over gRPC and the same operations over REST under "
                       "/api/v1/ (profile_types, labels, label/<name>/values, series, query_range, query, diff).")
    p.address("--http-address", "HTTP listen address (/api/v1, /metrics, /healthz)", QuerierConfig.http_address)
    p.address("--grpc-address", "gRPC listen address (QueryService)", QuerierConfig.grpc_address)
    flags.cache_bytes_flag(p, QuerierConfig.cache_bytes)
    p.add("--cache.disk-dir", "keep fetched blocks in this directory too, so repeated and restarted queries "
          "read local disk instead of the object store (off by default)", dest="disk_cache_dir", default=None)
    p.add("--cache.disk-bytes", "the most the disk cache keeps; the least recently read blocks go first",
          dest="disk_cache_bytes", type=flags.byte_size, default=QuerierConfig.disk_cache_bytes)
    p.add("--max-nodes", "default largest number of nodes in a flamegraph, top table or tree", type=int,
          default=QuerierConfig.default_max_nodes)
    flags.query_limit_flags(p)
    p.add("--query.peers", "other querier replicas to split long merges with, by time, over gRPC: "
          "dns:///NAME:PORT (every address a headless Service resolves to, re-resolved every 30 s, this pod's own "
          "left out) or HOST:PORT,HOST:PORT; each merges a piece of the range from the index to the blocks and "
          "this querier adds the pieces up (the answer is the same as alone). With a web configuration file, the "
          "client identity must read every tenant", dest="query_peers", default=None)
    # `flamewatch all`'s query workers: stop once that process is gone
    p.add_argument("--parent-pid", dest="parent_pid", type=int, default=None, help=argparse.SUPPRESS)
    flags.rules_flag(p)
    symbolizer_address_flag(p)
    flags.storage_flags(p)
    alerting_flags(p)
    flags.common_flags(p)
    p.set_defaults(run=run_querier)


def run_querier(args: argparse.Namespace) -> int:
    from flamewatch.events import api as events
    from flamewatch.querier import assemble
    from flamewatch.querier.fanout import PeerAddresses
    from flamewatch.rpc.assembly import combine
    from flamewatch.rpc.readiness import storage_readiness

    config = QuerierConfig(http_address=args.http_address, grpc_address=args.grpc_address,
                           cache_bytes=args.cache_bytes, default_max_nodes=args.max_nodes,
                           disk_cache_dir=args.disk_cache_dir, disk_cache_bytes=args.disk_cache_bytes,
                           **flags.query_limits(args))
    alerting = alerting_config(args)

    peers = PeerAddresses(args.query_peers) if args.query_peers else None  # a malformed list fails the start

    async def main(stack: contextlib.AsyncExitStack) -> None:
        listeners = listen(args, stack, config.http_address, config.grpc_address)
        watch_parent(stack, args.parent_pid, "query worker")
        store, db = open_storage(stack, flags.storage_config(args))
        notify = alert_sender(stack, alerting, db)
        recording = events.assemble(db, notify)
        querier = assemble.assemble(stack, config, store, db, args.symbolizer_address, args.rules_file,
                                    recording.parts["recorder"].record, peers)
        await serve(args, listeners, combine(querier, recording),
                    ready=storage_readiness(store, db))

    return run(main)
