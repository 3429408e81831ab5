"""The `flamewatch` command: the one place that knows every service and wires them together.

    flamewatch ingester   receive pprof pushes and store them (gRPC + HTTP /ingest)
    flamewatch querier    answer queries (gRPC QueryService + REST /api/v1)
    flamewatch collector  scrape pprof endpoints on schedule and push to an ingester
    flamewatch frontend   serve the web UI and pass /api to a querier
    flamewatch all        all of them in one process, on embedded storage
    flamewatch upload     push pprof files to a running ingester

Flags may also be given as environment variables: FLAMEWATCH_<FLAG>, upper-cased with dots and dashes
as underscores (for example FLAMEWATCH_STORAGE_S3_SECRET_KEY). Flags win over the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from flamewatch.config import IngesterConfig, IngestLimits, QuerierConfig, StorageConfig
from flamewatch.storage.objstore import FilesystemConfig, S3Config
from flamewatch.storage.postgres import PostgresConfig

log = logging.getLogger("flamewatch")

# Where the UI's build lands in a checkout (`make ui`).
DEFAULT_UI_DIR = Path(__file__).resolve().parent.parent / "services" / "frontend" / "ui" / "dist"


def _env_name(flag: str) -> str:
    return "FLAMEWATCH_" + flag.lstrip("-").replace(".", "_").replace("-", "_").upper()


class _Parser(argparse.ArgumentParser):
    """Adds each flag's environment variable to its help and takes defaults from it."""

    def add(self, flag: str, help: str, **kwargs):
        env = _env_name(flag)
        boolean = kwargs.get("action") in ("store_true", argparse.BooleanOptionalAction)
        if env in os.environ and not boolean:
            kwargs["default"] = os.environ[env]
        elif env in os.environ:
            kwargs["default"] = os.environ[env].lower() in ("1", "true", "yes")
        shown = kwargs.get("default")
        suffix = f" [env {env}]" + (f" (default: {shown})" if shown not in (None, False, "") else "")
        return self.add_argument(flag, help=help + suffix, **kwargs)


def _storage_flags(p: _Parser) -> None:
    p.add("--data-dir", "directory for the embedded Postgres and the filesystem object store", default="./data")
    p.add("--storage.postgres-dsn", "Postgres to use, e.g. postgresql://user:pass@host:5432/flamewatch; "
          "without it an embedded Postgres runs under <data-dir>/postgres", dest="postgres_dsn")
    p.add("--storage.s3.bucket", "store blocks in this S3 bucket instead of <data-dir>/objects", dest="s3_bucket")
    p.add("--storage.s3.endpoint", "S3 endpoint host:port", dest="s3_endpoint", default="127.0.0.1:9000")
    p.add("--storage.s3.access-key", "S3 access key", dest="s3_access_key")
    p.add("--storage.s3.secret-key", "S3 secret key", dest="s3_secret_key")
    p.add("--storage.s3.region", "S3 region", dest="s3_region")
    p.add("--storage.s3.insecure", "talk plain HTTP to the S3 endpoint", dest="s3_insecure", action="store_true")
    p.add("--storage.s3.prefix", "put every key under this folder of the bucket", dest="s3_prefix", default="")


def _common_flags(p: _Parser, heap_profiling: bool = False) -> None:
    p.add("--log.level", "debug, info, warning or error", dest="log_level", default="info",
          choices=["debug", "info", "warning", "error"])
    p.add("--self-profiling.heap", "trace Python allocations so /debug/pprof/heap can answer (tracemalloc: "
          "several times the CPU of the service's own work, so off by default)", dest="heap_profiling",
          action=argparse.BooleanOptionalAction, default=heap_profiling)


def storage_config(args: argparse.Namespace) -> StorageConfig:
    data = Path(args.data_dir)
    if args.s3_bucket:
        if not (args.s3_access_key and args.s3_secret_key):
            raise SystemExit("--storage.s3.bucket needs --storage.s3.access-key and --storage.s3.secret-key")
        store = S3Config(args.s3_bucket, args.s3_endpoint, args.s3_access_key, args.s3_secret_key,
                         region=args.s3_region, insecure=args.s3_insecure, prefix=args.s3_prefix)
    else:
        store = FilesystemConfig(str(data / "objects"))
    postgres = PostgresConfig(dsn=args.postgres_dsn) if args.postgres_dsn else \
        PostgresConfig(data_dir=str(data / "postgres"))
    return StorageConfig(store, postgres)


def _ingester_parser(sub) -> None:
    p = sub.add_parser("ingester", help="receive pprof pushes and store them durably",
                       description="Receive pprof profiles over gRPC (IngestService.Push) and HTTP "
                       "(POST /ingest), batch them into blocks and store them; a push is acknowledged once "
                       "its profiles are durable.")
    p.add("--http-address", "HTTP listen address (/ingest, /metrics, /healthz)", default=IngesterConfig.http_address)
    p.add("--grpc-address", "gRPC listen address (IngestService)", default=IngesterConfig.grpc_address)
    p.add("--flush-interval", "seconds between block flushes", type=float, default=IngesterConfig.flush_interval_s)
    p.add("--flush-bytes", "flush a tenant's batch early at this many decompressed bytes", type=int,
          default=IngesterConfig.flush_bytes)
    defaults = IngestLimits()
    for name in defaults.__dataclass_fields__:
        flag = "--limits." + name.replace("_", "-")
        p.add(flag, f"reject pushes over this {name.replace('_', ' ')}", dest=f"limit_{name}", type=int,
              default=getattr(defaults, name))
    _storage_flags(p)
    _common_flags(p)
    p.set_defaults(run=run_ingester)


def _querier_parser(sub) -> None:
    p = sub.add_parser("querier", help="answer label, series, range and profile queries",
                       description="Serve QueryService over gRPC and the same operations over REST under "
                       "/api/v1/ (profile_types, labels, label/<name>/values, series, query_range, query, diff).")
    p.add("--http-address", "HTTP listen address (/api/v1, /metrics, /healthz)", default=QuerierConfig.http_address)
    p.add("--grpc-address", "gRPC listen address (QueryService)", default=QuerierConfig.grpc_address)
    p.add("--cache-bytes", "memory for parsed blocks", type=int, default=QuerierConfig.cache_bytes)
    p.add("--max-nodes", "default largest number of nodes in a flamegraph, top table or tree", type=int,
          default=QuerierConfig.default_max_nodes)
    _storage_flags(p)
    _common_flags(p)
    p.set_defaults(run=run_querier)


def _all_parser(sub) -> None:
    p = sub.add_parser("all", help="everything in one process: collector, ingester, querier (the default "
                       "for a laptop)",
                       description="Run the collector, ingester and querier in one process behind the same "
                       "interfaces they use when split: REST API and /ingest on --http-address, gRPC on "
                       "--grpc-address. With no flags: data under ./data (embedded Postgres, filesystem "
                       "objects), and Flamewatch scrapes its own /debug/pprof endpoints.")
    p.add("--config.file", "YAML configuration with scrape_configs (default: scrape this process only)",
          dest="config_file")
    p.add("--http-address", "HTTP listen address (API, /ingest, /debug/pprof, /metrics)", default=":8080")
    p.add("--grpc-address", "gRPC listen address (IngestService, QueryService)", default=":8081")
    _storage_flags(p)
    _common_flags(p)
    p.set_defaults(run=run_all)


def _frontend_parser(sub) -> None:
    p = sub.add_parser("frontend", help="serve the web UI and pass /api to the querier",
                       description="Serve the web UI build and proxy /api/* to a querier, so a browser needs "
                       "one address.")
    p.add("--http-address", "HTTP listen address", default=":8080")
    p.add("--querier.url", "the querier's HTTP base URL", dest="querier_url", default="http://127.0.0.1:4200")
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
    p.add("--ingester.address", "the ingester's gRPC address", dest="ingester_address", default="127.0.0.1:4101")
    p.add("--tenant", "tenant the profiles are stored under", default="anonymous")
    p.add("--http-address", "HTTP listen address (/api/v1/targets, /-/reload, /metrics)", default=":4300")
    p.add("--grpc-address", "gRPC listen address (CollectorService)", default=":4301")
    _common_flags(p)
    p.set_defaults(run=run_collector)


def _upload_parser(sub) -> None:
    p = sub.add_parser("upload", help="push pprof files to a running ingester",
                       description="Push pprof files (gzip or raw) to an ingester's HTTP port, one request per "
                       "file. Exits non-zero with the server's message when a file is refused.")
    p.add_argument("files", nargs="+", type=Path, help="pprof files, e.g. cpu.pb.gz")
    p.add("--url", "the ingester (or flamewatch all) base URL", default="http://127.0.0.1:4100")
    p.add("--label", "series label k=v; repeat for more", action="append", default=[], dest="labels")
    p.add("--tenant", "tenant id sent as X-Scope-OrgID", default="anonymous")
    p.add("--name", "profile name (process_cpu, memory, goroutine, mutex, block, ...); by default taken "
          "from the file name when it names a Go profile", default=None)
    p.add("--timeout", "seconds to wait for each upload", type=float, default=30.0)
    p.set_defaults(run=run_upload, log_level="warning")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flamewatch", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _ingester_parser(sub)
    _querier_parser(sub)
    _collector_parser(sub)
    _frontend_parser(sub)
    _all_parser(sub)
    _upload_parser(sub)
    return parser


# ------------------------------------------------------------------------------------- commands


def run_ingester(args: argparse.Namespace) -> int:
    from flamewatch.ingester.service import Ingester, http_router, register_grpc

    limits = IngestLimits(**{n: getattr(args, f"limit_{n}") for n in IngestLimits.__dataclass_fields__})
    config = IngesterConfig(http_address=args.http_address, grpc_address=args.grpc_address,
                            flush_interval_s=args.flush_interval, flush_bytes=args.flush_bytes, limits=limits)

    async def main() -> None:
        store, db = _open_storage(storage_config(args))
        ingester = Ingester(config, store, db)
        ingester.start()

        async def stop() -> None:
            await ingester.stop()
            _close_storage(store, db)

        await _serve(args, [http_router(ingester)], config.http_address, config.grpc_address,
                     register_grpc(ingester), stop)

    asyncio.run(main())
    return 0


def run_querier(args: argparse.Namespace) -> int:
    from flamewatch.querier.blocks import BlockCache
    from flamewatch.querier.engine import Querier
    from flamewatch.querier.paths import PathIndex
    from flamewatch.querier.rest import router
    from flamewatch.querier.service import register_grpc

    config = QuerierConfig(http_address=args.http_address, grpc_address=args.grpc_address,
                           cache_bytes=args.cache_bytes, default_max_nodes=args.max_nodes)

    async def main() -> None:
        store, db = _open_storage(storage_config(args))
        blocks = BlockCache(store, config.cache_bytes, config.fetch_concurrency, PathIndex())
        querier = Querier(db, blocks, config)

        async def stop() -> None:
            blocks.close()
            _close_storage(store, db)

        await _serve(args, [router(querier)], config.http_address, config.grpc_address, register_grpc(querier), stop)

    asyncio.run(main())
    return 0


def run_collector(args: argparse.Namespace) -> int:
    from flamewatch.collector.service import Collector, http_router, register_grpc

    load = _config_loader(args.config_file)
    try:
        load()
    except (OSError, ValueError) as exc:
        raise SystemExit(f"flamewatch collector: {exc}") from exc

    async def main() -> None:
        collector = Collector(load, args.ingester_address, args.tenant)
        collector.start()
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, _reload_logged, collector)
        await _serve(args, [http_router(collector)], args.http_address, args.grpc_address, register_grpc(collector),
                     collector.stop)

    asyncio.run(main())
    return 0


SELF_SCRAPE = """
scrape_configs:
  - job_name: flamewatch
    scrape_interval: 15s
    static_configs: [{{targets: ["{address}"], labels: {{service_name: flamewatch}}}}]
    profiling_config:
      pprof_config:
        memory: {{enabled: {heap}, path: /debug/pprof/heap}}
        goroutine: {{enabled: false}}
        mutex: {{enabled: false}}
        block: {{enabled: false}}
"""


def _local(address: str) -> str:
    """An address this process can dial: a wildcard host becomes 127.0.0.1."""
    host, _, port = address.rpartition(":")
    return f"{'127.0.0.1' if host in ('', '0.0.0.0', '::', '[::]') else host}:{port}"


def run_all(args: argparse.Namespace) -> int:
    from flamewatch.collector.service import Collector
    from flamewatch.collector.service import http_router as collector_router
    from flamewatch.collector.service import register_grpc as register_collector
    from flamewatch.frontend.service import ui_router
    from flamewatch.ingester.service import Ingester
    from flamewatch.ingester.service import http_router as ingest_router
    from flamewatch.ingester.service import register_grpc as register_ingest
    from flamewatch.querier.blocks import BlockCache
    from flamewatch.querier.engine import Querier
    from flamewatch.querier.paths import PathIndex
    from flamewatch.querier.rest import router as query_router
    from flamewatch.querier.service import register_grpc as register_query
    from flamewatch.scrapeconfig import parse_config

    if args.config_file:
        load = _config_loader(args.config_file)
    else:
        text = SELF_SCRAPE.format(address=_local(args.http_address), heap=str(args.heap_profiling).lower())
        load = lambda: parse_config(text, "built-in configuration")  # noqa: E731
    try:
        load()
    except (OSError, ValueError) as exc:
        raise SystemExit(f"flamewatch all: {exc}") from exc

    async def main() -> None:
        store, db = _open_storage(storage_config(args))
        ingester = Ingester(IngesterConfig(), store, db)
        querier_config = QuerierConfig(cache_bytes=QuerierConfig.embedded_cache_bytes)
        blocks = BlockCache(store, querier_config.cache_bytes, querier_config.fetch_concurrency, PathIndex())
        querier = Querier(db, blocks, querier_config)
        collector = Collector(load, _local(args.grpc_address))
        ingester.start()
        collector.start()
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, _reload_logged, collector)

        def register(server) -> None:
            register_ingest(ingester)(server)
            register_query(querier)(server)
            register_collector(collector)(server)

        async def stop() -> None:
            await ingester.stop()
            blocks.close()
            _close_storage(store, db)

        routers = [ingest_router(ingester), query_router(querier), collector_router(collector),
                   ui_router(DEFAULT_UI_DIR)]
        await _serve(args, routers, args.http_address, args.grpc_address, register, stop,
                     before_stop=collector.stop)

    asyncio.run(main())
    return 0


def run_frontend(args: argparse.Namespace) -> int:
    import httpx

    from flamewatch.frontend.service import api_proxy_router, ui_router

    async def main() -> None:
        client = httpx.AsyncClient(timeout=600)
        routers = [api_proxy_router(args.querier_url, client), ui_router(Path(args.ui_dir))]
        await _serve(args, routers, args.http_address, None, None, client.aclose)

    asyncio.run(main())
    return 0


def _config_loader(path: str):
    from flamewatch.scrapeconfig import ConfigError, load_config

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


def _open_storage(config: StorageConfig):
    from flamewatch.storage.objstore import open_object_store
    from flamewatch.storage.postgres import open_database

    store = open_object_store(config.object_store)
    log.info("object store: %s", config.object_store)
    db = open_database(config.postgres)
    return store, db


def _close_storage(store, db) -> None:
    db.close()
    store.close()


async def _serve(args, routers, http_address: str, grpc_address: str | None, register, stop,
                 before_stop=None) -> None:
    """Every process serves its routers plus /debug/pprof (itself), /metrics, /healthz and /readyz."""
    from flamewatch.rpc.http import build_app
    from flamewatch.rpc.runtime import serve
    from flamewatch.selfprofile.routes import router as profiling_router

    routers = [*routers, profiling_router(heap_enabled=args.heap_profiling)]
    _start_heap_tracking(args)  # after start-up: tracing every import would slow it down many times
    await serve(build_app(routers, ready=lambda: True), http_address, grpc_address, register, stop, before_stop)


def _start_heap_tracking(args: argparse.Namespace) -> None:
    from flamewatch.selfprofile.heap import start_heap_tracking

    if getattr(args, "heap_profiling", False):
        start_heap_tracking()


def run_upload(args: argparse.Namespace) -> int:
    from flamewatch.upload import UploadError, upload_files

    try:
        for line in upload_files(args.files, args.url, args.labels, args.tenant, args.name, args.timeout):
            print(line)
    except UploadError as exc:
        print(f"flamewatch upload: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for chatty in ("pgserver", "httpx"):  # they log every command or request at INFO
        logging.getLogger(chatty).setLevel(logging.WARNING)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
