"""The label explorer and the pages that keep themselves current, against `flamewatch all` scraping a real
Go program: each value of a label with its share of the selection, over time and in a table, a row opening
Explore narrowed to that value; the timeline's y axis from zero; a page opened before the first profile
that fills in by itself; auto-refresh that keeps the zoom and the search. Assertions read what the page
shows (text, accessible names, the data attributes of the timeline's scale) and its URL."""

from __future__ import annotations

import re
import statistics
import time
from urllib.parse import urlencode

import httpx
import pytest
from browser.conftest import CPU, HOT_FUNCTION, Served, open_page, scraping_flamewatch
from browser.test_ui import DEMO, _zoom_into, crumbs, explore_url, table_names, url_params, wait_for_flamegraph
from infra import gotargets
from infra.ports import free_port
from infra.tinypprof import tiny_pprof
from infra.waiting import answers, wait_for
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.postgres, pytest.mark.go]

INSTANCE = re.compile(r"^127\.0\.0\.1:\d+$")
PUSHED_SERVICE = "sdk-app"


def labels_url(served: Served, **params: str) -> str:
    return served.url + "/?" + urlencode({"view": "labels", "type": CPU, "from": "now-15m", **params})


def value_rows(page, label: str):
    """The rows of the label's table, once it has one."""
    rows = page.get_by_role("table", name=f"values of {label}").locator("tbody tr")
    rows.first.wait_for()
    return rows


def shares(page, label: str) -> dict[str, float]:
    """Each value of the label with its share in percent, in the table's order."""
    rows = value_rows(page, label)
    return {row.get_attribute("data-value"): float(row.locator("td.share").inner_text().rstrip(" %"))
            for row in rows.all()}


def test_the_demo_service_holds_all_of_its_selection_and_its_row_opens_its_flamegraph(flamewatch_ui, page):
    page.goto(labels_url(flamewatch_ui, query=DEMO))
    expect(page.get_by_role("button", name="Labels", exact=True)).to_have_attribute("aria-current", "page")
    expect(page.get_by_label("explored label")).to_have_value("service_name")
    assert shares(page, "service_name") == {"demo": 100.0}
    expect(page.get_by_test_id("value-count")).to_have_text("1 value")
    assert int(page.get_by_test_id("timeline").get_attribute("data-points")) >= 3

    value_rows(page, "service_name").locator("td.value").click()
    page.wait_for_url(lambda u: "view=labels" not in u)
    # Explore, the selector narrowed to the value (here already: it stays one matcher, not two)
    assert url_params(page) == {"type": CPU, "query": DEMO, "from": "now-15m"}
    expect(page.get_by_role("button", name="Explore", exact=True)).to_have_attribute("aria-current", "page")
    expect(page.locator("#selector")).to_have_value(DEMO)
    wait_for_flamegraph(page)
    assert HOT_FUNCTION in [name.strip() for name in table_names(page)]


def test_without_a_selector_the_shares_add_up_and_a_values_link_narrows_to_it(flamewatch_ui, page):
    """A second service pushes 3 s of CPU, as an SDK would: the two share the tenant's CPU, largest first."""
    pushed = httpx.post(flamewatch_ui.url + "/ingest", params={"service_name": PUSHED_SERVICE}, timeout=30,
                        content=tiny_pprof(time.time_ns(), value=3 * 10**9, function="app.handle"))
    assert pushed.status_code == 200, pushed.text
    page.goto(labels_url(flamewatch_ui))
    found = shares(page, "service_name")
    assert set(found) == {"demo", PUSHED_SERVICE} and 99.9 <= sum(found.values()) <= 100.1, found
    assert list(found.values()) == sorted(found.values(), reverse=True), found
    expect(page.get_by_test_id("value-count")).to_have_text("2 values")
    expect(page.locator(f"tr[data-value={PUSHED_SERVICE}] td.num").first).to_have_text("3 s")

    page.locator("tr[data-value=demo]").get_by_role("link", name="Flamegraph").click()
    page.wait_for_url(lambda u: "view=labels" not in u)
    assert url_params(page)["query"] == DEMO
    wait_for_flamegraph(page)


def test_picking_another_label_lists_its_values_and_draws_them_over_time(flamewatch_ui, page):
    page.goto(labels_url(flamewatch_ui, query=DEMO))
    picker = page.get_by_label("explored label")
    expect(picker).to_have_value("service_name")
    options = picker.locator("option").all_inner_texts()
    assert {"service_name", "instance", "job"} <= set(options), options
    assert not [o for o in options if o.startswith("__")], options  # Pyroscope's derived labels are left out

    picker.select_option("instance")
    page.wait_for_url(lambda u: "explore_by=instance" in u)
    [(instance, share)] = shares(page, "instance").items()
    assert INSTANCE.match(instance) and share == 100.0, (instance, share)
    legend = page.get_by_test_id("timeline").locator(".u-legend")
    expect(legend).to_contain_text(f'instance="{instance}"')

    picker.select_option("job")
    page.wait_for_url(lambda u: "explore_by=job" in u)
    assert shares(page, "job") == {"demo": 100.0}
    page.go_back()  # each label is a history step
    page.wait_for_url(lambda u: "explore_by=instance" in u)
    expect(picker).to_have_value("instance")
    # never the last label's answer read as this one's (its series have no instance: "(none)")
    assert shares(page, "instance") == {instance: 100.0}


def test_the_timeline_y_axis_starts_at_zero(flamewatch_ui, page):
    answer = httpx.get(flamewatch_ui.url + "/api/v1/query_range", params={"query": CPU + DEMO, "from": "now-15m"},
                       timeout=30).json()
    values = [v for s in answer["series"] for _, v in s["points"]]
    # an axis fitted to the data would start near its smallest point, far above zero
    assert min(values) > 0, values
    for url in (explore_url(flamewatch_ui), labels_url(flamewatch_ui, query=DEMO)):
        page.goto(url)
        plot = page.get_by_test_id("timeline").locator(".timeline-plot")
        expect(plot).to_have_attribute("data-y-min", "0")
        assert float(plot.get_attribute("data-y-max")) >= statistics.median(values), (url, values)


def test_a_page_opened_before_the_first_profile_shows_the_flamegraph_when_it_lands(_go_workload, chromium, request,
                                                                                   tmp_path):
    target = f"127.0.0.1:{free_port()}"  # nothing listens there until the program starts: every scrape fails
    with scraping_flamewatch(tmp_path, "demo", target) as (url, log, process), \
            open_page(chromium, request.node.name) as page:
        wait_for(lambda: answers(url + "/readyz"), 120, "flamewatch all to be ready", log, process)
        page.goto(url + "/")
        empty = page.get_by_text("No profiles stored in the last 7 days yet")
        expect(empty).to_be_visible()
        page.evaluate("window.openedOnce = true")  # gone if the page were loaded again

        with gotargets.GoTarget(_go_workload, tmp_path / "demo.log", args=("-addr", target)):
            page.locator("[data-testid=flamegraph-panel] canvas").first.wait_for(timeout=120_000)
            page.locator("[data-testid=top-table] tbody tr").first.wait_for()
            expect(empty).to_have_count(0)
            expect(page.locator("#selector")).to_have_value(DEMO)
            assert page.evaluate("window.openedOnce") is True


def test_auto_refresh_keeps_the_zoom_and_the_search(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui, refresh="10s"))
    wait_for_flamegraph(page)
    trail = _zoom_into(page, HOT_FUNCTION)
    search = page.locator("input[name=flamegraph-search]")
    search.fill("fibonacci")
    page.wait_for_url(lambda u: "search=fibonacci" in u)

    with page.expect_response(lambda r: "/api/v1/query?" in r.url and r.status == 200, timeout=30_000):
        pass  # the next refresh merges the profiles again
    canvas = page.get_by_test_id("flamegraph-canvas")
    expect(canvas).to_have_attribute("aria-label", re.compile(f"zoomed to {re.escape(HOT_FUNCTION)}"))
    assert crumbs(page) == trail
    expect(search).to_have_value("fibonacci")
    page.get_by_role("status", name="search matches").wait_for()
    params = url_params(page)
    assert (params["focus"], params["search"], params["refresh"]) == (";".join(trail[1:]), "fibonacci", "10s")
