"""The UI quotes label values as the selector parser reads them: the Vitest table of the UI's helper
(`quoteLabelValue` in services/frontend/ui/src/api/client.ts) is checked here against `quote` and the parser."""

import ast
import re
from pathlib import Path

from flamewatch.labels.selector import parse_selector, quote

UI_TEST = Path(__file__).resolve().parents[2] / "services/frontend/ui/src/api/client.test.ts"
ROW = re.compile(r"""^  \[((["'])(?:(?!\2)[^\\]|\\.)*\2), String\.raw`([^`]*)`\],$""", re.M)


def ui_table() -> list[tuple[str, str]]:
    # The values are JavaScript string literals whose escapes (\n, \t, \xHH, \uHHHH) Python reads alike.
    return [(ast.literal_eval(value), quoted) for value, _, quoted in ROW.findall(UI_TEST.read_text())]


def test_the_ui_quotes_as_the_parser_does():
    table = ui_table()
    assert len(table) == 11
    for value, quoted in table:
        assert quoted == quote(value), value
        (matcher,) = parse_selector(f"{{name={quoted}}}")
        assert matcher.value == value
