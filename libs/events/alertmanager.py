"""Incidents as Prometheus Alertmanager alerts: each newly recorded event is posted to every configured
Alertmanager's v2 API (`POST /api/v2/alerts`, a JSON list of alerts).

`alert` is the shape, a plain function: labels `alertname` (`FlamewatchOOMKill`, `FlamewatchRestart`,
`FlamewatchRegression`), `severity` (by kind, unless the event has its own, as a rule's labels may give),
`kind`, `tenant`, `incident` (its id, so two kills of one container are two alerts) and the event's own
labels (namespace, pod, container, service_name, node...; one that collides with ours keeps its value as
`exported_<name>`, as Prometheus does); annotations `summary`, `description` and `permalink`
(the UI's Incidents view of it, with its tenant); `startsAt` the event's time, `endsAt` the resolve
timeout after it was recorded (a kill is a point event: nothing will ever say it "resolved"), and
`generatorURL` the permalink.

Where the process can see the stored profiles (the querier, `flamewatch all`), the sender is given
`heap_age`, which tells how old the program's last heap profile was at the kill: the alert carries it as
the annotation `last_heap_age` and in its description.

`AlertSender` is the `Recorder`'s notify callback. Recording never waits for it and never fails because
of it: alerts go into a bounded queue per Alertmanager, and a worker thread per Alertmanager posts them in
batches, retrying with exponential backoff while it is down or answers 5xx, until the alert's `endsAt`
has passed. A full queue drops (warned at most every 10 s). Every alert's fate per Alertmanager counts in
`flamewatch_alertmanager_notifications_total{result}`: sent, dropped (queue full), rejected (a 4xx),
expired (its endsAt passed, or the process stopped, before it could be sent); each failed POST counts
each of its alerts as `retried`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
from prometheus_client import Counter

from flamewatch.events.alertconfig import AlertingConfig, redacted
from flamewatch.events.model import OOM_KILL, REGRESSION, RESTART, incident_path
from flamewatch.events.store import Recorded
from flamewatch.ratelimitedlog import RateLimitedLog

log = logging.getLogger(__name__)

NOTIFICATIONS = Counter("flamewatch_alertmanager_notifications", "Incident alerts per Alertmanager, by what "
                        "became of them: sent, retried (a failed POST, tried again), dropped (queue full), "
                        "rejected (Alertmanager answered 4xx), expired (not sent before its endsAt or the stop)",
                        ["result"])
ALERTNAMES = {OOM_KILL: "FlamewatchOOMKill", RESTART: "FlamewatchRestart", REGRESSION: "FlamewatchRegression"}
SEVERITIES = {OOM_KILL: "warning", RESTART: "info", REGRESSION: "info"}  # an event's own `severity` wins
WHAT = {OOM_KILL: "OOM kill", RESTART: "restart with an error", REGRESSION: "regression"}
HeapAge = Callable[[str, Recorded], float | None]  # (tenant, event) -> seconds, None: no heap before it
STOP_FLUSH_S = 5.0  # at stop, one last try for what is queued, at most this long


def alert(tenant: str, recorded: Recorded, config: AlertingConfig, heap_age_s: float | None = None) -> dict:
    """The Alertmanager v2 alert of one recorded event (see the module docstring)."""
    event = recorded.event
    own = {"alertname": ALERTNAMES[event.kind], "kind": event.kind, "tenant": tenant, "incident": str(recorded.id)}
    labels = {"severity": SEVERITIES[event.kind],
              **{(f"exported_{k}" if k in own else k): v for k, v in event.labels.items()}}
    permalink = f"{config.external_url}{incident_path(recorded.id, tenant)}" if config.external_url else ""
    ends_ns = max(event.time_ns, recorded.recorded_ns) + int(config.resolve_timeout_s * 1e9)
    out = {"labels": {**labels, **own},
           "annotations": {"summary": summary(event), "description": description(event, heap_age_s),
                           **({"permalink": permalink} if permalink else {}),
                           **({"last_heap_age": _duration(heap_age_s)} if heap_age_s is not None else {})},
           "startsAt": _rfc3339(event.time_ns), "endsAt": _rfc3339(ends_ns)}
    return {**out, "generatorURL": permalink} if permalink else out


def summary(event) -> str:
    return _first_upper(f"{WHAT[event.kind]} of {_program(event.labels)}")


def description(event, heap_age_s: float | None = None) -> str:
    if event.kind == REGRESSION:  # the rule's message names the label values and the largest change
        return f"{event.message}. The permalink opens the comparison."
    facts = [f"exit code {event.exit_code}"]
    if event.memory_limit_bytes:
        facts.append(f"memory limit {_bytes(event.memory_limit_bytes)}")
    if event.restart_count:
        facts.append(f"restart count {event.restart_count}")
    if event.started_ns:
        facts.append(f"it had run {_duration((event.time_ns - event.started_ns) / 1e9)}")
    program = _first_upper(_program(event.labels))
    text = f"{program} ended at {_rfc3339(event.time_ns)} ({WHAT[event.kind]}; {', '.join(facts)})."
    if event.message:
        text += f" {event.message}"
    if heap_age_s is not None:
        text += f" Its last heap profile was taken {_duration(heap_age_s)} before."
    return text + " The permalink opens its last heap profile before the end and the heap's growth."


def _first_upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def _program(labels: dict[str, str]) -> str:
    if all(labels.get(k) for k in ("namespace", "pod", "container")):
        return f"container {labels['container']} of pod {labels['namespace']}/{labels['pod']}"
    name = labels.get("service_name")
    return name or ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n} B"


def _duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def _rfc3339(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ends_s(a: dict) -> float:
    return datetime.fromisoformat(a["endsAt"]).timestamp()


class AlertSender:
    """The notify callback (`events.api.Notify`): queues each new event's alert for every Alertmanager."""

    def __init__(self, config: AlertingConfig, transport: httpx.BaseTransport | None = None,
                 clock: Callable[[], float] = time.time, heap_age: HeapAge | None = None) -> None:
        self._config, self._heap_age = config, heap_age
        self._queues = [_Queue(url, config, transport, clock, self._alert) for url in config.alertmanager_urls]

    def __call__(self, tenant: str, new: list[Recorded]) -> None:
        for q in self._queues:
            q.put([(tenant, r) for r in new if r.event.kind in ALERTNAMES])

    def _alert(self, tenant: str, recorded: Recorded) -> dict:
        """Made by the worker, so recording never waits for the look-up of the last heap."""
        age = None
        if self._heap_age is not None and recorded.event.kind != REGRESSION:
            try:
                age = self._heap_age(tenant, recorded)
            except Exception:  # the alert goes without it
                log.exception("could not find the last heap before incident %d", recorded.id)
        return alert(tenant, recorded, self._config, age)

    def close(self) -> None:
        """Stop the workers after one last try for what is queued (at most `STOP_FLUSH_S`)."""
        for q in self._queues:
            q.stop()
        for q in self._queues:
            q.join()


class _Queue:
    """One Alertmanager: a bounded queue and the thread that posts from it."""

    def __init__(self, url: str, config: AlertingConfig, transport: httpx.BaseTransport | None,
                 clock: Callable[[], float], make_alert: Callable[[str, Recorded], dict]) -> None:
        self._url, self._config, self._clock, self._make_alert = url, config, clock, make_alert
        self._queue: queue.Queue[tuple[str, Recorded]] = queue.Queue(config.queue_size)
        self._stopping = threading.Event()
        self._warn = RateLimitedLog(log)
        headers = {"Authorization": f"Bearer {config.bearer_token}"} if config.bearer_token else {}
        self._client = httpx.Client(base_url=url, timeout=config.timeout_s, headers=headers, transport=transport)
        self._thread = threading.Thread(target=self._run, name=f"alertmanager {redacted(url)}", daemon=True)
        self._thread.start()

    def put(self, events: list[tuple[str, Recorded]]) -> None:
        for item in events:
            try:
                self._queue.put_nowait(item)
            except queue.Full:
                NOTIFICATIONS.labels("dropped").inc()
                self._warn.log(logging.WARNING, "full", "Alertmanager %s: %d alerts wait already, dropped the "
                               "one of incident %d", redacted(self._url), self._config.queue_size, item[1].id)

    def stop(self) -> None:
        self._stopping.set()

    def join(self) -> None:
        """Wait for the worker's last try; one still stuck in a POST is left behind (a daemon thread),
        so a stop never waits longer than `STOP_FLUSH_S` plus the POST under way."""
        self._thread.join(STOP_FLUSH_S + self._config.timeout_s)
        if not self._thread.is_alive():
            self._client.close()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                batch = [self._queue.get(timeout=0.2)]
            except queue.Empty:
                continue
            try:
                self._deliver(self._alerts(batch + self._take(self._config.batch_size - 1)))
            except Exception:  # a bug must not end the worker: the queue would fill and drop from then on
                log.exception("sending alerts to Alertmanager %s failed", redacted(self._url))
        rest = self._alerts(self._take(self._config.queue_size))
        if rest and not self._post(rest, final=True):
            NOTIFICATIONS.labels("expired").inc(len(rest))

    def _alerts(self, events: list[tuple[str, Recorded]]) -> list[dict]:
        return [self._make_alert(tenant, recorded) for tenant, recorded in events]

    def _take(self, most: int) -> list[tuple[str, Recorded]]:
        out = []
        while len(out) < most:
            try:
                out.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return out

    def _deliver(self, batch: list[dict]) -> None:
        """Post until sent, refused, expired or stopped, waiting longer after each failure."""
        backoff = self._config.first_backoff_s
        while batch:
            if self._post(batch):
                return
            self._stopping.wait(backoff)
            backoff = min(backoff * 2, self._config.max_backoff_s)
            now = self._clock()
            live = [a for a in batch if _ends_s(a) > now]
            NOTIFICATIONS.labels("expired").inc(len(batch) - len(live))
            batch = live
            if self._stopping.is_set():  # it has just failed: no last try, which would double the wait
                NOTIFICATIONS.labels("expired").inc(len(batch))
                return

    def _post(self, batch: list[dict], final: bool = False) -> bool:
        """True when done with the batch (sent, or refused for good); False to try again."""
        where = redacted(self._url)
        timeout = min(self._config.timeout_s, STOP_FLUSH_S) if final else httpx.USE_CLIENT_DEFAULT
        try:
            response = self._client.post("/api/v2/alerts", json=batch, timeout=timeout)
        except httpx.HTTPError as exc:
            return self._failed(batch, f"Alertmanager {where} cannot be reached ({exc or type(exc).__name__})",
                                final)
        if response.status_code < 300:
            NOTIFICATIONS.labels("sent").inc(len(batch))
            log.debug("sent %d alerts to Alertmanager %s", len(batch), where)
            return True
        if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
            if len(batch) > 1:  # Alertmanager refuses a whole request for one bad alert: each goes alone, once
                for a in batch:
                    self._post([a], final)
                return True
            NOTIFICATIONS.labels("rejected").inc(len(batch))
            log.error("Alertmanager %s refused %d alerts (%d): %s", where, len(batch), response.status_code,
                      response.text[:500])
            return True
        return self._failed(batch, f"Alertmanager {where} answered {response.status_code}: {response.text[:200]}",
                            final)

    def _failed(self, batch: list[dict], problem: str, final: bool) -> bool:
        if final:
            log.warning("%s; %d alerts are not sent: this process stops", problem, len(batch))
            return False
        NOTIFICATIONS.labels("retried").inc(len(batch))
        self._warn.log(logging.WARNING, "failed", "%s; %d alerts will be tried again", problem, len(batch))
        return False
