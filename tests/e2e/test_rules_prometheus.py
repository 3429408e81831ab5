"""A real Prometheus (built from its Go module) scrapes the function shares a recording rule of
`flamewatch all` serves on /metrics, and fires an alerting rule written on them."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e.cluster import Service, Storage
from e2e.test_rules_e2e import push_versions
from infra.prometheus import PrometheusServer
from infra.waiting import wait_for
from integration.test_changes import CPU

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.prometheus]

RULES = f"""
groups:
  - name: shares
    interval: 1s
    rules:
      - record: flamewatch_function_self_ratio
        query: '{CPU}'
        range: 10m
        top: 5
"""
ALERTS = """
groups:
  - name: profiles
    rules:
      - alert: HashingTooExpensive
        expr: flamewatch_function_self_ratio{function="main.hash"} > 0.15
        labels: {severity: warning}
"""


def test_prometheus_scrapes_the_recorded_shares_and_alerts_on_them(e2e_storage: Storage, tmp_path: Path):
    rules = tmp_path / "rules.yml"
    rules.write_text(RULES)
    service = Service("all", "prometheus-all", e2e_storage, tmp_path / "all.log", ("--rules.file", str(rules)))
    service.start()
    try:
        push_versions(service.url)
        (tmp_path / "prometheus").mkdir()
        with PrometheusServer(tmp_path / "prometheus", [f"127.0.0.1:{service.http_port}"], ALERTS) as prometheus:
            series = wait_for(lambda: prometheus.query('flamewatch_function_self_ratio{function="main.hash"}'), 60,
                              "Prometheus to scrape the recorded series", prometheus.log_path)
            assert series[0]["metric"]["service_name"] == "shop" and 0.15 < float(series[0]["value"][1]) < 0.3
            firing = wait_for(lambda: [a for a in prometheus.alerts() if a["state"] == "firing"], 60,
                              "the alert to fire", prometheus.log_path)
            assert firing[0]["labels"]["alertname"] == "HashingTooExpensive"
            assert firing[0]["labels"]["function"] == "main.hash"
    finally:
        assert service.stop() == 0, service.log_text()
