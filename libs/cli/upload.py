"""`flamewatch upload`: push pprof files to an ingester (`flamewatch.upload`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flamewatch.cli.web import client_flags, use_client_flags


def add_parsers(sub) -> None:
    p = sub.add_parser("upload", help="push pprof files to a running ingester",
                       description="Push pprof files (gzip or raw) to an ingester's HTTP port, one request per "
                       "file. Exits non-zero with the server's message when a file is refused.")
    p.add_argument("files", nargs="+", type=Path, help="pprof files, e.g. cpu.pb.gz")
    p.add("--url", "the ingester (or flamewatch all) base URL", default="http://127.0.0.1:4100")
    p.add("--label", "series label k=v; repeat for more", action="append", default=[], dest="labels")
    p.add("--tenant", "tenant id sent as X-Scope-OrgID (default: none, so the server takes anonymous, or the "
          "credential's first tenant)", default=None)
    p.add("--name", "profile name (process_cpu, memory, goroutine, mutex, block, or one of your own); by "
          "default taken from the profile's content, with the file name as a hint", default=None)
    p.add("--timeout", "seconds to wait for each upload", type=float, default=30.0)
    client_flags(p)
    p.set_defaults(run=run_upload, log_level="warning")


def run_upload(args: argparse.Namespace) -> int:
    from flamewatch.upload import UploadError, upload_files

    use_client_flags(args)
    try:
        for line in upload_files(args.files, args.url, args.labels, args.tenant, args.name, args.timeout):
            print(line)
    except UploadError as exc:
        print(f"flamewatch upload: {exc}", file=sys.stderr)
        return 1
    return 0
