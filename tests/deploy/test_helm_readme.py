"""The chart's README.md is what `make helm-docs` writes from values.yaml's comments, and values.yaml
cannot gain a value without a comment (which would leave it out of the README)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "readme.py"


def _readme_module():
    spec = importlib.util.spec_from_file_location("chart_readme", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


readme = _readme_module()


def test_chart_readme_is_up_to_date() -> None:
    written = (readme.CHART / "README.md").read_text()
    assert written == readme.expected_readme(), "deploy/helm/flamewatch/README.md is stale: run `make helm-docs`"


def test_every_value_has_a_row_with_its_default() -> None:
    rows = {row.path: row for row in readme.rows((readme.CHART / "values.yaml").read_text())}
    assert rows["collector.shards"].default == "1"
    assert rows["collector.shards"].kind == "int"
    assert rows["postgres.mode"].default == '"bundled"'
    assert rows["ingester.resources"].kind == "object"  # a documented parent covers its children
    assert "ingester.resources.requests" not in rows


def test_a_comment_may_run_over_several_lines() -> None:
    text = "# -- first line\n# second line\nkey: 1\n"
    (row,) = readme.rows(text)
    assert (row.path, row.description) == ("key", "first line second line")


def test_an_undocumented_value_is_refused() -> None:
    text = "ingester:\n  # -- Pods.\n  replicas: 1\n  flushInterval: 0.5\n"
    with pytest.raises(readme.ValuesDocError, match=r"ingester\.flushInterval has no `# --` comment"):
        readme.rows(text)


def test_a_comment_inside_a_list_is_refused() -> None:
    """Rows are for keys of the values tree; a key inside a list item has no path of its own."""
    text = "# -- Items.\nitems:\n  - name: a\n    # -- Port.\n    port: 1\n"
    with pytest.raises(readme.ValuesDocError, match=r"the comment for items\.port names no value"):
        readme.rows(text)
