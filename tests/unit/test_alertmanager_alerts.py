"""The alert an incident becomes (`flamewatch.events.alertmanager.alert`), the alerting flags, and the
sender's queue and retries against an HTTP transport that fails on purpose (the real Alertmanager's
side is tests/e2e/test_alertmanager_e2e.py)."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from flamewatch.events.alertconfig import AlertingConfig, parse_urls, redacted
from flamewatch.events.alertmanager import NOTIFICATIONS, AlertSender, alert
from flamewatch.events.model import Event, incident_path
from flamewatch.events.store import Recorded

S = 10**9
KILL_AT = 1_795_000_000 * S  # 2026-11-18T11:06:40Z
CONFIG = AlertingConfig(alertmanager_urls=("http://am:9093",), external_url="https://fw.example.com")
POD = {"namespace": "shop", "pod": "api-7d9", "container": "api", "service_name": "api", "node": "n1"}


def recorded(kind="oom_kill", labels=POD, id_=42, **fields) -> Recorded:
    event = Event(kind, KILL_AT, dict(labels), **{"exit_code": 137, "memory_limit_bytes": 256 << 20,
                                                   "restart_count": 3, **fields}).keyed()
    return Recorded(id_, event, KILL_AT + 2 * S)


def test_an_oom_kill_becomes_an_alert_with_its_labels_and_permalink():
    a = alert("team-a", recorded(started_ns=KILL_AT - 600 * S, message="killed by the kernel"), CONFIG)
    assert a["labels"] == {**POD, "alertname": "FlamewatchOOMKill", "severity": "warning", "kind": "oom_kill",
                           "tenant": "team-a", "incident": "42"}
    permalink = "https://fw.example.com/?view=incidents&incident=42&tenant=team-a"
    assert a["annotations"]["permalink"] == permalink == a["generatorURL"]
    assert a["annotations"]["summary"] == "OOM kill of container api of pod shop/api-7d9"
    assert a["annotations"]["description"].startswith(
        "Container api of pod shop/api-7d9 ended at 2026-11-18T11:06:40.000Z (OOM kill; ")
    for fact in ("exit code 137", "memory limit 256 MiB", "restart count 3", "it had run 10 min",
                 "killed by the kernel"):
        assert fact in a["annotations"]["description"]
    assert a["startsAt"] == "2026-11-18T11:06:40.000Z"
    assert a["endsAt"] == "2026-11-18T12:06:42.000Z"  # an hour after it was recorded


def test_a_restart_is_an_info_alert_named_after_its_service():
    a = alert("anonymous", recorded("restart", {"service_name": "batch"}, exit_code=2), CONFIG)
    assert (a["labels"]["alertname"], a["labels"]["severity"]) == ("FlamewatchRestart", "info")
    assert a["annotations"]["summary"] == "Restart with an error of batch"


def test_event_labels_named_like_ours_are_kept_as_exported_but_a_severity_is_the_events():
    a = alert("t", recorded(labels={"service_name": "x", "severity": "critical", "tenant": "other"}), CONFIG)
    assert a["labels"]["severity"] == "critical" and "exported_severity" not in a["labels"]
    assert a["labels"]["tenant"] == "t" and a["labels"]["exported_tenant"] == "other"


def test_a_regression_is_alerted_with_the_rules_message():
    event = Event("regression", KILL_AT, {"service_name": "api", "version": "v1.5"},
                  message="version v1.5 against v1.4: main.hash +20.00% of the total").keyed()
    a = alert("t", Recorded(9, event, KILL_AT), CONFIG)
    assert (a["labels"]["alertname"], a["labels"]["severity"], a["labels"]["version"]) == (
        "FlamewatchRegression", "info", "v1.5")
    assert a["annotations"]["summary"] == "Regression of api"
    assert a["annotations"]["description"] == ("version v1.5 against v1.4: main.hash +20.00% of the total. "
                                               "The permalink opens the comparison.")


def test_without_an_external_url_there_is_no_permalink():
    a = alert("t", recorded(), AlertingConfig(alertmanager_urls=("http://am:9093",)))
    assert "permalink" not in a["annotations"] and "generatorURL" not in a


def test_the_permalink_path_is_the_querier_ui_path_with_the_tenant():
    assert incident_path(7) == "/?view=incidents&incident=7"
    assert incident_path(7, "a b&c") == "/?view=incidents&incident=7&tenant=a+b%26c"


def test_alertmanager_urls_are_repeatable_and_comma_separated():
    assert parse_urls(["http://a:9093/, http://b:9093", "http://a:9093"]) == ("http://a:9093", "http://b:9093")
    with pytest.raises(ValueError, match="'alertmanager:9093' is not an http"):
        parse_urls(["alertmanager:9093"])
    assert redacted("http://u:secret@am:9093") == "http://u:xxxxx@am:9093"


def counts() -> dict[str, float]:
    return {r: NOTIFICATIONS.labels(r)._value.get() for r in ("sent", "retried", "dropped", "rejected", "expired")}


def delta(before: dict[str, float]) -> dict[str, float]:
    return {k: v - before[k] for k, v in counts().items() if v != before[k]}


def wait_until(check, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_sender_retries_with_backoff_until_alertmanager_answers():
    answers = [503, 503, 200]
    received = []

    def handle(request: httpx.Request) -> httpx.Response:
        received.append((request.url.path, json.loads(request.content)))
        return httpx.Response(answers.pop(0) if answers else 200)

    before = counts()
    config = AlertingConfig(("http://am:9093",), first_backoff_s=0.01, max_backoff_s=0.02)
    sender = AlertSender(config, transport=httpx.MockTransport(handle), clock=lambda: KILL_AT / S)
    sender("t", [recorded()])
    wait_until(lambda: len(received) == 3)
    sender.close()
    assert [path for path, _ in received] == ["/api/v2/alerts"] * 3
    assert received[-1][1][0]["labels"]["alertname"] == "FlamewatchOOMKill"
    assert delta(before) == {"retried": 2, "sent": 1}


def test_a_refused_alert_is_not_retried_and_an_expired_one_is_given_up():
    before = counts()
    refused = AlertSender(AlertingConfig(("http://am:9093",)),
                          transport=httpx.MockTransport(lambda r: httpx.Response(400, text="bad")))
    refused("t", [recorded()])
    wait_until(lambda: delta(before).get("rejected") == 1)
    refused.close()

    before = counts()
    down = AlertSender(AlertingConfig(("http://am:9093",), first_backoff_s=0.01),
                       transport=httpx.MockTransport(lambda r: httpx.Response(503)),
                       clock=lambda: KILL_AT / S + 2 * 3600)  # past the alert's endsAt
    down("t", [recorded()])
    wait_until(lambda: delta(before).get("expired") == 1)
    down.close()
    assert delta(before) == {"retried": 1, "expired": 1}


def test_a_full_queue_drops_without_blocking_the_recording():
    gate = threading.Event()

    def handle(request: httpx.Request) -> httpx.Response:
        gate.wait(10)
        return httpx.Response(200)

    before = counts()
    sender = AlertSender(AlertingConfig(("http://am:9093",), queue_size=2, batch_size=1),
                         transport=httpx.MockTransport(handle))
    sender("t", [recorded(id_=1)])
    wait_until(lambda: sender._queues[0]._queue.empty())  # the first is being posted
    started = time.monotonic()
    sender("t", [recorded(id_=i) for i in range(2, 6)])
    assert time.monotonic() - started < 0.5
    gate.set()
    wait_until(lambda: delta(before).get("sent") == 3)
    sender.close()
    assert delta(before) == {"sent": 3, "dropped": 2}


def test_at_stop_what_is_queued_is_sent_once_more():
    received = []
    sender = AlertSender(AlertingConfig(("http://am:9093",), first_backoff_s=60),
                         transport=httpx.MockTransport(lambda r: received.append(r) or httpx.Response(200)))
    sender.close()
    assert received == []
    sender = AlertSender(AlertingConfig(("http://am:9093",)),
                         transport=httpx.MockTransport(lambda r: received.append(r) or httpx.Response(200)))
    sender("t", [recorded()])
    sender.close()
    assert len(received) == 1


def test_a_notify_that_fails_never_fails_the_recording(monkeypatch: pytest.MonkeyPatch, caplog):
    import asyncio

    from flamewatch.events import api

    monkeypatch.setattr(api, "record", lambda db, tenant, events, now: [Recorded(1, events[0], now)])

    def broken(tenant, new):
        raise RuntimeError("a bug in the sender")

    event = Event("oom_kill", time.time_ns(), {"service_name": "api"})
    assert asyncio.run(api.Recorder(None, notify=broken).record("t", [event])) == (1, 0)
    assert "could not pass 1 new events of tenant t on to be notified" in caplog.text


def test_a_bearer_token_goes_with_every_post():
    seen = []
    sender = AlertSender(AlertingConfig(("http://am:9093",), bearer_token="t0ken"),
                         transport=httpx.MockTransport(lambda r: seen.append(r.headers["Authorization"])
                                                       or httpx.Response(200)))
    sender("t", [recorded()])
    sender.close()
    assert seen == ["Bearer t0ken"]


@pytest.mark.parametrize(("env", "argv", "urls"), [
    (None, ["--alertmanager.url", "http://a:9093", "--alertmanager.url", "http://b:9093,http://c:9093"],
     ("http://a:9093", "http://b:9093", "http://c:9093")),
    ("http://a:9093,http://b:9093", [], ("http://a:9093", "http://b:9093")),
    ("http://a:9093", ["--alertmanager.url", "http://b:9093"], ("http://b:9093",)),  # the flag wins
    (None, [], ()),
])
def test_alertmanager_urls_from_flags_and_the_environment(monkeypatch: pytest.MonkeyPatch, env, argv, urls):
    from flamewatch import cli
    from flamewatch.cli.alerts import alerting_config

    monkeypatch.delenv("FLAMEWATCH_ALERTMANAGER_URL", raising=False)
    if env:
        monkeypatch.setenv("FLAMEWATCH_ALERTMANAGER_URL", env)
    args = cli.build_parser().parse_args(["ingester", *argv])
    config = alerting_config(args)
    assert (config.alertmanager_urls, config.enabled) == (urls, bool(urls))
    assert alerting_config(cli.build_parser().parse_args(["all", *argv]), "http://localhost:8080").external_url \
        == "http://localhost:8080"


def test_one_alert_alertmanager_refuses_does_not_take_the_others_of_its_batch_with_it():
    def handle(request: httpx.Request) -> httpx.Response:
        bad = any("bad" in a["labels"].get("service_name", "") for a in json.loads(request.content))
        return httpx.Response(400 if bad else 200)

    before = counts()
    sender = AlertSender(AlertingConfig(("http://am:9093",)), transport=httpx.MockTransport(handle))
    good, bad = (alert("t", recorded(labels={"service_name": name}), CONFIG) for name in ("good", "bad"))
    assert sender._queues[0]._post([good, bad]) is True
    sender.close()
    assert delta(before) == {"sent": 1, "rejected": 1}


def test_where_the_last_heap_is_known_the_alert_tells_its_age():
    ages = iter([4.2, None])
    sender = AlertSender(CONFIG, transport=httpx.MockTransport(lambda r: httpx.Response(200)),
                         heap_age=lambda tenant, r: next(ages))
    with_age, without = sender._alert("t", recorded()), sender._alert("t", recorded())
    sender.close()
    assert with_age["annotations"]["last_heap_age"] == "4.2 s"
    assert "Its last heap profile was taken 4.2 s before." in with_age["annotations"]["description"]
    assert "last_heap_age" not in without["annotations"] and "last heap profile was" not in \
        without["annotations"]["description"]
