"""`flamewatch symbolizer` and `flamewatch debuginfo upload`, and the symbolizer's flags that the querier
and `flamewatch all` take too."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from flamewatch.cli import flags
from flamewatch.cli.process import listen, open_counted_store, run, serve
from flamewatch.cli.web import client_flags, use_client_flags


def add_parsers(sub) -> None:
    _symbolizer_parser(sub)
    _debuginfo_parser(sub)


def symbolizer_flags(p, all_in_one: bool = False) -> None:
    """Flags of a process that runs a symbolizer (`flamewatch symbolizer`, `flamewatch all`)."""
    from flamewatch.symbolizer.config import SymbolizerConfig

    p.add("--symbolizer.debuginfod-url", "a debuginfod server to fetch debug information from when none was "
          "uploaded, e.g. https://debuginfod.debian.net; repeat for more, tried in order",
          dest="debuginfod_urls", action="append", default=[])
    p.add("--symbolizer.debuginfod-timeout", "seconds to wait for a debuginfod server", type=float,
          dest="debuginfod_timeout", default=SymbolizerConfig.debuginfod_timeout_s)
    p.add("--symbolizer.negative-cache", "seconds a build ID no debuginfod server has is not asked for again",
          type=float, dest="negative_cache", default=SymbolizerConfig.negative_cache_s)


def querier_flags(p) -> None:
    p.add("--symbolizer.address", "the symbolizer's gRPC address; frames stored as bare addresses are named at "
          "query time (without one they stay addresses)", dest="symbolizer_address", default=None)


def symbolizer_config(args: argparse.Namespace, grpc_address: str = ":4501", http_address: str = ":4500"):
    from flamewatch.symbolizer.config import SymbolizerConfig

    urls = args.debuginfod_urls if isinstance(args.debuginfod_urls, list) else args.debuginfod_urls.split()
    return SymbolizerConfig(grpc_address=grpc_address, http_address=http_address, debuginfod_urls=tuple(urls),
                            debuginfod_timeout_s=args.debuginfod_timeout, negative_cache_s=args.negative_cache)


def _symbolizer_parser(sub) -> None:
    p = sub.add_parser("symbolizer", help="name addresses: store debug information and symbolize for the querier",
                       description="Serve SymbolizerService over gRPC: debug information uploaded with "
                       "`flamewatch debuginfo upload` or fetched from debuginfod servers, kept in the object store "
                       "by build ID, and addresses turned into functions, files, lines and inlined frames.")
    p.address("--http-address", "HTTP listen address (/metrics, /healthz)", ":4500")
    p.address("--grpc-address", "gRPC listen address (SymbolizerService)", ":4501")
    symbolizer_flags(p)
    flags.storage_flags(p)
    flags.common_flags(p)
    p.set_defaults(run=run_symbolizer)


def _debuginfo_parser(sub) -> None:
    p = sub.add_parser("debuginfo", help="manage debug information (upload)")
    actions = p.add_subparsers(dest="action", required=True, parser_class=type(p))
    up = actions.add_parser("upload", help="upload ELF files with symbols or DWARF to a symbolizer",
                            description="Upload executables, shared libraries or separate .debug files to a "
                            "symbolizer, each stored under its GNU build ID (a .debug file given with its "
                            "executable, app and app.debug, must have the same build ID). They name the "
                            "profiles of the credential's tenant only, unless --shared stores them for every "
                            "tenant.")
    up.add_argument("files", nargs="+", type=Path, help="ELF files, e.g. ./server server.debug")
    up.add("--symbolizer.address", "the symbolizer's (or flamewatch all's) gRPC address",
           dest="symbolizer_address", default="127.0.0.1:4501")
    up.add("--timeout", "seconds to wait for each upload", type=float, default=300.0)
    up.add("--tenant", "tenant the files belong to, sent as X-Scope-OrgID (default: none, so the server takes "
           "anonymous, or the credential's first tenant)", default=None)
    up.add("--shared", "store the files in the shared set, which names every tenant's profiles (the credential "
           "needs admin)", action="store_true")
    client_flags(up)
    up.set_defaults(run=run_debuginfo_upload, log_level="warning", command="debuginfo upload")


def run_symbolizer(args: argparse.Namespace) -> int:
    config = symbolizer_config(args, args.grpc_address, args.http_address)

    async def main(stack: contextlib.AsyncExitStack) -> None:
        from flamewatch.rpc.readiness import Check, Readiness
        from flamewatch.symbolizer.assemble import assemble

        listeners = listen(args, stack, config.http_address, config.grpc_address)
        store = open_counted_store(flags.storage_config(args).object_store)  # no Postgres: it keeps nothing there
        stack.callback(store.close)
        await serve(args, listeners, assemble(stack, store, config),
                    ready=Readiness([Check("object store", store.ping)]))

    return run(main)


def run_debuginfo_upload(args: argparse.Namespace) -> int:
    from flamewatch.symbolizer.upload_client import DebuginfoUploadError, upload_debuginfo

    use_client_flags(args)
    try:
        for line in upload_debuginfo(args.files, args.symbolizer_address, args.timeout, args.tenant, args.shared):
            print(line)
    except DebuginfoUploadError as exc:
        print(f"flamewatch debuginfo upload: {exc}", file=sys.stderr)
        return 1
    return 0
