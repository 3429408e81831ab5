"""Fuzz target: times, durations and ranges as users write them (`flamewatch.timerange`).

An input's first byte picks `parse_time`, `parse_duration` or `resolve_range` (the rest split in
two at the first NUL for the range's ends); the text is UTF-8 with undecodable bytes replaced.
Expected: `TimeParseError`, `TimeRangeError`.

Checks on what parses: times are int64 nanoseconds and format back to RFC 3339; durations are
positive int64 nanoseconds; a range's ends are int64 nanoseconds with from <= until.
"""

from __future__ import annotations

import sys

import atheris
from harness import check, main

with atheris.instrument_imports(include=["flamewatch"]):
    from flamewatch.timerange import (
        TimeParseError,
        TimeRangeError,
        format_ns,
        parse_duration,
        parse_time,
        resolve_range,
    )

EXPECTED = (TimeParseError, TimeRangeError)
NOW_NS = 1_763_600_000_000_000_000  # a fixed "now" keeps each input's outcome reproducible
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def target(data: bytes) -> None:
    if not data:
        return
    text = data[1:].decode("utf-8", errors="replace")
    mode = data[0] % 3
    if mode == 0:
        ns = parse_time(text, NOW_NS)
        check(INT64_MIN <= ns <= INT64_MAX, f"{ns} is outside int64")
        format_ns(ns)
    elif mode == 1:
        ns = parse_duration(text)
        check(0 < ns <= INT64_MAX, f"duration {ns} is not a positive int64")
    else:
        start, _, end = text.partition("\0")
        since, until = resolve_range(start, end, now_ns=NOW_NS)
        check(INT64_MIN <= since <= until <= INT64_MAX, f"range {since}..{until} is not an int64 range")


if __name__ == "__main__":
    main("time", target, EXPECTED)
    sys.exit(0)
