"""The `flamewatch` command: the one place that knows every service and wires them together.

    flamewatch ingester   receive pprof pushes and store them (gRPC + HTTP /ingest)
    flamewatch querier    answer queries (gRPC QueryService + REST /api/v1)
    flamewatch collector  scrape pprof endpoints on schedule and push to an ingester
    flamewatch frontend   serve the web UI and pass /api to a querier
    flamewatch symbolizer store debug information and name addresses for the querier
    flamewatch all        all of them in one process, on embedded storage
    flamewatch upload     push pprof files to a running ingester
    flamewatch debuginfo upload   send ELF files with symbols or DWARF to a symbolizer

Flags may also be given as environment variables: FLAMEWATCH_<FLAG>, upper-cased with dots and dashes
as underscores (for example FLAMEWATCH_STORAGE_S3_SECRET_KEY). Flags win over the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from flamewatch.config import StorageConfig
from flamewatch.ingester.config import IngesterConfig, MaintenanceConfig
from flamewatch.limit_flags import ingest_limits, limit_flags
from flamewatch.querier.config import QuerierConfig
from flamewatch.rpc.readiness import no_dependencies, storage_readiness, upstream_readiness
from flamewatch.storage.errors import StorageError
from flamewatch.storage.objstore import FilesystemConfig, S3Config

log = logging.getLogger("flamewatch")

# Where the UI's build lands (`make ui`): package data of flamewatch.frontend, so services/frontend/ui/dist
# in a checkout and flamewatch/frontend/ui/dist in an installed wheel. find_spec does not import the package.
DEFAULT_UI_DIR = Path(importlib.util.find_spec("flamewatch.frontend").origin).parent / "ui" / "dist"


def _env_name(flag: str) -> str:
    return "FLAMEWATCH_" + flag.lstrip("-").replace(".", "_").replace("-", "_").upper()


class _Parser(argparse.ArgumentParser):
    """Adds each flag's environment variable to its help and takes defaults from it."""

    def add(self, flag: str, help: str, secret: bool = False, **kwargs):
        """`secret`: never show the value (a password, or a DSN that may hold one) in --help."""
        env = _env_name(flag)
        boolean = kwargs.get("action") in ("store_true", argparse.BooleanOptionalAction)
        if env in os.environ and not boolean:
            kwargs["default"] = os.environ[env]
            kwargs["required"] = False  # the environment gave it: argparse would still ask for the flag
        elif env in os.environ:
            kwargs["default"] = os.environ[env].lower() in ("1", "true", "yes")
        shown = kwargs.get("default")
        if secret and shown:
            shown = f"set by {env}, not shown"
        suffix = f" [env {env}]" + (f" (default: {shown})" if shown not in (None, False, "") else "")
        return self.add_argument(flag, help=help.replace("%", "%%") + suffix.replace("%", "%%"), **kwargs)

    def address(self, flag: str, help: str, default: str):
        return self.add(flag, help, default=default, type=_address)


def _address(text: str) -> str:
    """Checked when the flags are parsed, so a bad port is reported against its flag."""
    from flamewatch.rpc.listen import parse_address

    try:
        parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return text


def _storage_flags(p: _Parser) -> None:
    p.add("--data-dir", "directory for the embedded Postgres and the filesystem object store", default="./data")
    p.add("--storage.postgres-dsn", "Postgres to use, e.g. postgresql://user:pass@host:5432/flamewatch; "
          "without it an embedded Postgres runs under <data-dir>/postgres", dest="postgres_dsn", secret=True)
    p.add("--storage.s3.bucket", "store blocks in this S3 bucket instead of <data-dir>/objects", dest="s3_bucket")
    p.add("--storage.s3.endpoint", "S3 endpoint host:port", dest="s3_endpoint", default="127.0.0.1:9000")
    p.add("--storage.s3.access-key", "S3 access key", dest="s3_access_key")
    p.add("--storage.s3.secret-key", "S3 secret key", dest="s3_secret_key", secret=True)
    p.add("--storage.s3.region", "S3 region", dest="s3_region")
    p.add("--storage.s3.insecure", "talk plain HTTP to the S3 endpoint", dest="s3_insecure", action="store_true")
    p.add("--storage.s3.prefix", "put every key under this folder of the bucket", dest="s3_prefix", default="")


def _flush_flags(p: _Parser) -> None:
    p.add("--flush-interval", "seconds between block flushes: a push is acknowledged once the flush holding it "
          "is durable, so this bounds the acknowledgement latency", type=float,
          default=IngesterConfig.flush_interval_s)
    p.add("--flush-bytes", "flush a tenant's batch early at this many decompressed bytes", type=int,
          default=IngesterConfig.flush_bytes)


def _maintenance_flags(p: _Parser) -> None:
    p.add("--compaction.interval", "seconds between rounds of compaction (small blocks into hour and day "
          "blocks) and retention; 0 turns both off in this process", dest="compaction_interval", type=float,
          default=MaintenanceConfig.interval_s)
    p.add("--storage.retention", "keep profiles this long, e.g. 30d or 2w (whole days are dropped); by "
          "default they are kept for ever", dest="retention", type=_duration, default=None)
    p.add("--storage.retention-tenant", "a tenant's own retention, TENANT=DURATION (or TENANT=forever); "
          "repeat for more", dest="tenant_retention", action="append", default=[], type=_tenant_retention)


def _duration(text: str) -> int:
    from flamewatch.timerange import TimeParseError, parse_duration

    try:
        return parse_duration(text)
    except TimeParseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _tenant_retention(text: str) -> tuple[str, int | None]:
    tenant, sep, duration = text.partition("=")
    if not sep or not tenant:
        raise argparse.ArgumentTypeError(f'expected TENANT=DURATION such as acme=7d, got "{text}"')
    return tenant, None if duration == "forever" else _duration(duration)


def maintenance_config(args: argparse.Namespace) -> MaintenanceConfig:
    from flamewatch.storage.retention import RetentionPolicy

    return MaintenanceConfig(interval_s=args.compaction_interval,
                             retention=RetentionPolicy(args.retention, dict(args.tenant_retention)))


def _common_flags(p: _Parser, heap_profiling: bool = False) -> None:
    p.add("--log.level", "debug, info, warning or error", dest="log_level", default="info",
          choices=["debug", "info", "warning", "error"])
    p.add("--web.config.file", "Prometheus's web configuration file (tls_server_config, basic_auth_users), "
          "with Flamewatch's bearer_tokens, access (which tenants each credential may read and write) and "
          "client (how this process calls the other services); see the README's Security section. Without "
          "one, every request may read and write every tenant", dest="web_config_file", default=None)
    p.add("--self-profiling.heap", "trace Python allocations so /debug/pprof/heap can answer (tracemalloc: "
          "several times the CPU of the service's own work, so off by default)", dest="heap_profiling",
          action=argparse.BooleanOptionalAction, default=heap_profiling)


def storage_config(args: argparse.Namespace) -> StorageConfig:
    from flamewatch.storage.postgres import PostgresConfig

    data = Path(args.data_dir)
    if args.s3_bucket:
        if not (args.s3_access_key and args.s3_secret_key):
            raise ValueError("--storage.s3.bucket needs --storage.s3.access-key and --storage.s3.secret-key")
        store = S3Config(args.s3_bucket, args.s3_endpoint, args.s3_access_key, args.s3_secret_key,
                         region=args.s3_region, insecure=args.s3_insecure, prefix=args.s3_prefix)
    else:
        store = FilesystemConfig(str(data / "objects"))
    postgres = PostgresConfig(dsn=args.postgres_dsn) if args.postgres_dsn else \
        PostgresConfig(data_dir=str(data / "postgres"))
    return StorageConfig(store, postgres)


def local_disks(config: StorageConfig) -> list[str]:
    """The local directories the storage writes to (filesystem objects, embedded Postgres): readiness
    checks they have room."""
    store = [config.object_store.directory] if isinstance(config.object_store, FilesystemConfig) else []
    return store + ([config.postgres.data_dir] if config.postgres.data_dir and not config.postgres.dsn else [])


def _ingester_parser(sub) -> None:
    p = sub.add_parser("ingester", help="receive pprof pushes and store them durably",
                       description="Receive pprof profiles over gRPC (IngestService.Push) and HTTP "
                       "(POST /ingest), batch them into blocks and store them; a push is acknowledged once "
                       "its profiles are durable.")
    p.address("--http-address", "HTTP listen address (/ingest, /metrics, /healthz)", IngesterConfig.http_address)
    p.address("--grpc-address", "gRPC listen address (IngestService)", IngesterConfig.grpc_address)
    _flush_flags(p)
    limit_flags(p)
    _storage_flags(p)
    _maintenance_flags(p)
    _common_flags(p)
    p.set_defaults(run=run_ingester)


def _querier_parser(sub) -> None:
    p = sub.add_parser("querier", help="answer label, series, range and profile queries",
                       description="Serve QueryService over gRPC and the same operations over REST under "
                       "/api/v1/ (profile_types, labels, label/<name>/values, series, query_range, query, diff).")
    p.address("--http-address", "HTTP listen address (/api/v1, /metrics, /healthz)", QuerierConfig.http_address)
    p.address("--grpc-address", "gRPC listen address (QueryService)", QuerierConfig.grpc_address)
    p.add("--cache-bytes", "memory for parsed blocks and the profile entries queries decoded from them; "
          "the least recently used blocks go first", type=int, default=QuerierConfig.cache_bytes)
    p.add("--cache.disk-dir", "keep fetched blocks in this directory too, so repeated and restarted queries "
          "read local disk instead of the object store (off by default)", dest="disk_cache_dir", default=None)
    p.add("--cache.disk-bytes", "the most the disk cache keeps; the least recently read blocks go first",
          dest="disk_cache_bytes", type=int, default=QuerierConfig.disk_cache_bytes)
    p.add("--max-nodes", "default largest number of nodes in a flamegraph, top table or tree", type=int,
          default=QuerierConfig.default_max_nodes)
    _query_limit_flags(p)
    symbolizer_cli().querier_flags(p)
    _storage_flags(p)
    _common_flags(p)
    p.set_defaults(run=run_querier)


def _query_limit_flags(p: _Parser) -> None:
    p.add("--query.max-matchers", "the most label matchers one selector may have; a query with more is refused "
          "with 400 / INVALID_ARGUMENT", dest="query_max_matchers", type=int, default=QuerierConfig.max_matchers)
    p.add("--query.timeout", "seconds one query may run, its Postgres statements included, before it is stopped "
          "with 504 / DEADLINE_EXCEEDED (0: no limit)", dest="query_timeout", type=float,
          default=QuerierConfig.query_timeout_s)


def _query_limits(args: argparse.Namespace) -> dict:
    return {"max_matchers": args.query_max_matchers, "query_timeout_s": args.query_timeout}


def _all_parser(sub) -> None:
    p = sub.add_parser("all", help="everything in one process: collector, ingester, querier (the default "
                       "for a laptop)",
                       description="Run the collector, ingester and querier in one process behind the same "
                       "interfaces they use when split: REST API and /ingest on --http-address, gRPC on "
                       "--grpc-address. With no flags: data under ./data (embedded Postgres, filesystem "
                       "objects), and Flamewatch scrapes its own /debug/pprof endpoints.")
    p.add("--config.file", "YAML configuration with scrape_configs (default: scrape this process only)",
          dest="config_file")
    p.address("--http-address", "HTTP listen address (API, /ingest, /debug/pprof, /metrics); loopback only by "
              "default, :8080 for every interface", "127.0.0.1:8080")
    p.address("--grpc-address", "gRPC listen address (IngestService, QueryService, SymbolizerService); loopback "
              "only by default, :8081 for every interface", "127.0.0.1:8081")
    _query_limit_flags(p)
    symbolizer_cli().symbolizer_flags(p)
    _storage_flags(p)
    _flush_flags(p)
    limit_flags(p)
    _maintenance_flags(p)
    _common_flags(p)
    p.set_defaults(run=run_all)


def _frontend_parser(sub) -> None:
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
    _common_flags(p)
    p.set_defaults(run=run_frontend)


def _collector_parser(sub) -> None:
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
    _common_flags(p)
    p.set_defaults(run=run_collector)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flamewatch", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _ingester_parser(sub)
    _querier_parser(sub)
    _collector_parser(sub)
    _frontend_parser(sub)
    _all_parser(sub)
    upload_cli().add_parsers(sub)
    symbolizer_cli().add_parsers(sub)
    web_cli().add_parsers(sub)
    return parser


def upload_cli():
    from flamewatch import upload_cli

    return upload_cli


def web_cli():
    from flamewatch import web_cli

    return web_cli


def symbolizer_cli():
    """The symbolizer's wiring, its own module (imported late: it builds on this one)."""
    from flamewatch import symbolizer_cli

    return symbolizer_cli


# ------------------------------------------------------------------------------------- commands


def run_ingester(args: argparse.Namespace) -> int:
    from flamewatch.ingester.service import Ingester, http_router, register_grpc

    limits, tenant_limits = ingest_limits(args)
    config = IngesterConfig(http_address=args.http_address, grpc_address=args.grpc_address,
                            flush_interval_s=args.flush_interval, flush_bytes=args.flush_bytes, limits=limits,
                            maintenance=maintenance_config(args), tenant_limits=tenant_limits)

    async def main(stack: contextlib.AsyncExitStack) -> None:
        listeners = _listen(args, stack, config.http_address, config.grpc_address)
        store, db = _open_storage(stack, storage_config(args))
        ingester = Ingester(config, store, db)
        ingester.start()
        stack.push_async_callback(ingester.stop)
        await _serve(args, listeners, [http_router(ingester)], register_grpc(ingester),
                     ready=storage_readiness(store, db, local_disks(storage_config(args))))

    return _run(main)


def run_querier(args: argparse.Namespace) -> int:
    from flamewatch.querier.blocks import BlockCache
    from flamewatch.querier.connect import router as connect_router
    from flamewatch.querier.engine import Querier
    from flamewatch.querier.paths import PathIndex
    from flamewatch.querier.pyroscope_render import router as render_router
    from flamewatch.querier.rest import router
    from flamewatch.querier.service import register_grpc
    from flamewatch.storage.disk_cache import DiskCache

    config = QuerierConfig(http_address=args.http_address, grpc_address=args.grpc_address,
                           cache_bytes=args.cache_bytes, default_max_nodes=args.max_nodes,
                           disk_cache_dir=args.disk_cache_dir, disk_cache_bytes=args.disk_cache_bytes,
                           **_query_limits(args))

    async def main(stack: contextlib.AsyncExitStack) -> None:
        listeners = _listen(args, stack, config.http_address, config.grpc_address)
        store, db = _open_storage(stack, storage_config(args))
        source = DiskCache(store, config.disk_cache_dir, config.disk_cache_bytes) if config.disk_cache_dir else store
        blocks = BlockCache(source, config.cache_bytes, config.fetch_concurrency, PathIndex())
        stack.callback(blocks.close)
        querier = Querier(db, blocks, config, symbolizer_cli().symbolization(stack, args.symbolizer_address, db))
        routers = [router(querier), connect_router(querier), render_router(querier)]
        await _serve(args, listeners, routers, register_grpc(querier),
                     ready=storage_readiness(store, db))

    return _run(main)


def run_collector(args: argparse.Namespace) -> int:
    from flamewatch.collector.service import Collector, http_router, register_grpc

    load = _config_loader(args.config_file)
    load()

    async def main(stack: contextlib.AsyncExitStack) -> None:
        listeners = _listen(args, stack, args.http_address, args.grpc_address)
        collector = Collector(load, args.ingester_address, args.tenant)
        collector.start()
        stack.push_async_callback(collector.stop)
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, _reload_logged, collector)
        await _serve(args, listeners, [http_router(collector)], register_grpc(collector))

    return _run(main)


def _local(address: str) -> str:
    """An address this process can dial: a wildcard host becomes 127.0.0.1."""
    host, _, port = address.rpartition(":")
    return f"{'127.0.0.1' if host in ('', '0.0.0.0', '::', '[::]') else host}:{port}"


def _with_port(address: str, port: int) -> str:
    return f"{address.rpartition(':')[0]}:{port}"


def _browsable(address: str) -> str:
    """host:port as a browser on this machine reaches it: a wildcard or loopback host is localhost."""
    host, _, port = address.rpartition(":")
    return f"{'localhost' if host in ('', '0.0.0.0', '::', '[::]', '127.0.0.1') else host}:{port}"


def routers_of_all(ingester, querier, collector, ui_dir: Path | None = DEFAULT_UI_DIR) -> list:
    """The HTTP routers `flamewatch all` serves (besides /metrics, /debug/pprof and the probes every
    process has); the routes' tests build them from here, so a router added here is checked there."""
    from flamewatch.collector.service import http_router as collector_router
    from flamewatch.frontend.service import ui_router
    from flamewatch.ingester.service import http_router as ingest_router
    from flamewatch.querier.connect import router as query_connect_router
    from flamewatch.querier.pyroscope_render import router as render_router
    from flamewatch.querier.rest import router as query_router

    return [ingest_router(ingester), query_router(querier), query_connect_router(querier), render_router(querier),
            collector_router(collector), ui_router(ui_dir)]


def run_all(args: argparse.Namespace) -> int:
    from flamewatch.collector.config import parse_config
    from flamewatch.collector.service import Collector
    from flamewatch.collector.service import register_grpc as register_collector
    from flamewatch.ingester.service import Ingester
    from flamewatch.ingester.service import register_grpc as register_ingest
    from flamewatch.querier.blocks import BlockCache
    from flamewatch.querier.engine import Querier
    from flamewatch.querier.paths import PathIndex
    from flamewatch.querier.service import register_grpc as register_query
    from flamewatch.rpc.channels import identity
    from flamewatch.selfprofile.scrape_config import self_scrape_config

    load = _config_loader(args.config_file) if args.config_file else None
    if load:
        load()

    async def main(stack: contextlib.AsyncExitStack) -> None:
        listeners = _listen(args, stack, args.http_address, args.grpc_address)
        # The built-in configuration scrapes this process where it listens, port 0 resolved.
        text = self_scrape_config(_local(_with_port(args.http_address, listeners.http_port)), args.heap_profiling,
                                  identity())
        config = load or (lambda: parse_config(text, "built-in configuration"))
        store, db = _open_storage(stack, storage_config(args))
        limits, tenant_limits = ingest_limits(args)
        ingester = Ingester(IngesterConfig(flush_interval_s=args.flush_interval, flush_bytes=args.flush_bytes,
                                           maintenance=maintenance_config(args), limits=limits,
                                           tenant_limits=tenant_limits), store, db)
        querier_config = QuerierConfig(cache_bytes=QuerierConfig.embedded_cache_bytes, **_query_limits(args))
        blocks = BlockCache(store, querier_config.cache_bytes, querier_config.fetch_concurrency, PathIndex())
        stack.callback(blocks.close)
        wiring = symbolizer_cli()
        _, register_symbolizer = wiring.open_symbolizer(stack, store, wiring.symbolizer_config(args))
        querier = Querier(db, blocks, querier_config,
                          wiring.symbolization(stack, _local(_with_port(args.grpc_address, listeners.grpc_port)), db))
        collector = Collector(config, _local(_with_port(args.grpc_address, listeners.grpc_port)))
        ingester.start()
        stack.push_async_callback(ingester.stop)
        collector.start()
        stack.push_async_callback(collector.stop)
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, _reload_logged, collector)

        def register(server) -> None:
            register_ingest(ingester)(server)
            register_query(querier)(server)
            register_collector(collector)(server)
            register_symbolizer(server)

        routers = routers_of_all(ingester, querier, collector)
        # The collector stops while the servers still run, so what it has queued reaches the ingester.
        await _serve(args, listeners, routers, register, before_stop=collector.stop,
                     ready=storage_readiness(store, db, local_disks(storage_config(args))),
                     ready_message=f"Flamewatch is ready: open {'https' if listeners.tls else 'http'}://"
                     f"{_browsable(_with_port(args.http_address, listeners.http_port))} (the API is "
                     "under /api/v1, scrape targets at /api/v1/targets); Ctrl-C stops it")

    return _run(main)


def run_frontend(args: argparse.Namespace) -> int:
    import httpx

    from flamewatch.frontend.service import api_proxy_router, collector_proxy_router, ui_router
    from flamewatch.rpc.channels import http_client_options

    async def main(stack: contextlib.AsyncExitStack) -> None:
        listeners = _listen(args, stack, args.http_address, None)
        client = httpx.AsyncClient(timeout=600, **http_client_options())
        stack.push_async_callback(client.aclose)
        collectors = [url.strip() for url in (args.collector_url or "").split(",") if url.strip()]
        targets = [collector_proxy_router(collectors, client)] if collectors else []
        routers = [*targets, api_proxy_router(args.querier_url, client), ui_router(Path(args.ui_dir))]
        await _serve(args, listeners, routers, None, ready=upstream_readiness("querier", args.querier_url))

    return _run(main)


def _run(main) -> int:
    """Run `main(stack)`; whatever it opened is closed through the stack, last opened first, whether
    it returns or fails part way through starting."""

    async def run() -> None:
        async with contextlib.AsyncExitStack() as stack:
            await main(stack)
        log.info("stopped")

    asyncio.run(run())
    return 0


def _listen(args: argparse.Namespace, stack: contextlib.AsyncExitStack, http_address: str,
            grpc_address: str | None):
    """Bind the ports first: a taken port fails before storage or services start. Every gRPC call is
    checked against the web configuration file (`--web.config.file`), as every HTTP request is in `_serve`."""
    from flamewatch.rpc.auth import AuthInterceptor
    from flamewatch.rpc.listen import listen

    security = web_security(args)
    listeners = listen(http_address, grpc_address, interceptors=[AuthInterceptor(security.authenticator)],
                       tls=security.server_tls)
    stack.callback(listeners.close)
    security.warn_if_open(listeners.http_address, listeners.grpc_address)
    return listeners


def web_security(args: argparse.Namespace):
    """The process's web configuration, read once: its authenticator and the identity its clients use."""
    from flamewatch.auth.process import WebSecurity

    if getattr(args, "web_security", None) is None:
        args.web_security = WebSecurity.load(args.web_config_file, in_process=args.command == "all")
    return args.web_security


def _config_loader(path: str):
    from flamewatch.collector.config import ConfigError, load_config

    def load():
        try:
            return load_config(path)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from exc
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the configuration file: {exc.strerror}") from exc

    return load


def _reload_logged(collector) -> None:
    try:
        collector.reload()
    except ValueError as exc:
        log.error("reload failed, keeping the running configuration: %s", exc)


def _open_storage(stack: contextlib.AsyncExitStack, config: StorageConfig):
    from flamewatch.storage.objstore import open_object_store
    from flamewatch.storage.postgres import open_database

    db = open_database(config.postgres)
    stack.callback(db.close)
    store = open_object_store(config.object_store)
    stack.callback(store.close)
    log.info("object store: %s", config.object_store)
    return store, db


async def _serve(args, listeners, routers, register, before_stop=None, ready_message=None,
                 ready=None) -> None:
    """Every process serves its routers plus /debug/pprof (itself), /metrics, /healthz and /readyz."""
    from flamewatch.rpc.http import build_app
    from flamewatch.rpc.runtime import serve
    from flamewatch.selfprofile.routes import router as profiling_router

    routers = [*routers, profiling_router(heap_enabled=args.heap_profiling)]
    _start_heap_tracking(args)  # after start-up: tracing every import would slow it down many times
    app = build_app(routers, ready=ready or no_dependencies(), authenticator=web_security(args).authenticator)
    await serve(listeners, app, register, before_stop, ready_message)


def _start_heap_tracking(args: argparse.Namespace) -> None:
    from flamewatch.selfprofile.heap import start_heap_tracking

    if getattr(args, "heap_profiling", False):
        start_heap_tracking()


# What a user can fix (a flag, a file, a port, the storage): one line, no traceback. Anything else is a
# bug and keeps its traceback; so does everything at --log.level=debug.
_USER_ERRORS = (ValueError, OSError, StorageError)


def main(argv: Sequence[str] | None = None) -> int:
    # Only child processes that exec at once are forked (the embedded Postgres); gRPC's fork handlers
    # would just log that they were skipped.
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for chatty in ("pgserver", "httpx"):  # they log every command or request at INFO
        logging.getLogger(chatty).setLevel(logging.WARNING)
    try:
        return args.run(args)
    except _USER_ERRORS as exc:
        if args.log_level == "debug":
            log.exception("flamewatch %s failed", args.command)
        print(f"flamewatch {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
