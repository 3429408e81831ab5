"""The Incidents page in Chromium: `flamewatch all` scraping the heap of a real Go program that leaks
(tests/targets/leaky, in main.leakIntoCache), which is then stopped as a kill would and its OOM kill
recorded with POST /api/v1/events, as a supervisor does.

The page lists the kill; one click opens its detail with the heap before the kill and the growth of
the run (the leaking function on top of both); the permalink Alertmanager alerts carry opens the same
detail; the single view's timeline marks the kill; and a tenant without incidents, or filters that
match none, get an empty state that says what to do.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlparse

import httpx
import pytest
from browser.conftest import SCREENSHOTS, points, scraping_flamewatch
from infra import gotargets
from infra.waiting import wait_for
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.postgres, pytest.mark.go]

HEAP = "memory:inuse_space:bytes:space:bytes"
LEAKY = '{service_name="leaky"}'
LEAK = "main.leakIntoCache"
MEMORY_LIMIT = 64 << 20


@dataclass(frozen=True)
class Killed:
    url: str
    incident: int


def _leak_on_top(url: str) -> bool:
    r = httpx.get(url + "/api/v1/query", params={"query": HEAP + LEAKY, "from": "now-10m", "format": "top",
                                                 "max_nodes": "1000"}, timeout=30)
    entries = r.json()["top"]["entries"] if r.status_code == 200 else []
    return bool(entries) and max(entries, key=lambda e: e["self"])["name"] == LEAK


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Killed]:
    """`flamewatch all` holding a few heap profiles of the leaking program, then its OOM kill."""
    workdir = tmp_path_factory.mktemp("flamewatch-ui-incidents")
    leaky = gotargets.GoTarget(gotargets.build("leaky"), workdir / "leaky.log")
    started_ns = time.time_ns()
    leaky.start()
    try:
        with scraping_flamewatch(workdir, "leaky", leaky.addr) as (url, log, process):
            wait_for(lambda: points(url, HEAP + LEAKY) >= 3, 240, "three heap profiles of the leaking program", log,
                     process)
            wait_for(lambda: _leak_on_top(url), 60, f"{LEAK} on top of its heap", log, process)
            leaky.stop()  # the kill: no heap after it
            yield Killed(url, record_the_kill(url, started_ns))
    finally:
        leaky.stop()


def record_the_kill(url: str, started_ns: int) -> int:
    """The kill posted as a supervisor would; its incident's id."""
    posted = httpx.post(url + "/api/v1/events", timeout=30, json={"events": [{
        "kind": "oom_kill", "time": time.time_ns(), "labels": {"service_name": "leaky"}, "exit_code": 137,
        "memory_limit_bytes": MEMORY_LIMIT, "started": started_ns, "message": "killed by the kernel"}]})
    assert posted.status_code == 200, posted.text
    [incident] = httpx.get(url + "/api/v1/incidents", params={"from": "now-1h"}, timeout=30).json()["incidents"]
    assert incident["evidence"]["inuse_growth"] is not None, incident
    return incident["id"]


def url_params(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def first_growth(page):
    """The function that grew most in the growth pane's table."""
    return page.get_by_test_id("growth").get_by_role("table", name="largest changes").locator("tbody tr td.fn").first


def expect_the_kill_detail(page, incident: int) -> None:
    """The opened incident: its facts, the heap before the kill mostly the leak, and the growth led by it."""
    detail = page.get_by_role("region", name="event detail")
    expect(detail.get_by_role("heading", name="OOM kill of leaky")).to_be_visible()
    facts = detail.get_by_label("facts")
    expect(facts).to_contain_text("137")
    expect(facts).to_contain_text("64 MiB")
    expect(facts).to_contain_text(" before")  # the age of the last heap
    heap = page.get_by_test_id("last-heap")
    heap.locator("canvas").first.wait_for()
    heap.get_by_label("search functions").fill("leakIntoCache")
    share = heap.get_by_role("status", name="search matches")
    expect(share).to_contain_text("“leakIntoCache”: 1 frame")
    percent = float(share.locator("strong").inner_text().rstrip("%"))
    assert percent > 50, f"{LEAK} holds only {percent}% of the last heap"
    expect(first_growth(page)).to_have_text(LEAK)
    assert url_params(page)["incident"] == str(incident)


def test_the_page_lists_the_kill_and_one_click_opens_its_heap_and_growth(killed: Killed, page):
    page.goto(killed.url + "/")
    expect(page.locator("#selector")).to_have_value(LEAKY)  # the first visit picked the program
    page.get_by_role("navigation", name="views").get_by_role("button", name="Incidents").click()
    expect(page.get_by_role("button", name="Incidents")).to_have_attribute("aria-current", "page")
    rows = page.get_by_role("table", name="incidents").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("OOM kill")
    expect(rows.first).to_contain_text("leaky")
    expect(rows.first).to_contain_text("64 MiB")
    # The selection of the Explore view is kept: these are the incidents of the program looked at.
    assert url_params(page)["query"] == LEAKY

    rows.first.click()
    expect_the_kill_detail(page, killed.incident)
    page.screenshot(path=str(SCREENSHOTS / "incident_detail.png"))

    # Alloc growth a toggle away. Not checked for its figures: scraped alloc_space is stored per scrape
    # interval (a delta), and Go's heap profile only moves at a GC, so one interval may hold nothing.
    toggle = page.get_by_role("group", name="growth of")
    toggle.get_by_role("button", name="Allocated").click()
    expect(toggle.get_by_role("button", name="Allocated")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_test_id("growth").locator(".pane-total, .status.empty").first).to_be_visible()
    toggle.get_by_role("button", name="In use").click()
    expect(first_growth(page)).to_have_text(LEAK)

    # The heap opened in the main view: the single profile picked on the program's timeline.
    page.get_by_test_id("last-heap").get_by_role("link", name="Open in the main view").click()
    params = url_params(page)
    assert (params.get("view"), params["type"], params["query"]) == (None, HEAP, '{service_name="leaky"}'), params
    assert params["time"] and "incident" not in params
    expect(page.locator("[data-testid=top-table] tbody td.fn").first).to_have_text(LEAK)
    page.go_back()
    expect_the_kill_detail(page, killed.incident)


def test_the_permalink_opens_the_same_detail(killed: Killed, page):
    page.emulate_media(color_scheme="dark")  # and reads in the dark theme (screenshot)
    page.goto(f"{killed.url}/?view=incidents&incident={killed.incident}")
    expect_the_kill_detail(page, killed.incident)
    page.screenshot(path=str(SCREENSHOTS / "incident_detail_dark.png"))
    assert set(url_params(page)) == {"view", "incident"}  # no service or type picked for the user here
    page.get_by_test_id("growth").get_by_role("link", name="Open in the main view").click()
    params = url_params(page)
    assert params["view"] == "compare" and params["type"] == HEAP, params
    leak = page.get_by_role("table", name="largest changes").locator("tbody tr").filter(
        has=page.locator("td.fn", has_text=LEAK))
    expect(leak.locator("td").nth(3)).to_contain_text("+")  # its delta: it grew


def test_an_unknown_incident_says_so(killed: Killed, page):
    page.goto(f"{killed.url}/?view=incidents&incident=999999")
    expect(page.get_by_role("alert")).to_contain_text("Incident 999999 could not be opened")
    expect(page.get_by_role("alert")).to_contain_text("no incident 999999")
    page.goto(f"{killed.url}/?view=incidents&incident=oom")
    expect(page.get_by_role("alert")).to_contain_text("“oom” is not an incident id")
    page.get_by_role("button", name="Back to the list").click()
    expect(page.get_by_role("table", name="incidents").locator("tbody tr")).to_have_count(1)


def test_the_kill_is_marked_on_the_single_views_timeline(killed: Killed, page):
    page.goto(killed.url + "/?" + urlencode({"type": HEAP, "query": LEAKY, "from": "now-15m"}))
    marker = page.get_by_role("button", name="OOM kill of leaky")
    expect(marker).to_be_visible()
    page.screenshot(path=str(SCREENSHOTS / "incident_marker.png"))
    marker.click()
    assert url_params(page)["view"] == "incidents"
    expect_the_kill_detail(page, killed.incident)
    # A selector the kill's labels do not match (they carry no job) draws the same profiles without it.
    page.goto(killed.url + "/?" + urlencode({"type": HEAP, "query": '{job="leaky"}', "from": "now-15m"}))
    page.get_by_test_id("timeline").wait_for()
    expect(page.get_by_role("button", name="OOM kill of leaky")).to_have_count(0)


def test_empty_states_say_what_records_incidents_or_clear_the_filters(killed: Killed, page):
    page.goto(killed.url + "/?view=incidents&tenant=nobody")
    empty = page.get_by_role("region", name="incidents").locator(".status.empty")
    expect(empty).to_contain_text("No incidents in this range")
    for source in ("Kubernetes watcher", "flamewatch event", "POST /api/v1/events"):
        expect(empty).to_contain_text(source)
    assert "The README's section “OOM kills” says how to set each up." in empty.inner_text()
    page.screenshot(path=str(SCREENSHOTS / "incidents_empty.png"))

    page.goto(killed.url + "/?view=incidents&kind=restart")
    expect(page.get_by_text("No incidents match these filters in this range.")).to_be_visible()
    page.get_by_role("button", name="Clear the filters").click()
    expect(page.get_by_role("table", name="incidents").locator("tbody tr")).to_have_count(1)
    assert "kind" not in url_params(page)
