"""The web UI driven as a user would, against `flamewatch all` scraping a real Go program: every
assertion reads what the page shows (text, accessible names, URL), not pixels."""

from __future__ import annotations

import subprocess
import time
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from browser.conftest import CPU, HOT_FUNCTION, Served

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.postgres, pytest.mark.go]

DEMO = '{service_name="demo"}'


def explore_url(served: Served, **params: str) -> str:
    return served.url + "/?" + urlencode({"type": CPU, "query": DEMO, "from": "now-15m", **params})


def url_params(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def table_names(page) -> list[str]:
    rows = page.locator("[data-testid=top-table] tbody td.fn")
    rows.first.wait_for()
    return rows.all_inner_texts()


def wait_for_flamegraph(page) -> None:
    page.locator("[data-testid=flamegraph-panel] canvas").first.wait_for()
    page.locator("[data-testid=top-table] tbody tr").first.wait_for()


def test_a_first_visit_lists_the_profile_types_and_opens_the_demo_cpu_flamegraph(flamewatch_ui, page):
    page.goto(flamewatch_ui.url + "/")
    wait_for_flamegraph(page)
    types = page.get_by_label("profile type")
    options = types.locator("option").all_inner_texts()
    assert {"CPU", "Memory allocated (bytes)", "Memory in use (bytes)", "Goroutines"} <= set(options), options
    assert types.locator("option:checked").inner_text() == "CPU"
    # The page picked the watched program (not Flamewatch itself) and says so in its URL.
    assert url_params(page) == {"type": CPU, "query": DEMO}
    assert page.locator("#selector").input_value() == DEMO
    assert any(name.strip() == HOT_FUNCTION for name in table_names(page))


def test_the_timeline_draws_the_totals_and_shows_a_value_on_hover(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    timeline = page.get_by_test_id("timeline")
    timeline.wait_for()
    assert int(timeline.get_attribute("data-points")) >= 3
    over = timeline.locator(".u-over")
    box = over.bounding_box()
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] / 2)
    value = timeline.locator(".u-legend .u-series:nth-child(2) .u-value")
    page.wait_for_function("el => /\\d+(\\.\\d+)? (ms|s)$/.test(el.textContent)", arg=value.element_handle())


def test_dragging_a_range_merges_it_into_a_flamegraph_with_the_hot_function(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    over = page.locator("[data-testid=timeline] .u-over")
    over.wait_for()
    box = over.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.05, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=8)
    page.mouse.move(box["x"] + box["width"] - 2, y, steps=8)
    page.mouse.up()
    page.wait_for_url(lambda u: "sel_from=" in u)
    params = url_params(page)
    assert int(params["sel_from"]) < int(params["sel_until"])
    wait_for_flamegraph(page)
    assert "selection" in page.get_by_test_id("flamegraph-scope").inner_text()
    assert HOT_FUNCTION in [n.strip() for n in table_names(page)]
    # Hovering its frame shows a tooltip with its share and time.
    tooltip = _tooltip_mentions(page, HOT_FUNCTION)
    assert "Share of CPU" in tooltip and "%" in tooltip and "seconds" in tooltip, tooltip


def test_clicking_a_point_opens_that_single_profile(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    timeline = page.get_by_test_id("timeline")
    over = timeline.locator(".u-over")
    over.wait_for()
    box = over.bounding_box()
    # The last point sits near the right edge (the range ends now); the cursor snaps to the nearest point.
    page.mouse.click(box["x"] + box["width"] - 3, box["y"] + box["height"] / 2)
    page.wait_for_url(lambda u: "time=" in u)
    wait_for_flamegraph(page)
    scope = page.get_by_test_id("flamegraph-scope")
    page.wait_for_function("el => el.textContent.startsWith('1 profile,')", arg=scope.element_handle())
    assert "the profile nearest" in scope.inner_text()
    assert HOT_FUNCTION in [n.strip() for n in table_names(page)]


def _tooltip_mentions(page, name: str) -> str:
    """The flamegraph tooltip's text once the pointer is over a frame of `name`, or ""."""
    canvas = page.get_by_test_id("flamegraph-canvas")
    box = canvas.bounding_box()
    tip = page.locator("[data-testid=tooltip]:visible")
    for row in range(1, 5):
        for step in range(12):
            page.mouse.move(box["x"] + 4 + step * (box["width"] - 8) / 12, box["y"] + 11 + row * 22)
            if tip.count() and name in (text := tip.first.inner_text()):
                return text
    return ""


def test_search_highlights_the_hot_function_and_shows_its_share(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    page.locator("input[name=flamegraph-search]").fill("cpuFibonacci")
    share = page.get_by_role("status", name="search matches")
    share.wait_for()
    text = share.inner_text()
    percent = float(text.split("=")[1].split("%")[0])
    assert 0 < percent <= 100, text
    # The table keeps only the matching functions, and the query is in the URL.
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=top-table] tbody tr')]"
                           ".every(r => r.textContent.toLowerCase().includes('cpufibonacci'))")
    # Its total is its share of the whole: a recursive function is counted once per stack.
    row = page.get_by_role("table", name="top functions").locator("tbody tr", has_text=HOT_FUNCTION)
    assert row.locator("td").nth(2).inner_text().endswith(f"{percent:.2f}%")
    assert url_params(page)["search"] == "cpuFibonacci"


def test_compare_renders_a_diff_of_two_ranges_with_a_legend_and_a_delta_table(flamewatch_ui, page):
    now = int(time.time() * 1000)
    middle = (flamewatch_ui.started_ms + now) // 2
    page.goto(flamewatch_ui.url + "/?" + urlencode({
        "view": "compare", "type": CPU, "l_query": DEMO, "l_from": str(flamewatch_ui.started_ms - 60_000),
        "l_until": str(middle), "r_query": DEMO, "r_from": str(middle), "r_until": "now"}))
    page.get_by_label("colour legend").wait_for()
    page.locator("[data-testid=flamegraph-panel] canvas").first.wait_for()
    table = page.get_by_role("table", name="largest changes")
    table.wait_for()
    rows = table.locator("tbody tr")
    names = [r.strip() for r in rows.locator("td:first-child").all_inner_texts()]
    assert HOT_FUNCTION in names, names
    cells = rows.nth(names.index(HOT_FUNCTION)).locator("td").all_inner_texts()
    assert cells[1].endswith("s") and cells[2].endswith("s"), cells  # left and right, in seconds
    assert page.get_by_test_id("flamegraph-canvas").is_visible()


def test_the_pprof_download_opens_in_go_tool_pprof(flamewatch_ui, page, tmp_path):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download pprof").click()
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    assert path.name == "process_cpu.pb.gz"
    top = subprocess.run(["go", "tool", "pprof", "-top", str(path)], capture_output=True, text=True, timeout=120)
    assert top.returncode == 0, top.stderr
    assert HOT_FUNCTION in top.stdout


def test_a_permalink_reloads_the_same_view_and_back_returns_to_it(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    page.get_by_label("group by").select_option("instance")
    page.get_by_label("max nodes").select_option("1024")
    page.locator("input[name=flamegraph-search]").fill("fibonacci")
    page.wait_for_url(lambda u: "search=fibonacci" in u and "max_nodes=1024" in u and "group_by=instance" in u)
    link = page.url

    page.reload()
    wait_for_flamegraph(page)
    assert page.url == link
    assert page.get_by_label("group by").input_value() == "instance"
    assert page.get_by_label("max nodes").input_value() == "1024"
    assert page.locator("input[name=flamegraph-search]").input_value() == "fibonacci"
    page.get_by_role("status", name="search matches").wait_for()

    page.get_by_role("button", name="Targets").click()
    page.get_by_role("table", name="job demo").wait_for()
    page.go_back()
    wait_for_flamegraph(page)
    assert page.url == link


def test_the_targets_page_shows_the_go_target_up(flamewatch_ui, page):
    page.goto(flamewatch_ui.url + "/?view=targets")
    table = page.get_by_role("table", name="job demo")
    table.wait_for()
    page.wait_for_function("() => [...document.querySelectorAll('table[aria-label=\"job demo\"] tbody tr')]"
                           ".some(r => r.textContent.includes('/debug/pprof/profile') && "
                           "r.querySelector('.health').textContent === 'up')")
    cpu_row = table.locator("tbody tr", has_text="/debug/pprof/profile")
    cells = cpu_row.locator("td").all_inner_texts()
    assert cells[1] == "process_cpu" and "ago" in cells[4] and cells[5].endswith("ms"), cells


def test_a_bad_selector_shows_the_apis_message(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    selector = page.locator("#selector")
    selector.fill("{service_name=demo}")
    error = page.locator(".selector-error")
    error.wait_for()
    assert "expected a quoted string" in error.inner_text()
    selector.press("Enter")
    alert = page.get_by_role("alert").filter(has_text="could not be loaded").first
    alert.wait_for()
    assert "expected a quoted string" in alert.inner_text()


def test_dark_mode_switches_the_whole_page_and_is_kept_on_reload(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.get_by_role("button", name="toggle dark mode").click()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert dark != light
    page.reload()
    wait_for_flamegraph(page)
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == dark


def test_a_selector_matching_nothing_says_what_to_do(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui, query='{service_name="nothing-here"}'))
    timeline = page.get_by_role("region", name="timeline")
    timeline.get_by_text("No profiles match in this range").wait_for()
    flamegraph = page.get_by_role("region", name="flamegraph")
    flamegraph.get_by_text("No profiles in this range: widen it, or check").wait_for()
    assert flamegraph.get_by_role("link", name="Targets").get_attribute("href") == "?view=targets"


def test_the_selector_completes_label_names_and_values(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui, query=""))
    wait_for_flamegraph(page)
    selector = page.locator("#selector")
    selector.fill("")
    selector.type("{serv")
    names = page.get_by_role("listbox", name="label names")
    names.get_by_role("option", name="service_name").wait_for()
    selector.press("Tab")
    assert selector.input_value() == '{service_name="'
    values = page.get_by_role("listbox", name="label values")
    values.get_by_role("option", name="demo").click()
    assert selector.input_value() == '{service_name="demo"'
    selector.type("}")
    selector.press("Enter")
    page.wait_for_url(lambda u: "query=%7Bservice_name%3D%22demo%22%7D" in u)
