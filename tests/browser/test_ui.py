"""The web UI driven as a user would, against `flamewatch all` scraping a real Go program: every
assertion reads what the page shows (text, accessible names, URL), not pixels."""

from __future__ import annotations

import re
import subprocess
import time
from urllib.parse import parse_qs, urlencode, urlparse

import httpx
import pytest
from browser.conftest import CPU, HOT_FUNCTION, SCREENSHOTS, Served
from infra.tinypprof import tiny_pprof
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.postgres, pytest.mark.go]

DEMO = '{service_name="demo"}'
ROW_HEIGHT = 20  # the canvas flamegraph's row, CSS pixels (services/frontend/ui/src/flamegraph/draw.ts)
SECONDS = r"[\d.,]+ (?:ns|µs|ms|s|min|h)"


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
    assert re.search(rf"Total\s+{SECONDS}\s+[\d.]+%", tooltip), tooltip


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
    """The flamegraph tooltip's text once the pointer is over a frame of `name`, or "" (the pointer stays there)."""
    return _find_frame(page, name)[0]


def _find_frame(page, name: str) -> tuple[str, tuple[float, float]]:
    """Sweeps the pointer over the canvas's top rows until the tooltip names `name`: its text and the point."""
    canvas = page.get_by_test_id("flamegraph-canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    tip = page.get_by_role("tooltip")
    for row in range(0, 8):
        for step in range(24):
            point = (box["x"] + 3 + step * (box["width"] - 6) / 24, box["y"] + ROW_HEIGHT / 2 + row * ROW_HEIGHT)
            page.mouse.move(*point)
            if tip.count() and tip.locator(".fn").inner_text() == name:
                return tip.inner_text(), point
    return "", (0.0, 0.0)


def crumbs(page) -> list[str]:
    nav = page.get_by_role("navigation", name="breadcrumbs")
    return [t.strip() for t in nav.locator("li").all_inner_texts()]


def test_the_tooltip_over_the_hot_function_shows_self_total_and_share_in_seconds(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    tooltip = _tooltip_mentions(page, HOT_FUNCTION)
    self_time = re.search(rf"Self\s+(0|{SECONDS})\s+([\d.]+)%", tooltip)
    total = re.search(rf"Total\s+({SECONDS})\s+([\d.]+)%", tooltip)
    share = re.search(r"Share\s+([\d.]+)% of all", tooltip)
    assert self_time and total and share, tooltip
    assert total.group(2) == share.group(1)
    assert 0 <= float(self_time.group(2)) <= float(total.group(2)) <= 100, tooltip
    # The Go program's profiles name its executable in their mappings: the tooltip says where it ran from.
    binary = re.search(r"Binary\s+(\S+)", tooltip)
    assert binary and binary.group(1).endswith("/workload"), tooltip
    page.screenshot(path=str(SCREENSHOTS / "tooltip-binary.png"))
    # No frame of a function holds more than the function's total in the table (its frames counted once).
    row = page.get_by_role("table", name="top functions").locator("tbody tr", has_text=HOT_FUNCTION)
    table_share = float(row.locator("td").nth(2).inner_text().split()[-1].rstrip("%"))
    assert 0 < float(share.group(1)) <= table_share + 0.01, (tooltip, table_share)


def _zoom_into(page, name: str) -> list[str]:
    """Clicks the first frame of `name`; the breadcrumbs then shown."""
    text, point = _find_frame(page, name)
    assert text, f"no frame of {name} in the top rows"
    page.mouse.click(*point)
    page.wait_for_url(lambda u: "focus=" in u)
    nav = page.get_by_role("navigation", name="breadcrumbs")
    nav.locator("li", has_text=name).wait_for()
    return crumbs(page)


def test_clicking_a_frame_zooms_in_and_the_breadcrumbs_zoom_back_out(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    trail = _zoom_into(page, HOT_FUNCTION)
    # "all", then each ancestor below the root, then the frame itself; the URL keeps the path.
    assert trail[0] == "all" and trail[-1] == HOT_FUNCTION and len(trail) >= 3, trail
    assert url_params(page)["focus"] == ";".join(trail[1:])
    canvas = page.get_by_test_id("flamegraph-canvas")
    assert canvas.get_attribute("aria-label").endswith(f"zoomed to {HOT_FUNCTION}")
    # The zoomed frame fills the width: hovering its row anywhere names it, as all of the zoomed frame.
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] - 4, box["y"] + ROW_HEIGHT * (len(trail) - 1) + ROW_HEIGHT / 2)
    tooltip = page.get_by_role("tooltip")
    assert tooltip.locator(".fn").inner_text() == HOT_FUNCTION
    assert f"100.00% of {HOT_FUNCTION}" in tooltip.inner_text()

    # A crumb zooms out to that ancestor, and the back button returns to the deeper zoom.
    zoomed_url = page.url
    page.get_by_role("navigation", name="breadcrumbs").get_by_role("button", name=trail[-2], exact=True).click()
    current = "nav[aria-label=breadcrumbs] [aria-current]"
    page.wait_for_function(f"n => document.querySelector('{current}').textContent === n", arg=trail[-2])
    assert crumbs(page) == trail[:-1]
    assert url_params(page)["focus"] == ";".join(trail[1:-1])
    page.go_back()
    page.wait_for_url(zoomed_url)
    assert crumbs(page) == trail

    # Escape shows all again.
    page.keyboard.press("Escape")
    page.wait_for_url(lambda u: "focus=" not in u)
    assert crumbs(page) == ["all"]
    assert "zoomed" not in canvas.get_attribute("aria-label")


def test_a_zoomed_permalink_reloads_zoomed(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    trail = _zoom_into(page, HOT_FUNCTION)
    link = page.url
    page.reload()
    wait_for_flamegraph(page)
    assert page.url == link
    page.get_by_role("navigation", name="breadcrumbs").locator("[aria-current]", has_text=HOT_FUNCTION).wait_for()
    assert crumbs(page) == trail
    assert page.get_by_test_id("flamegraph-canvas").get_attribute("aria-label").endswith(f"zoomed to {HOT_FUNCTION}")


def test_the_flamegraph_is_drawn_at_the_screens_pixel_ratio(flamewatch_ui, chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 800}, device_scale_factor=2)
    try:
        page = context.new_page()
        page.goto(explore_url(flamewatch_ui))
        wait_for_flamegraph(page)
        canvas = page.get_by_test_id("flamegraph-canvas")
        drawn_at = "([c, r]) => c.width === r * c.clientWidth && c.height === r * c.clientHeight"
        page.wait_for_function(drawn_at, arg=[canvas.element_handle(), 2])
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "test_the_flamegraph_is_drawn_at_the_screens_pixel_ratio.png"))
    finally:
        context.close()


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
    # The canvas highlights its frames and dims the rest.
    label = page.get_by_test_id("flamegraph-canvas").get_attribute("aria-label")
    highlighted = re.search(r"; (\d+) highlighted by the search, the rest dimmed$", label)
    assert highlighted and int(highlighted.group(1)) >= 1, label


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
    table.locator("tbody tr").first.wait_for()
    # The rows are the largest changes of share, which need not include the hot function when its share
    # holds steady: each gives left and right in seconds (the hot function's are checked in the tooltip).
    rows = table.locator("tbody tr").evaluate_all("rows => rows.map((r) => [...r.cells].map((c) => c.textContent))")
    for cells in rows:
        assert all(re.fullmatch(rf"0|{SECONDS}", c) for c in cells[1:3]), cells
    assert page.get_by_test_id("flamegraph-canvas").is_visible()
    # The diff's tooltip gives both sides, their delta and the change of share.
    tooltip = _tooltip_mentions(page, HOT_FUNCTION)
    figures = (rf"Left\s+{SECONDS}", rf"Right\s+{SECONDS}", rf"Delta\s+([+-]?{SECONDS}|0)",
               r"Change\s+([+-]?[\d.]+%|new|gone)")
    for figure in figures:
        assert re.search(figure, tooltip), (figure, tooltip)


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
    # The group-by choices are the label names, fetched after the flamegraph: wait for them to come
    expect(page.get_by_label("group by")).to_have_value("instance")
    expect(page.get_by_label("max nodes")).to_have_value("1024")
    expect(page.locator("input[name=flamegraph-search]")).to_have_value("fibonacci")
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


def test_without_a_web_config_the_tenant_menu_lists_every_tenant_with_data(flamewatch_ui, page):
    """A push into team-a, as the README's SDK examples make: on the next refresh the menu appears beside
    the scrapes' tenant."""
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    expect(page.get_by_label("tenant")).to_have_count(0)  # one tenant: nothing to choose
    pushed = httpx.post(flamewatch_ui.url + "/ingest", params={"service_name": "sdk-app"}, timeout=30,
                        content=tiny_pprof(time.time_ns(), function="app.handle"), headers={"X-Scope-OrgID": "team-a"})
    assert pushed.status_code == 200, pushed.text
    page.get_by_role("button", name="Refresh").click()
    picker = page.get_by_label("tenant")
    expect(picker).to_have_value("anonymous")
    assert picker.locator("option").all_inner_texts() == ["anonymous", "team-a"]
    picker.select_option("team-a")
    expect(page.locator("#selector")).to_have_value('{service_name="sdk-app"}')
    expect(page.locator("[data-testid=top-table] tbody td.fn", has_text="app.handle")).to_have_count(1)
    # the range stays; the type and selector are the new tenant's
    assert url_params(page) == {"tenant": "team-a", "type": CPU, "query": '{service_name="sdk-app"}', "from": "now-15m"}
