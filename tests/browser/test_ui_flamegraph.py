"""Reading a flamegraph as people who read them daily do, against `flamewatch all` scraping a real Go
program: icicle or flame, inverted stacks, graph and/or table, a function's sandwich (from the table and
from a frame's menu), the keyboard, the exports (PNG, collapsed stacks, JSON) and the copy-link button.
Assertions read what the page shows and what it saves, checked against the API's own answer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from browser.conftest import CPU, HOT_FUNCTION, SCREENSHOTS, open_page
from browser.test_ui import DEMO, ROW_HEIGHT, explore_url, url_params, wait_for_flamegraph
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.postgres, pytest.mark.go]

RECURSIVE = "main.fibonacci"  # called by HOT_FUNCTION, and by itself


def _canvas(page, name: str = "flamegraph"):
    return page.get_by_role("img", name=re.compile(f"^{name} of "))


def _tooltip_at(page, canvas, x_fraction: float, y: float) -> str:
    """The name in the tooltip with the pointer `y` pixels below the canvas's top, scrolled into view."""
    top = canvas.evaluate("c => c.getBoundingClientRect().top + window.scrollY")
    page.evaluate("y => window.scrollTo(0, y - 400)", top + y)
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * x_fraction, box["y"] + y)
    return page.get_by_role("tooltip").locator(".fn").inner_text()


def _picked(page, canvas) -> str:
    return canvas.locator("xpath=..").get_by_role("status").inner_text()


def _level_names(page, canvas, depth: int) -> list[str]:
    """The names of one level, walked from the keyboard: down from the root, then right to the end."""
    canvas.focus()
    canvas.press("ArrowDown")  # picks the root
    for _ in range(depth):
        canvas.press("ArrowDown")
    names = [_picked(page, canvas)]
    for _ in range(500):
        canvas.press("ArrowRight")
        name = _picked(page, canvas)
        if name == names[-1]:
            return names
        names.append(name)
    raise AssertionError(f"level {depth} did not end after 500 frames")


def test_a_flame_graph_puts_the_root_at_the_bottom_and_is_kept_in_the_link(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    canvas = _canvas(page)
    assert canvas.get_attribute("data-orientation") == "icicle"
    assert _tooltip_at(page, canvas, 0.5, ROW_HEIGHT / 2) == "total"
    below_root = _tooltip_at(page, canvas, 0.5, ROW_HEIGHT * 1.5)

    page.get_by_role("group", name="orientation").get_by_role("button", name="Flame").click()
    page.wait_for_url(lambda u: "orientation=flame" in u)
    assert canvas.get_attribute("data-orientation") == "flame"
    height = canvas.bounding_box()["height"]
    assert _tooltip_at(page, canvas, 0.5, height - ROW_HEIGHT / 2) == "total"
    assert _tooltip_at(page, canvas, 0.5, height - ROW_HEIGHT * 1.5) == below_root

    page.reload()
    wait_for_flamegraph(page)
    assert _canvas(page).get_attribute("data-orientation") == "flame"
    assert page.get_by_role("button", name="Flame").get_attribute("aria-pressed") == "true"


def test_inverted_stacks_start_at_the_functions_that_burn(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    callers_first = _level_names(page, _canvas(page), 1)
    page.get_by_label("Invert").check()
    page.wait_for_url(lambda u: "invert=1" in u)
    inverted = _canvas(page, "inverted flamegraph")
    burners = _level_names(page, inverted, 1)
    # The recursive function burns the CPU itself; the outermost frames burn nothing and are not on top.
    assert RECURSIVE in burners and RECURSIVE not in callers_first, (burners, callers_first)
    # Only functions with self time are on top.
    params = {"query": CPU + DEMO, "from": "now-15m", "format": "top", "max_nodes": "65536"}
    top = httpx.get(flamewatch_ui.url + "/api/v1/query", params=params, timeout=30).json()
    selfish = {e["name"] for e in top["top"]["entries"] if e["self"] > 0}
    assert set(burners) - {"other"} <= selfish, set(burners) - selfish


def test_the_panel_shows_the_graph_the_table_or_both(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    panes = page.get_by_role("group", name="panes")
    table = page.get_by_role("table", name="top functions")
    panes.get_by_role("button", name="Graph").click()
    page.wait_for_url(lambda u: "panes=graph" in u)
    assert table.count() == 0 and _canvas(page).is_visible()
    graph_width = _canvas(page).bounding_box()["width"]
    panes.get_by_role("button", name="Table").click()
    page.wait_for_url(lambda u: "panes=table" in u)
    assert _canvas(page).count() == 0 and table.is_visible()
    assert table.bounding_box()["width"] > graph_width * 0.9  # full width, not half
    panes.get_by_role("button", name="Both").click()
    page.wait_for_url(lambda u: "panes=" not in u)
    assert table.is_visible() and _canvas(page).is_visible()
    assert _canvas(page).bounding_box()["width"] < graph_width * 0.6


def test_the_tables_sandwich_shows_a_functions_callers_and_callees(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui, search=HOT_FUNCTION))
    wait_for_flamegraph(page)
    page.get_by_role("button", name=f"sandwich view of {HOT_FUNCTION}").click()
    page.wait_for_url(lambda u: "sandwich=" in u)
    assert url_params(page)["sandwich"] == HOT_FUNCTION
    sandwich = page.get_by_test_id("sandwich")
    assert HOT_FUNCTION in sandwich.locator(".sandwich-head").inner_text()
    callers, callees = _canvas(page, f"callers of {HOT_FUNCTION}"), _canvas(page, f"callees of {HOT_FUNCTION}")
    # Callers: the function at the bottom, the loop that calls it above; callees: it on top, fibonacci below.
    height = callers.bounding_box()["height"]
    assert _tooltip_at(page, callers, 0.5, height - ROW_HEIGHT / 2) == HOT_FUNCTION
    assert _tooltip_at(page, callers, 0.5, height - ROW_HEIGHT * 1.5) .startswith("main.cpuLoop")
    assert _tooltip_at(page, callees, 0.5, ROW_HEIGHT / 2) == HOT_FUNCTION
    assert RECURSIVE in _level_names(page, callees, 1)
    # Both halves are the function's total, as the table says.
    row = page.get_by_role("table", name="top functions").locator("tbody tr", has_text=HOT_FUNCTION)
    total = row.locator("td").nth(2).inner_text().split()[-1]
    assert total in sandwich.locator(".sandwich-head").inner_text()
    page.reload()
    sandwich.wait_for()
    page.keyboard.press("Escape")
    page.wait_for_url(lambda u: "sandwich=" not in u)
    assert sandwich.count() == 0


def test_a_frames_menu_opens_its_sandwich(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    canvas = _canvas(page)
    box = canvas.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + ROW_HEIGHT * 1.5, button="right")
    menu = page.get_by_role("menu")
    name = menu.locator(".fn").inner_text()
    assert name and name != "total"
    assert menu.get_by_role("menuitem").all_inner_texts() == ["Zoom in", "Sandwich view", "Function details",
                                                              "Highlight in search", "Copy function name"]
    menu.get_by_role("menuitem", name="Sandwich view").click()
    page.wait_for_url(lambda u: "sandwich=" in u)
    assert url_params(page)["sandwich"] == name
    _canvas(page, f"callers of {name}").wait_for()


def test_frames_and_table_rows_are_reachable_from_the_keyboard(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    canvas = _canvas(page)
    canvas.focus()
    canvas.press("ArrowDown")
    assert _picked(page, canvas) == "total"
    assert page.get_by_role("tooltip").locator(".fn").inner_text() == "total"
    canvas.press("ArrowDown")
    child = _picked(page, canvas)
    canvas.press("Enter")
    page.wait_for_url(lambda u: "focus=" in u)
    assert canvas.get_attribute("aria-label").endswith(f"zoomed to {child}")
    # the menu key opens the picked frame's menu; Escape closes it, then zooms out
    canvas.focus()
    canvas.press("ArrowDown")
    canvas.press("Shift+F10")
    page.get_by_role("menu").wait_for()
    page.keyboard.press("Escape")
    assert page.get_by_role("menu").count() == 0
    page.keyboard.press("Escape")
    page.wait_for_url(lambda u: "focus=" not in u)

    row = page.get_by_role("table", name="top functions").locator("tbody tr").first
    row.focus()
    name = row.locator("td.fn").inner_text()
    row.press("Enter")
    page.wait_for_url(lambda u: "search=" in u)
    assert page.locator("input[name=flamegraph-search]").input_value() == name


def test_the_shown_view_exports_as_png_collapsed_stacks_and_json(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    total = int(page.get_by_test_id("flamegraph-panel").get_attribute("data-total") or 0)
    files = {}
    for item in ("PNG image", "Collapsed stacks", "JSON"):
        page.get_by_text("Export", exact=True).click()
        with page.expect_download() as download:
            page.get_by_role("menuitem", name=item).click()
        files[item] = (download.value.suggested_filename, Path(download.value.path()).read_bytes())

    name, png = files["PNG image"]
    assert name == "process_cpu.png" and png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 2000
    name, collapsed = files["Collapsed stacks"]
    lines = collapsed.decode().splitlines()
    assert name == "process_cpu.collapsed.txt" and all(re.fullmatch(r".+ \d+", line) for line in lines), lines[:5]
    assert any(f"{HOT_FUNCTION};{RECURSIVE};" in line for line in lines), lines[:20]
    name, raw = files["JSON"]
    tree = json.loads(raw)
    assert name == "process_cpu.json" and tree["version"] == 1 and tree["metadata"]["units"] == "nanoseconds"
    assert tree["flamebearer"]["names"][tree["flamebearer"]["levels"][0][3]] == "total"
    # the stacks and the tree are the same samples as the shown flamegraph's total
    assert sum(int(line.rsplit(" ", 1)[1]) for line in lines) == tree["flamebearer"]["numTicks"] == total > 0


def test_copy_link_puts_the_views_permalink_on_the_clipboard(flamewatch_ui, chromium):
    with open_page(chromium, "test_copy_link_puts_the_views_permalink_on_the_clipboard",
                   permissions=["clipboard-read", "clipboard-write"]) as page:
        page.goto(explore_url(flamewatch_ui, search=HOT_FUNCTION, orientation="flame"))
        wait_for_flamegraph(page)
        page.get_by_role("button", name="Copy link").click()
        page.get_by_role("button", name="Copied").wait_for()
        assert page.evaluate("navigator.clipboard.readText()") == page.url
        # a frame's menu copies its function's name, and says so
        page.goto(explore_url(flamewatch_ui))  # an icicle: the root's child is on the second row from the top
        wait_for_flamegraph(page)
        box = _canvas(page).bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + ROW_HEIGHT * 1.5, button="right")
        menu = page.get_by_role("menu")
        name = menu.locator(".fn").inner_text()
        menu.get_by_role("menuitem", name="Copy function name").click()
        expect(page.locator(".copy-notice")).to_have_text(f"Copied “{name}”")
        assert page.evaluate("navigator.clipboard.readText()") == name
        page.screenshot(path=str(SCREENSHOTS / "copy-function-name.png"))


def test_lines_split_frames_by_file_and_line_and_the_tooltip_says_where(flamewatch_ui, page):
    page.goto(explore_url(flamewatch_ui))
    wait_for_flamegraph(page)
    page.get_by_label("Lines").check()
    page.wait_for_url(lambda u: "lines=1" in u)
    rows = page.get_by_role("table", name="top functions").locator("tbody td.fn")
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=top-table] td.fn')]"
                           ".some(c => /^main\\.fibonacci cpu\\.go:\\d+$/.test(c.textContent))")
    assert any(re.fullmatch(r"main\.fibonacci cpu\.go:4[1-5]", n) for n in rows.all_inner_texts())
    canvas = _canvas(page)
    canvas.focus()
    canvas.press("ArrowDown")
    canvas.press("ArrowDown")
    tooltip = page.get_by_role("tooltip")
    where = tooltip.locator("tr", has=page.locator("th", has_text="Line")).locator("td").inner_text()
    assert re.fullmatch(r"\S+:\d+", where), where
    assert where not in tooltip.locator(".fn").inner_text()  # the name is the function's alone


def test_function_details_list_its_lines_with_self_and_total(flamewatch_ui, page):
    # zoomed to the function's widest frame, which the keyboard picks first, then its menu
    page.goto(explore_url(flamewatch_ui, focus=RECURSIVE))
    wait_for_flamegraph(page)
    canvas = _canvas(page)
    canvas.focus()
    canvas.press("ArrowDown")
    assert _picked(page, canvas) == RECURSIVE
    canvas.press("Shift+F10")
    page.get_by_role("menuitem", name="Function details").click()
    page.wait_for_url(lambda u: "details=" in u)
    details = page.get_by_role("region", name=f"details of {RECURSIVE}")
    table = details.get_by_role("table", name="function lines")
    table.locator("tbody tr").first.wait_for()
    cells = [r.locator("td").all_inner_texts() for r in table.locator("tbody tr").all()]
    assert cells and all(c[0] == "cpu.go" and 41 <= int(c[1]) <= 46 for c in cells), cells
    assert "in cpu.go" in details.inner_text()
    assert any(not c[2].startswith("0 ") for c in cells), cells  # some line burns the CPU itself
    details.get_by_role("button", name="Close").click()
    page.wait_for_url(lambda u: "details=" not in u)
