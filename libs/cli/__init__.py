"""The `flamewatch` command: the one place that knows every service and wires them together.

    flamewatch ingester   receive pprof pushes and store them (gRPC + HTTP /ingest)
    flamewatch querier    answer queries (gRPC QueryService + REST /api/v1)
    flamewatch collector  scrape pprof endpoints on schedule and push to an ingester
    flamewatch frontend   serve the web UI and pass /api to a querier
    flamewatch symbolizer store debug information and name addresses for the querier
    flamewatch compactor  compact and expire stored blocks (also run by `flamewatch all`, as its own process)
    flamewatch all        all of them in one process, on embedded storage
    flamewatch upload     push pprof files to a running ingester
    flamewatch debuginfo upload   send ELF files with symbols or DWARF to a symbolizer
    flamewatch event      record an OOM kill or a restart seen outside Kubernetes
    flamewatch gate       fail a CI job when profiles show something got significantly slower
    flamewatch web        make the hashes of the web configuration file

Flags may also be given as environment variables: FLAMEWATCH_<FLAG>, upper-cased with dots and dashes
as underscores (for example FLAMEWATCH_STORAGE_S3_SECRET_KEY). Flags win over the environment.
"""

# One module per command (`cli/<command>.py`: its parser and its run function); the flags several share
# in `flags`, what every server does around its services in `process`. A command module imports the
# service stack inside its run function, so `flamewatch --help` and the parsing of any command stay light.

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from flamewatch.cli import (
    allinone,
    collector,
    compactor,
    event,
    frontend,
    gate,
    ingester,
    memory,
    querier,
    symbolizer,
    upload,
    web,
)
from flamewatch.cli.flags import Parser
from flamewatch.storage.errors import StorageError

log = logging.getLogger("flamewatch")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flamewatch", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in (ingester, querier, collector, frontend, compactor, allinone):
        command.add_parser(sub)
    for commands in (upload, symbolizer, event, gate, web):
        commands.add_parsers(sub)
    return parser


# What a user can fix (a flag, a file, a port, the storage): one line, no traceback. Anything else is a
# bug and keeps its traceback; so does everything at --log.level=debug.
_USER_ERRORS = (ValueError, OSError, StorageError)


def main(argv: Sequence[str] | None = None) -> int:
    # Only child processes that exec at once are forked (the embedded Postgres); gRPC's fork handlers
    # would just log that they were skipped.
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
    # Before any thread starts or pyarrow is imported (importing this package imports neither): memory.py.
    memory.configure()
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
