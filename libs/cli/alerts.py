"""The alerting flags of the commands that record events (`ingester`, `querier`, `all`), and the sender
they give `events.assemble` as its notify callback (`flamewatch.events.alertmanager`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from pathlib import Path

from flamewatch.cli.flags import Parser, duration
from flamewatch.events.alertconfig import AlertingConfig, parse_external_url, parse_urls, redacted

log = logging.getLogger("flamewatch")


def alerting_flags(p: Parser, external_url_default: str = "") -> None:
    p.add("--alertmanager.url", "send each new incident (OOM kill, restart with an error) as an alert to this "
          "Alertmanager, e.g. http://alertmanager:9093 (http://user:password@... for basic auth); repeat the "
          "flag or separate URLs with commas for several", dest="alertmanager_urls", action=_Repeated, default=[])
    p.add("--alertmanager.bearer-token-file", "send this file's token as 'Authorization: Bearer' to the "
          "Alertmanagers", dest="alertmanager_bearer_token_file", default=None)
    p.add("--alertmanager.resolve-timeout", "an incident's alert resolves by itself this long after it was "
          "recorded (an OOM kill is a point event)", dest="alertmanager_resolve_timeout", type=duration,
          default=int(AlertingConfig.resolve_timeout_s * 1e9))
    p.add("--web.external-url", "the URL people open Flamewatch's UI at, e.g. https://flamewatch.example.com: "
          "alerts link to their incident under it" + (" (default: this process's own address)"
                                                     if external_url_default else
                                                     "; without it alerts carry no permalink"),
          dest="external_url", default="")


class _Repeated(argparse.Action):
    """A repeatable flag whose flags replace what the environment gave (one comma-separated string)
    instead of adding to it, as every other flag overrides its variable."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        current = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, [*([] if isinstance(current, str) else current or []), values])


def alerting_config(args: argparse.Namespace, own_url: str = "") -> AlertingConfig:
    """From the flags (the environment's FLAMEWATCH_ALERTMANAGER_URL arrives as one comma-separated string)."""
    values = args.alertmanager_urls if isinstance(args.alertmanager_urls, list) else [args.alertmanager_urls]
    token = ""
    if args.alertmanager_bearer_token_file:
        token = Path(args.alertmanager_bearer_token_file).read_text().strip()
    return AlertingConfig(alertmanager_urls=parse_urls(values),
                          external_url=parse_external_url(args.external_url or own_url),
                          resolve_timeout_s=args.alertmanager_resolve_timeout / 1e9, bearer_token=token)


def alert_sender(stack: contextlib.AsyncExitStack, config: AlertingConfig, db=None):
    """The notify callback for `events.assemble` (None without Alertmanagers), stopped with the process:
    registered before the services, so it stops after them and has the last events they recorded.
    `db`: where a process with the querier's incidents looks up the last heap before each kill."""
    if not config.enabled:
        return None
    from flamewatch.events.alertmanager import AlertSender

    sender = AlertSender(config, heap_age=last_heap_age(db) if db is not None else None)
    stack.push_async_callback(asyncio.to_thread, sender.close)
    log.info("incidents are sent as alerts to %s%s", ", ".join(redacted(u) for u in config.alertmanager_urls),
             f", with permalinks under {config.external_url}" if config.external_url else
             " without permalinks (no --web.external-url)")
    return sender


def last_heap_age(db):
    """How old the program's last heap profile was at the event, as the querier's incidents find it."""
    from flamewatch.querier.incidents import Incidents

    incidents = Incidents(db)

    def age(tenant: str, recorded) -> float | None:
        evidence = incidents.evidence(tenant, recorded)
        return evidence.last_heap_age_ns / 1e9 if evidence.last_heap else None

    return age
