"""The flags several commands share, the parser that reads each from its environment variable too, and
the configs built from them (storage, maintenance, query limits).

Defaults come from the services' own configs; reading them imports no service stack (see
`tests/unit/test_lazy_imports.py`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

from flamewatch.config import StorageConfig
from flamewatch.ingester.config import IngesterConfig, MaintenanceConfig
from flamewatch.querier.config import QuerierConfig
from flamewatch.storage.objstore import FilesystemConfig, S3Config


def env_name(flag: str) -> str:
    return "FLAMEWATCH_" + flag.lstrip("-").replace(".", "_").replace("-", "_").upper()


class Parser(argparse.ArgumentParser):
    """Adds each flag's environment variable to its help and takes defaults from it."""

    def add(self, flag: str, help: str, secret: bool = False, **kwargs):
        """`secret`: never show the value (a password, or a DSN that may hold one) in --help."""
        env = env_name(flag)
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


def storage_flags(p: Parser) -> None:
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


# The storage flags by the names `storage_flags` gives them in `args`: what a child process (the compactor
# `flamewatch all` starts) is handed, through its environment so that no secret shows on its command line.
STORAGE_DESTS = {"--data-dir": "data_dir", "--storage.postgres-dsn": "postgres_dsn", "--storage.s3.bucket": "s3_bucket",
                 "--storage.s3.endpoint": "s3_endpoint", "--storage.s3.access-key": "s3_access_key",
                 "--storage.s3.secret-key": "s3_secret_key", "--storage.s3.region": "s3_region",
                 "--storage.s3.insecure": "s3_insecure", "--storage.s3.prefix": "s3_prefix"}


def storage_environment(args: argparse.Namespace, postgres_dsn: str, base: Mapping[str, str]) -> dict[str, str]:
    """`base` (an environment) with this process's storage in place of any it named: the same flags'
    values, and `postgres_dsn` (this process's open database, the embedded server's socket included), so
    that a child process connects to the server this one runs rather than starting or stopping its own."""
    values = {flag: getattr(args, dest) for flag, dest in STORAGE_DESTS.items()}
    values["--data-dir"] = str(Path(args.data_dir).resolve())
    values["--storage.postgres-dsn"] = postgres_dsn
    names = {env_name(flag) for flag in STORAGE_DESTS}
    return {**{k: v for k, v in base.items() if k not in names},
            **{env_name(flag): str(v).lower() if isinstance(v, bool) else str(v)
               for flag, v in values.items() if v not in (None, "", False)}}


def flush_flags(p: Parser) -> None:
    p.add("--flush-interval", "seconds between block flushes: a push is acknowledged once the flush holding it "
          "is durable, so this bounds the acknowledgement latency", type=float,
          default=IngesterConfig.flush_interval_s)
    p.add("--flush-bytes", "flush a tenant's batch early at this many decompressed bytes", type=int,
          default=IngesterConfig.flush_bytes)


def maintenance_flags(p: Parser) -> None:
    p.add("--compaction.interval", "seconds between rounds of compaction (small blocks into hour and day "
          "blocks) and retention; 0 turns both off in this process", dest="compaction_interval", type=float,
          default=MaintenanceConfig.interval_s)
    p.add("--storage.retention", "keep profiles this long, e.g. 30d or 2w (whole days are dropped); by "
          "default they are kept for ever", dest="retention", type=duration, default=None)
    p.add("--storage.retention-tenant", "a tenant's own retention, TENANT=DURATION (or TENANT=forever); "
          "repeat for more", dest="tenant_retention", action="append", default=[], type=_tenant_retention)


def duration(text: str) -> int:
    """A flag's duration (30s, 7d, 2w) in nanoseconds."""
    from flamewatch.timerange import TimeParseError, parse_duration

    try:
        return parse_duration(text)
    except TimeParseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _tenant_retention(text: str) -> tuple[str, int | None]:
    tenant, sep, keep = text.partition("=")
    if not sep or not tenant:
        raise argparse.ArgumentTypeError(f'expected TENANT=DURATION such as acme=7d, got "{text}"')
    return tenant, None if keep == "forever" else duration(keep)


def maintenance_config(args: argparse.Namespace) -> MaintenanceConfig:
    from flamewatch.storage.retention import RetentionPolicy

    return MaintenanceConfig(interval_s=args.compaction_interval,
                             retention=RetentionPolicy(args.retention, dict(args.tenant_retention)))


def query_limit_flags(p: Parser) -> None:
    p.add("--query.max-matchers", "the most label matchers one selector may have; a query with more is refused "
          "with 400 / INVALID_ARGUMENT", dest="query_max_matchers", type=int, default=QuerierConfig.max_matchers)
    p.add("--query.timeout", "seconds one query may run, its Postgres statements included, before it is stopped "
          "with 504 / DEADLINE_EXCEEDED (0: no limit)", dest="query_timeout", type=float,
          default=QuerierConfig.query_timeout_s)
    p.add("--query.max-bytes", "the most bytes of blocks one query may read, known from the index before it "
          "reads any (GET /api/v1/analyze tells what a query would read); a query over it is refused with 422 / "
          "RESOURCE_EXHAUSTED saying how to narrow it, e.g. 2GiB (0: no limit)", dest="query_max_bytes",
          type=byte_size, default=QuerierConfig.max_bytes)
    p.add("--query.split-min-profiles", "a merge that reads at least this many profiles (a pre-merged tree of a "
          "series' hour counting as 4) is split with the querier's peers (--query.peers) or query workers "
          "(flamewatch all), cut by time into a piece each; smaller ones are read by the asked querier alone",
          dest="query_split_min_profiles", type=int, default=QuerierConfig.split_min_profiles)
    p.add("--query.max-bytes-tenant", "a tenant's own --query.max-bytes, TENANT=BYTES (e.g. acme=20GiB, or "
          "acme=0 for no limit); repeat for more", dest="query_max_bytes_tenant", action="append", default=[],
          type=_tenant_bytes)


_BYTE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def cache_bytes_flag(p, default: int, whose: str = "") -> None:
    """`--cache-bytes`: the querier's memory for parsed blocks (`whose`: which processes, when more than one)."""
    p.add("--cache-bytes", f"memory for parsed blocks and the profile entries queries decoded from them{whose}; "
          "the least recently used blocks go first. Raise it when a range asked often reads more blocks than it "
          "holds (flamewatch_querier_block_cache_bytes in /metrics stays at the limit); bytes, or with a unit: "
          "1GiB", type=byte_size, default=default)


def byte_size(text: str) -> int:
    """A flag's size: a whole number of bytes, or with a unit (500MB, 2GiB)."""
    number = text.strip().rstrip("BbIiKkMmGgTt")
    unit = text.strip()[len(number):].lower()
    try:
        value = float(number) * _BYTE_UNITS[unit]
    except (KeyError, ValueError):
        raise argparse.ArgumentTypeError(f'expected bytes such as 1048576, 500MB or 2GiB, got "{text}"') from None
    if value < 0:
        raise argparse.ArgumentTypeError(f'expected 0 or more bytes, got "{text}"')
    return int(value)


def _tenant_bytes(text: str) -> tuple[str, int]:
    tenant, sep, size = text.partition("=")
    if not sep or not tenant:
        raise argparse.ArgumentTypeError(f'expected TENANT=BYTES such as acme=20GiB, got "{text}"')
    return tenant, byte_size(size)


def rules_flag(p: Parser) -> None:
    p.add("--rules.file", "a rule file in the shape of Prometheus's: comparisons that record a regression when a "
          "new version makes a function significantly more expensive, and recording rules that serve function "
          "shares on /metrics (see the README's Regressions and alerts); reloaded on SIGHUP and POST /-/reload",
          dest="rules_file", default=None)


def query_limits(args: argparse.Namespace) -> dict:
    return {"max_matchers": args.query_max_matchers, "query_timeout_s": args.query_timeout,
            "max_bytes": args.query_max_bytes, "tenant_max_bytes": dict(args.query_max_bytes_tenant),
            "split_min_profiles": args.query_split_min_profiles}


def common_flags(p: Parser, heap_profiling: bool = False) -> None:
    p.add("--log.level", "debug, info, warning or error", dest="log_level", default="info",
          choices=["debug", "info", "warning", "error"])
    p.add("--web.config.file", "Prometheus's web configuration file (tls_server_config, basic_auth_users), "
          "with Flamewatch's bearer_tokens, access (which tenants each credential may read and write) and "
          "client (how this process calls the other services); see the README's Security section. Without "
          "one, every request may read and write every tenant", dest="web_config_file", default=None)
    p.add("--grpc.max-connection-age", "seconds a client's gRPC connection to this process lives before it is "
          "asked to reconnect (a GOAWAY, its calls given as long again to finish): clients that balance over a DNS "
          "name, as collectors over the ingesters' headless Service, then spread onto pods added since",
          dest="grpc_max_connection_age", type=float, default=600.0)
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
