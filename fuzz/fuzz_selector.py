"""Fuzz target: the selector language (`flamewatch.labels.selector`), as the query APIs receive it.

An input is UTF-8 text (undecodable bytes replaced, as an HTTP query string is decoded); its first
byte picks `parse_query` (`<profile type>{...}`) or `parse_selector` (`{...}`, a `match[]` value).
Expected: `SelectorError`.

Checks on a selector that parses:
- the canonical text parses back to the same thing (`parse_query(str(q)) == q`, as documented);
- every matcher can be applied to label values (absent, empty, and a slice of the input).
"""

from __future__ import annotations

import sys

import atheris
from harness import check, main

with atheris.instrument_imports(include=["flamewatch"]):
    from flamewatch.labels.errors import SelectorError
    from flamewatch.labels.selector import format_matchers, parse_query, parse_selector

EXPECTED = (SelectorError,)


def target(data: bytes) -> None:
    if not data:
        return
    text = data[1:].decode("utf-8", errors="replace")
    if data[0] & 1:
        query = parse_query(text)
        check(parse_query(str(query)) == query, f"{str(query)!r} does not parse back to {query!r}")
        matchers = query.matchers
    else:
        matchers = parse_selector(text)
        canonical = format_matchers(matchers)
        check(parse_selector(canonical) == matchers, f"{canonical!r} does not parse back to {matchers!r}")
    for matcher in matchers:
        for value in (None, "", text[:24]):
            matcher.matches(value)


if __name__ == "__main__":
    main("selector", target, EXPECTED)
    sys.exit(0)
