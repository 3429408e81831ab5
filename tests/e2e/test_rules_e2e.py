"""Rules in a running `flamewatch all` (`--rules.file`): CPU profiles of version 1.0 and of a 1.1 that
spends 20 % more in main.hash are pushed over /ingest; the comparison rule records one regression
incident by itself, the recording rule's series appear on /metrics, and a bad file given on reload is
refused with its YAML path while the running rules go on; SIGHUP reloads a good one."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from e2e.cluster import Service, Storage
from infra.tinypprof import stacks_pprof
from infra.waiting import wait_for
from integration.test_changes import CPU, PROGRAM

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3]

S = 10**9
RULES = f"""
groups:
  - name: releases
    interval: 1s
    rules:
      - compare: version
        query: '{CPU}'
        for: 1m
        window: 10m
        threshold: 1%
        labels: {{severity: warning}}
      - record: flamewatch_function_self_ratio
        query: '{CPU}'
        range: 10m
        top: 2
"""


@pytest.fixture(scope="module")
def running(e2e_storage: Storage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, Path]]:
    workdir = tmp_path_factory.mktemp("rules")
    rules = workdir / "rules.yml"
    rules.write_text(RULES)
    service = Service("all", "rules-all", e2e_storage, workdir / "all.log", ("--rules.file", str(rules)))
    service.start()
    yield service, rules
    assert service.stop() == 0, service.log_text()


def push_versions(url: str, service: str = "shop") -> None:
    rng = np.random.default_rng(5)
    stacks = list(PROGRAM)
    now = time.time_ns() // S * S
    for version, slower, start in (("1.0", 0.0, now - 400 * S), ("1.1", 0.2, now - 200 * S)):
        weights = np.array([PROGRAM[s] * (1 + (slower if s[-1] == "main.hash" else 0)) for s in stacks], float)
        for i in range(15):
            counts = rng.multinomial(int(weights.sum()), weights / weights.sum())
            answer = httpx.post(f"{url}/ingest", params={"service_name": service, "version": version}, timeout=30,
                                content=stacks_pprof(dict(zip(stacks, counts.tolist())), start + i * 10 * S))
            assert answer.status_code == 200, answer.text


def regressions(url: str) -> list[dict]:
    answer = httpx.get(f"{url}/api/v1/incidents", params={"kind": "regression", "from": "now-1h"}, timeout=30)
    return answer.json()["incidents"] if answer.status_code == 200 else []


def recorded_series(url: str) -> str | None:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return text if "flamewatch_function_self_ratio{" in text else None


def test_a_slower_release_is_found_recorded_once_and_its_shares_are_served(running):
    service, _ = running
    push_versions(service.url)
    [found] = wait_for(lambda: regressions(service.url), 60, "the regression incident", service.log_path)
    assert found["labels"] == {"service_name": "shop", "version": "1.1", "severity": "warning"}
    assert found["details"]["functions"][0]["name"] == "main.hash"
    assert found["evidence"]["change"]["left"]["query"] == f'{CPU}{{service_name="shop",version="1.0"}}'
    time.sleep(3)  # evaluated again: still one
    assert len(regressions(service.url)) == 1
    metrics = wait_for(lambda: recorded_series(service.url), 30, "the recorded series", service.log_path)
    assert 'flamewatch_function_self_ratio{function="main.parse",service_name="shop"}' in metrics


def test_a_bad_file_is_refused_on_reload_and_the_running_rules_stay(running):
    service, rules = running
    rules.write_text(RULES.replace("threshold: 1%", "threshold: lots"))
    answer = httpx.post(f"{service.url}/-/reload", timeout=30)
    assert answer.status_code == 400, answer.text
    assert "groups[0].rules[0].threshold: expected a share such as 1% or 0.01" in answer.json()["error"]
    assert "flamewatch_function_self_ratio{" in httpx.get(f"{service.url}/metrics", timeout=30).text
    rules.write_text(RULES.replace("top: 2", "top: 1"))
    service.process.send_signal(signal.SIGHUP)
    wait_for(lambda: "rules reloaded: 1 groups, 2 rules" in service.log_text(), 30, "the reload", service.log_path)


@pytest.mark.alertmanager
def test_the_regression_reaches_alertmanager_with_a_permalink(e2e_storage: Storage, tmp_path: Path, alertmanager):
    rules = tmp_path / "rules.yml"
    rules.write_text(RULES.replace("name: releases", "name: releases-alerting"))  # its own key: the module's
    service = Service("all", "rules-alerting-all", e2e_storage, tmp_path / "all.log",
                      ("--rules.file", str(rules), "--alertmanager.url", alertmanager.url,
                       "--web.external-url", "https://flamewatch.example.com"))
    service.start()
    try:
        push_versions(service.url, "shop-alerting")  # other flamewatch all of this module share the store
        [alert] = wait_for(lambda: alertmanager.alerts(filter='service_name="shop-alerting"'), 90,
                           "the regression alert in Alertmanager", service.log_path)
        assert (alert["labels"]["alertname"], alert["labels"]["version"]) == ("FlamewatchRegression", "1.1")
        assert alert["annotations"]["permalink"].startswith("https://flamewatch.example.com/?view=incidents&incident=")
        assert "main.hash" in alert["annotations"]["summary"] + alert["annotations"]["description"]
    finally:
        assert service.stop() == 0, service.log_text()
