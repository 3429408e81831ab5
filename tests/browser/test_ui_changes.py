"""What changed in Chromium: `flamewatch all` holding CPU profiles of two versions of a program pushed
over /ingest at chosen times (main.hash 20 % slower in 1.1), and the regression a comparison rule
(`--rules.file`, evaluated every second) records for them.

The page, reached from the header, compares the two newest versions of the service picked, ranks main.hash
first and significant; one click on its row opens the diff flamegraph zoomed to it; the permalink reopens
the same table; the regression is listed on the Incidents page with its versions and top function, opens
What changed with the same two selections, and is marked on the single view's timeline; a label with one
value, none, or too few profiles says what is missing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlparse

import httpx
import numpy as np
import pytest
from browser.conftest import SCREENSHOTS, flamewatch_all
from infra.tinypprof import stacks_pprof
from infra.waiting import wait_for
from integration.test_changes import CPU, PROGRAM
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.postgres]

S = 10**9
SHOP = '{service_name="shop"}'
SLOWER = "main.hash"


@dataclass(frozen=True)
class Pushed:
    url: str
    start_ns: int
    regression: int


def push(url: str, service: str, version: str, start_ns: int, n: int, slower: float, seed: int) -> None:
    """`n` CPU profiles 10 s apart from `start_ns`, each a multinomial draw around the program's shares
    with SLOWER costing `slower` more."""
    rng = np.random.default_rng(seed)
    stacks = list(PROGRAM)
    weights = np.array([PROGRAM[s] * (1 + (slower if s[-1] == SLOWER else 0)) for s in stacks], float)
    for i in range(n):
        counts = rng.multinomial(int(weights.sum()), weights / weights.sum())
        at = start_ns + i * 10 * S
        answer = httpx.post(f"{url}/ingest", params={"service_name": service, "version": version}, timeout=30,
                            content=stacks_pprof(dict(zip(stacks, counts.tolist())), at))
        assert answer.status_code == 200, answer.text


RULES = f"""
groups:
  - name: releases
    interval: 1s
    rules:
      - compare: version
        query: '{CPU}{SHOP}'
        for: 1m
        threshold: 1%
        labels: {{severity: warning}}
"""


def regressions(url: str) -> list[dict]:
    r = httpx.get(f"{url}/api/v1/incidents", params={"from": "now-1h", "kind": "regression"}, timeout=30)
    return r.json()["incidents"] if r.status_code == 200 else []


@pytest.fixture(scope="module")
def pushed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pushed]:
    workdir = tmp_path_factory.mktemp("flamewatch-ui-changes")
    rules = workdir / "rules.yml"
    rules.write_text("groups: []\n")
    with flamewatch_all(workdir, "--rules.file", str(rules)) as url:
        start = (time.time_ns() // S - 1200) * S
        push(url, "shop", "1.0", start, 20, 0.0, seed=1)
        push(url, "shop", "1.1", start + 400 * S, 20, 0.2, seed=2)
        push(url, "solo", "1.0", start, 4, 0.0, seed=3)
        push(url, "few", "1.0", start, 2, 0.0, seed=4)
        push(url, "few", "1.1", start + 400 * S, 2, 0.2, seed=5)
        # The rule from now on, so it compares every profile pushed (a reload, as after editing the file).
        rules.write_text(RULES)
        assert httpx.post(f"{url}/-/reload", timeout=30).status_code == 200
        wait_for(lambda: regressions(url), 120, "the comparison rule's regression", workdir / "all.log")
        yield Pushed(url, start, regressions(url)[0]["id"])


def url_params(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def expect_hash_first(page) -> None:
    rows = page.get_by_role("table", name="ranked changes").locator("tbody tr")
    expect(rows.first).to_have_attribute("data-function", SLOWER)
    expect(rows.first.locator(".significance")).to_have_text("significant")
    assert rows.first.locator(".significance").get_attribute("title").startswith("adjusted p")
    expect(rows.first.locator("td.change")).to_contain_text("+")


def test_the_slower_function_is_ranked_first_and_a_click_opens_its_diff(pushed: Pushed, page):
    page.goto(pushed.url + "/?" + urlencode({"type": CPU, "query": SHOP}))
    page.get_by_role("navigation", name="views").get_by_role("button", name="What changed").click()
    expect(page.get_by_label("service")).to_have_value("shop")
    # The two newest values by appearance, written into the link.
    expect(page.get_by_label("value a")).to_have_value("1.0")
    expect(page.get_by_label("value b")).to_have_value("1.1")
    expect_hash_first(page)
    expect(page.get_by_test_id("changes-scope")).to_contain_text("version 1.0 → 1.1: 20 and 20 profiles")
    params = url_params(page)
    assert (params["view"], params["a"], params["b"]) == ("changes", "1.0", "1.1"), params
    permalink = page.url
    page.screenshot(path=str(SCREENSHOTS / "changes.png"))

    # One range, where every page keeps it: the query bar's picker drives the comparison (version 1.0 was
    # pushed 20 to 17 minutes ago, 1.1 from 13 to 10 minutes ago, so the last 15 minutes hold 1.1 only).
    bar = page.locator(".querybar")
    expect(page.get_by_role("group", name="time range")).to_have_count(1)
    bar.get_by_role("group", name="time range").get_by_role("button", name="15m").click()
    assert url_params(page)["from"] == "now-15m"
    expect(page.get_by_text("Only one value of “version” in this range: 1.1.")).to_be_visible()
    page.go_back()
    expect(page.get_by_test_id("changes-scope")).to_contain_text("20 and 20 profiles")

    # Ranked by total: main.hash's callers grow with it, and it is still among the significant.
    page.get_by_role("group", name="rank by").get_by_role("button", name="Total").click()
    assert url_params(page)["order"] == "total"
    expect(page.get_by_role("table", name="ranked changes").locator(f'tr[data-function="{SLOWER}"] .significance')
           ).to_have_text("significant")
    page.go_back()
    expect_hash_first(page)

    page.get_by_role("table", name="ranked changes").locator("tbody tr").first.locator("td.num").first.click()
    params = url_params(page)
    assert params["view"] == "compare" and params["focus"] == SLOWER and params["search"] == SLOWER, params
    assert params["l_query"] == '{service_name="shop",version="1.0"}', params
    assert params["r_query"] == '{service_name="shop",version="1.1"}', params
    crumbs = page.get_by_role("navigation", name="breadcrumbs")
    expect(crumbs.locator("[aria-current=location]")).to_have_text(SLOWER)  # zoomed to its frame
    page.screenshot(path=str(SCREENSHOTS / "changes_diff.png"))

    fresh = page.context.new_page()
    fresh.goto(permalink)
    expect_hash_first(fresh)
    fresh.close()


def test_two_time_ranges_compare_the_service_before_and_after(pushed: Pushed, page):
    middle = (pushed.start_ns + 300 * S) // 10**6
    page.goto(pushed.url + "/?" + urlencode({
        "view": "changes", "type": CPU, "query": SHOP, "compare": "ranges", "l_from": str(pushed.start_ns // 10**6),
        "l_until": str(middle), "r_from": str(middle), "r_until": "now"}))
    expect(page.get_by_role("group", name="compare").get_by_role("button", name="Two time ranges")).to_have_attribute(
        "aria-pressed", "true")
    expect_hash_first(page)
    # each side has its own range in the panel; the query bar has none
    expect(page.get_by_label("range a").get_by_role("group", name="time range")).to_have_count(1)
    expect(page.get_by_label("range b").get_by_role("group", name="time range")).to_have_count(1)
    expect(page.locator(".querybar").get_by_role("group", name="time range")).to_have_count(0)


def test_a_regression_is_listed_opened_and_leads_to_what_changed(pushed: Pushed, page):
    page.goto(pushed.url + "/?view=incidents")
    rows = page.get_by_role("table", name="regressions").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Regression")
    expect(rows.first).to_contain_text("shop")
    expect(rows.first).to_contain_text("version 1.0 → 1.1")
    expect(rows.first).to_contain_text(SLOWER)
    rows.first.click()
    assert url_params(page)["incident"] == str(pushed.regression)
    detail = page.get_by_role("region", name="event detail")
    expect(detail.get_by_role("heading", name="Regression of shop")).to_be_visible()
    expect(detail.get_by_label("facts")).to_contain_text("version 1.0 → 1.1")
    expect(detail.get_by_label("facts")).to_contain_text("20 and 20")  # the profiles compared
    expect(page.get_by_test_id("regression-changes").locator("tbody tr td.fn").first).to_have_text(SLOWER)
    page.get_by_test_id("regression-diff").locator("canvas").first.wait_for()
    page.screenshot(path=str(SCREENSHOTS / "regression_detail.png"))

    page.get_by_role("link", name="Open in What changed").click()
    params = url_params(page)
    assert (params["view"], params["a"], params["b"], params["query"]) == ("changes", "1.0", "1.1", SHOP), params
    expect_hash_first(page)


def test_the_regression_is_marked_on_the_timeline(pushed: Pushed, page):
    page.goto(pushed.url + "/?" + urlencode({"type": CPU, "query": SHOP, "from": "now-1h"}))
    marker = page.get_by_role("button", name="Regression of shop (version 1.0 → 1.1)")
    expect(marker).to_be_visible()
    marker.click()
    assert url_params(page)["view"] == "incidents"
    detail = page.get_by_role("region", name="event detail")
    expect(detail.get_by_role("heading", name="Regression of shop")).to_be_visible()


def test_empty_states_say_what_is_missing(pushed: Pushed, page):
    def changes(service: str, **extra: str) -> None:
        query = f'{{service_name="{service}"}}'
        page.goto(pushed.url + "/?" + urlencode({"view": "changes", "type": CPU, "query": query, **extra}))

    region = page.get_by_role("region", name="what changed")
    changes("solo")
    expect(region).to_contain_text("Only one value of “version” in this range: 1.0. A comparison needs two.")
    expect(region).to_contain_text("Regressions and alerts")
    changes("shop", label="build")
    expect(region).to_contain_text("carry the label “build”")
    page.get_by_role("button", name="compare two time ranges").click()
    assert url_params(page)["compare"] == "ranges"
    changes("few")
    expect(region).to_contain_text("Too few profiles to tell a change from noise: 2 of version 1.0, 2 of version 1.1")
    expect(region.locator(".significance").first).to_have_text("not significant")
    page.screenshot(path=str(SCREENSHOTS / "changes_too_few.png"))
