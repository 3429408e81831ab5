"""The permalink of an alert opens its incident in Chromium: `flamewatch all` sends an OOM kill to a real
Alertmanager, and the alert's `generatorURL`, as Alertmanager holds it, opens the incident's detail with
the tenant the alert names (the UI's `?tenant=`)."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from browser.conftest import scraping_flamewatch
from infra.alertmanager import AlertmanagerServer
from infra.waiting import wait_for
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.postgres, pytest.mark.alertmanager]


def test_the_alerts_permalink_opens_its_incident(alertmanager: AlertmanagerServer, tmp_path: Path, page):
    # Nothing to scrape here: the incident has no heap, its detail says so.
    with scraping_flamewatch(tmp_path, "batch", "127.0.0.1:9", "--alertmanager.url", alertmanager.url) as (
            url, log, process):
        wait_for(lambda: httpx.get(f"{url}/readyz").status_code == 200, 60, "flamewatch all", log, process)
        posted = httpx.post(f"{url}/api/v1/events", timeout=30, json={"events": [{
            "kind": "oom_kill", "time": time.time_ns(), "labels": {"service_name": "batch"}, "exit_code": 137}]})
        assert posted.status_code == 200, posted.text
        [alert] = wait_for(lambda: alertmanager.alerts(filter='service_name="batch"'), 30, "the alert", log)
        link = alert["generatorURL"]
        assert urlparse(link).netloc == urlparse(url).netloc.replace("127.0.0.1", "localhost")

        page.goto(link)
        detail = page.get_by_role("region", name="event detail")
        expect(detail.get_by_role("heading", name="OOM kill of batch")).to_be_visible()
        params = {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}
        assert (params["view"], params["incident"], params["tenant"]) == (
            "incidents", alert["labels"]["incident"], "anonymous")
