"""An event: something that happened to a program, with the labels its profiles carry.

Kinds:
    oom_kill   the program was killed for exceeding its memory limit (Kubernetes `OOMKilled`, or a
               supervisor that saw the kernel's OOM killer end it)
    restart    it ended with a non-zero exit code and was restarted
    regression a rule found a function significantly more expensive in a new value of a label (a new
               version) than in the previous one; `details` holds the two selections and the ranked changes

Every event is checked before anything is written (`check`): a known kind, a time within the window
(`EventLimits`), labels under the series rules (names, lengths, no NUL), bounded text. The first problem
raises `InvalidEvent` naming the event and the field, and nothing of its request is recorded.

An event's `key` makes recording idempotent: the same key is recorded once per tenant. The collector
keys a Kubernetes kill by pod UID, container and restart count, so a re-list, a second collector or a
restart of the collector never counts one kill twice; an event posted without a key gets one made from
its kind, labels and time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from urllib.parse import urlencode

from flamewatch.labels.errors import InvalidLabelError
from flamewatch.labels.labelset import validate_labels

OOM_KILL, RESTART, REGRESSION = "oom_kill", "restart", "regression"
KINDS = (OOM_KILL, RESTART, REGRESSION)
INT32_MAX = 2**31 - 1
MINUTE_NS = 60 * 10**9
DAY_NS = 24 * 60 * MINUTE_NS


class InvalidEvent(ValueError):
    """An event that cannot be recorded; the message names the event and what to change."""


@dataclass(frozen=True)
class EventLimits:
    max_events_per_request: int = 1000
    max_labels: int = 32
    max_label_name_length: int = 128
    max_label_value_length: int = 2048
    max_message_bytes: int = 4096
    max_key_bytes: int = 512
    max_details_bytes: int = 64 * 1024  # as JSON
    reject_older_than_ns: int = 30 * DAY_NS  # a supervisor replaying its log may be days late, not months
    reject_newer_than_ns: int = 10 * MINUTE_NS  # clocks disagree by seconds, not by hours


DEFAULT_LIMITS = EventLimits()


@dataclass(frozen=True)
class Event:
    kind: str
    time_ns: int
    labels: dict[str, str] = field(default_factory=dict)
    exit_code: int = 0
    memory_limit_bytes: int = 0  # 0: none or unknown
    restart_count: int = 0  # 0: unknown
    started_ns: int = 0  # when the run that ended had started; 0: unknown
    message: str = ""
    key: str = ""
    details: dict = field(default_factory=dict)  # what a kind carries besides (a regression's changes)

    def keyed(self) -> Event:
        """The event with its key: its own, or one made from kind, labels and time."""
        if self.key:
            return self
        digest = hashlib.sha256(json.dumps([self.kind, sorted(self.labels.items()), self.time_ns]).encode())
        return replace(self, key=f"{self.kind}/{digest.hexdigest()[:32]}")

    def payload(self) -> dict[str, int | str]:
        """What is stored besides kind, time, labels and key."""
        return {"exit_code": self.exit_code, "memory_limit_bytes": self.memory_limit_bytes,
                "restart_count": self.restart_count, "started_ns": self.started_ns, "message": self.message,
                "details": self.details}


def incident_path(incident_id: int, tenant: str | None = None) -> str:
    """Where the UI shows a recorded event (its Incidents view), relative to the UI's base URL; with the
    tenant, which the UI reads from `?tenant=`, for a link opened from outside (an alert)."""
    query = {"view": "incidents", "incident": incident_id, **({"tenant": tenant} if tenant else {})}
    return "/?" + urlencode(query)


def check(events: list[Event], now_ns: int, limits: EventLimits = DEFAULT_LIMITS) -> list[Event]:
    """The events with their keys, or `InvalidEvent` for the first one that cannot be recorded."""
    if len(events) > limits.max_events_per_request:
        raise InvalidEvent(f"{len(events)} events in one request, the limit is {limits.max_events_per_request}; "
                           "send them in several requests")
    return [_checked(e, i, now_ns, limits) for i, e in enumerate(events)]


def _checked(event: Event, index: int, now_ns: int, limits: EventLimits) -> Event:
    where = f"event {index}"
    if event.kind not in KINDS:
        raise InvalidEvent(f"{where}: unknown kind {event.kind!r}; use one of {', '.join(KINDS)}")
    oldest, newest = now_ns - limits.reject_older_than_ns, now_ns + limits.reject_newer_than_ns
    if not oldest <= event.time_ns <= newest:
        raise InvalidEvent(f"{where}: time {event.time_ns} ns is outside the accepted window: events may be at "
                           f"most {limits.reject_older_than_ns // DAY_NS} days old and "
                           f"{limits.reject_newer_than_ns // MINUTE_NS} minutes ahead of this server's clock "
                           "(times are nanoseconds since the epoch)")
    if event.started_ns and not 0 < event.started_ns <= event.time_ns:
        raise InvalidEvent(f"{where}: started_ns {event.started_ns} must be before the event's time {event.time_ns}")
    if not event.labels:
        raise InvalidEvent(f"{where}: no labels; give the labels the program's profiles carry (service_name, "
                           "or namespace, pod and container), so its profiles can be found")
    try:
        validate_labels(event.labels, max_labels=limits.max_labels, max_name_length=limits.max_label_name_length,
                        max_value_length=limits.max_label_value_length)
    except InvalidLabelError as exc:
        raise InvalidEvent(f"{where}: {exc}") from exc
    for name, value, largest in (("exit_code", event.exit_code, INT32_MAX),
                                 ("restart_count", event.restart_count, INT32_MAX),
                                 ("memory_limit_bytes", event.memory_limit_bytes, 2**63 - 1)):
        if not 0 <= value <= largest and not (name == "exit_code" and -largest <= value):
            raise InvalidEvent(f"{where}: {name} {value} is out of range")
    for name, text, largest in (("message", event.message, limits.max_message_bytes),
                                ("key", event.key, limits.max_key_bytes),
                                ("details", json.dumps(event.details), limits.max_details_bytes)):
        _check_text(where, name, text, largest)
    return event.keyed()


def _check_text(where: str, name: str, text: str, largest: int) -> None:
    if "\x00" in text:
        raise InvalidEvent(f"{where}: {name} contains a NUL character, which cannot be stored; remove it")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidEvent(f"{where}: {name} is not valid UTF-8") from exc
    if size > largest:
        raise InvalidEvent(f"{where}: {name} is {size} bytes long, the limit is {largest}")
