"""`flamewatch event`: record an OOM kill or a restart seen outside Kubernetes (a supervisor, systemd's
OnFailure=, a script that saw the kernel's OOM killer), so it becomes an incident with its profiles."""

from __future__ import annotations

import argparse
import sys
import time

from flamewatch.cli.web import client_flags, use_client_flags


def add_parsers(sub) -> None:
    p = sub.add_parser("event", help="record an OOM kill or a restart of a program (outside Kubernetes)",
                       description="Post an event to /api/v1/events of flamewatch all, an ingester or a querier. "
                       "The querier links it to the program's profiles (the labels must be those its profiles "
                       "carry): the last heap before it, the growth since the run started, the CPU before. "
                       "Recording the same --key twice records it once.")
    p.add("--url", "the base URL of flamewatch all, an ingester or a querier", default="http://127.0.0.1:8080")
    p.add("--kind", "oom_kill (killed for its memory) or restart (ended with a non-zero exit code)",
          choices=["oom_kill", "restart"], required=True)
    p.add("--label", "label k=v of the program, as its profiles carry it (service_name=api); repeat for more",
          action="append", default=[], dest="labels")
    p.add("--time", "when it ended: now (default), now-30s, RFC 3339 or epoch s/ms/ns", default="now")
    p.add("--started", "when the run that ended had started (same forms): the growth is measured from there",
          default=None)
    p.add("--exit-code", "the program's exit code (137 for SIGKILL)", dest="exit_code", type=int, default=0)
    p.add("--memory-limit", "its memory limit in bytes (e.g. the cgroup's memory.limit_in_bytes)",
          dest="memory_limit", type=int, default=0)
    p.add("--restart-count", "how many times it has been restarted", dest="restart_count", type=int, default=0)
    p.add("--message", "free text for whoever reads the incident", default="")
    p.add("--key", "record once per key (default: from kind, labels and time)", default="")
    p.add("--tenant", "tenant id sent as X-Scope-OrgID (default: none, so the server takes anonymous, or the "
          "credential's first tenant)", default=None)
    p.add("--timeout", "seconds to wait for the server", type=float, default=30.0)
    client_flags(p)
    p.set_defaults(run=run_event, log_level="warning")


def run_event(args: argparse.Namespace) -> int:
    from flamewatch.events.client import EventError, post_event
    from flamewatch.events.model import Event
    from flamewatch.labels.labelset import parse_label_args
    from flamewatch.timerange import parse_time

    use_client_flags(args)
    now = time.time_ns()
    event = Event(args.kind, parse_time(args.time, now), parse_label_args(args.labels), args.exit_code,
                  args.memory_limit, args.restart_count, parse_time(args.started, now) if args.started else 0,
                  args.message, args.key)
    try:
        print(post_event(args.url, event, args.tenant, args.timeout))
    except EventError as exc:
        print(f"flamewatch event: {exc}", file=sys.stderr)
        return 1
    return 0
