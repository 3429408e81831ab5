"""The chart's README.md: its prose from README.tmpl.md, its values table from the `# --` comments of values.yaml.

    python deploy/helm/readme.py           write deploy/helm/flamewatch/README.md (`make helm-docs`)
    python deploy/helm/readme.py --check   exit 1 when README.md differs from what would be written

A comment block starting with `# --` documents the key on the line after it; continuation lines start
with `#` and a space. Every value must be documented, itself or through a documented parent (a parent's
comment covers the whole object, e.g. `resources`), so a new value cannot reach users without a row.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

CHART = Path(__file__).resolve().parent / "flamewatch"
MARKER = "<!-- values table -->"

_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][A-Za-z0-9_]*):(?: |$)")
_DOC_START = re.compile(r"^ *# -- (?P<text>.*)$")
_DOC_MORE = re.compile(r"^ *# (?P<text>.*)$")


class ValuesDocError(ValueError):
    """values.yaml and its comments do not make a complete table."""


@dataclass(frozen=True)
class Row:
    path: str
    kind: str
    default: str
    description: str


def documented_paths(text: str) -> dict[str, str]:
    """Dotted key path -> description, for every key with a `# --` comment right above it."""
    docs: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] | None = None
    for line in text.splitlines():
        if start := _DOC_START.match(line):
            pending = [start["text"].strip()]
        elif pending is not None and (more := _DOC_MORE.match(line)):
            pending.append(more["text"].strip())
        elif key := _KEY.match(line):
            indent = len(key["indent"])
            stack = [(i, k) for i, k in stack if i < indent] + [(indent, key["key"])]
            if pending is not None:
                docs[".".join(k for _, k in stack)] = " ".join(pending)
            pending = None
        elif line.strip() and not line.lstrip().startswith(("#", "-")):
            pending = None
    return docs


def _leaves(values: object, prefix: str = "") -> list[str]:
    if isinstance(values, dict) and values:
        return [leaf for key, value in values.items() for leaf in _leaves(value, f"{prefix}{key}.")]
    return [prefix.rstrip(".")]


def _lookup(values: dict, path: str) -> object:
    node: object = values
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ValuesDocError(f"values.yaml: the comment for {path} names no value")
        node = node[part]
    return node


def _kind(value: object) -> str:
    kinds = {bool: "bool", int: "int", float: "float", str: "string", list: "list", dict: "object"}
    return kinds.get(type(value), "null")


def rows(text: str) -> list[Row]:
    """The table's rows in file order; raises ValuesDocError for an undocumented value."""
    values = yaml.safe_load(text)
    docs = documented_paths(text)
    for leaf in _leaves(values):
        parts = leaf.split(".")
        if not any(".".join(parts[:n]) in docs for n in range(1, len(parts) + 1)):
            raise ValuesDocError(f"values.yaml: {leaf} has no `# --` comment (on it or on a parent)")
    table = []
    for path, description in docs.items():
        value = _lookup(values, path)
        table.append(Row(path, _kind(value), json.dumps(value, separators=(", ", ": ")), description))
    return table


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(template: str, values_text: str) -> str:
    lines = ["| Key | Type | Default | Description |", "|---|---|---|---|"]
    lines += [f"| `{r.path}` | {r.kind} | `{_cell(r.default)}` | {_cell(r.description)} |" for r in rows(values_text)]
    if MARKER not in template:
        raise ValuesDocError(f"README.tmpl.md: the marker {MARKER} is missing")
    return template.replace(MARKER, "\n".join(lines))


def expected_readme(chart: Path = CHART) -> str:
    return render((chart / "README.tmpl.md").read_text(), (chart / "values.yaml").read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when README.md is out of date")
    args = parser.parse_args(argv)
    try:
        text = expected_readme()
    except ValuesDocError as exc:
        print(f"readme.py: {exc}", file=sys.stderr)
        return 1
    readme = CHART / "README.md"
    if args.check:
        if not readme.exists() or readme.read_text() != text:
            print(f"readme.py: {readme} is out of date; run `make helm-docs`", file=sys.stderr)
            return 1
        return 0
    readme.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
