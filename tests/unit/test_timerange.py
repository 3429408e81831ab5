"""Parsing of times, durations and ranges; formatting of nanosecond times."""

from __future__ import annotations

import time

import pytest

from flamewatch.timerange import (
    TimeParseError,
    TimeRangeError,
    format_ns,
    parse_duration,
    parse_time,
    resolve_range,
)

S = 10**9
MS = 10**6
NOW = 1_795_183_320 * S  # 2026-11-20T14:02:00Z
EPOCH_1700 = 1_700_000_000 * S  # 2023-11-14T22:13:20Z

TIME_FORMS = (
    "now, now-<duration> (e.g. now-1h, now-1d2h), epoch seconds, milliseconds or nanoseconds "
    "(e.g. 1700000000, 1700000000000), or RFC 3339 (e.g. 2026-11-20T14:02:00Z)"
)
RELATIVE_FORMS = (
    "expected now-<duration> or now+<duration> with units y, w, d, h, m, s, ms (e.g. now-1h, now-1d2h)"
)
DURATION_FORMS = (
    "a number of seconds (10, 0.5) or amounts with units y, w, d, h, m, s, ms "
    "from largest to smallest (1h30m, 500ms)"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW),
        (" now ", NOW),
        ("now-1h", NOW - 3600 * S),
        ("now-30m", NOW - 1800 * S),
        ("now-1d2h", NOW - 26 * 3600 * S),
        ("now-1w", NOW - 7 * 86400 * S),
        ("now-1h30m15s500ms", NOW - (5415 * S + 500 * MS)),
        ("now-90", NOW - 90 * S),
        ("now-0s", NOW),
        ("now+5m", NOW + 300 * S),
        # Epoch numbers: the unit follows from the size of the integer part.
        ("0", 0),
        ("1700000000", EPOCH_1700),
        ("1700000000.5", EPOCH_1700 + 500 * MS),
        ("1700000000.123456789123", EPOCH_1700 + 123_456_789),  # below a nanosecond is dropped
        ("9223372036", 9_223_372_036 * S),  # the latest whole second in range; 10 digits: seconds
        ("10000000000", 10_000_000_000 * MS),  # 10^10: milliseconds (1970-04-26T17:46:40Z)
        ("1700000000000", EPOCH_1700),
        ("1700000000000.5", EPOCH_1700 + 500_000),
        ("9223372036854", 9_223_372_036_854 * MS),  # the latest whole millisecond in range
        ("10000000000000", 10_000_000_000_000 * 1000),  # 10^13: microseconds
        ("1700000000000000", EPOCH_1700),
        ("10000000000000000", 10_000_000_000_000_000),  # 10^16: nanoseconds
        ("1700000000000000000", EPOCH_1700),
        ("9223372036854775807", 2**63 - 1),
        # RFC 3339.
        ("2026-11-20T14:02:00Z", NOW),
        ("2026-11-20t14:02:00z", NOW),
        ("2026-11-20 14:02:00Z", NOW),
        ("2026-11-20T16:02:00+02:00", NOW),
        ("2026-11-20T09:32:00-04:30", NOW),
        ("2026-11-20T14:02:00.5Z", NOW + 500 * MS),
        ("2026-11-20T14:02:00.123456789Z", NOW + 123_456_789),
        ("2026-11-20T16:02:00.001+02:00", NOW + MS),
        ("1970-01-01T00:00:00Z", 0),
        ("1969-12-31T23:59:59Z", -S),
        ("2024-02-29T00:00:00Z", 1_709_164_800 * S),
    ],
)
def test_parse_time(text: str, expected: int) -> None:
    assert parse_time(text, now_ns=NOW) == expected


def test_parse_time_defaults_now_to_the_clock() -> None:
    before = time.time_ns()
    parsed = parse_time("now-1m")
    assert before - 60 * S <= parsed <= time.time_ns() - 60 * S


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", f'invalid time "": expected {TIME_FORMS}'),
        ("yesterday", f'invalid time "yesterday": expected {TIME_FORMS}'),
        ("-1700000000", f'invalid time "-1700000000": expected {TIME_FORMS}'),
        ("1e9", f'invalid time "1e9": expected {TIME_FORMS}'),
        ("1700000000.", f'invalid time "1700000000.": expected {TIME_FORMS}'),
        (".5", f'invalid time ".5": expected {TIME_FORMS}'),
        ("2026-11-20", f'invalid time "2026-11-20": expected {TIME_FORMS}'),
        ("2026-11-20T14:02Z", f'invalid time "2026-11-20T14:02Z": expected {TIME_FORMS}'),
        ("2026-11-20T14:02:00.Z", f'invalid time "2026-11-20T14:02:00.Z": expected {TIME_FORMS}'),
        (
            "2026-11-20T14:02:00.1234567890Z",
            f'invalid time "2026-11-20T14:02:00.1234567890Z": expected {TIME_FORMS}',
        ),
        ("now-1x", f'invalid time "now-1x": {RELATIVE_FORMS}'),
        ("now-", f'invalid time "now-": {RELATIVE_FORMS}'),
        ("now1h", f'invalid time "now1h": {RELATIVE_FORMS}'),
        ("now - 1h", f'invalid time "now - 1h": {RELATIVE_FORMS}'),
        ("now-30m1h", f'invalid time "now-30m1h": {RELATIVE_FORMS}'),
        ("nowadays", f'invalid time "nowadays": {RELATIVE_FORMS}'),
        (
            "2026-11-20T14:02:00",
            'invalid time "2026-11-20T14:02:00": RFC 3339 needs a UTC offset such as Z or +02:00',
        ),
        ("2026-13-01T00:00:00Z", 'invalid time "2026-13-01T00:00:00Z": month must be in 1..12'),
        ("2026-02-30T00:00:00Z", 'invalid time "2026-02-30T00:00:00Z": day is out of range for month'),
        ("2026-11-20T24:00:00Z", 'invalid time "2026-11-20T24:00:00Z": hour must be in 0..23'),
        ("2026-11-20T14:02:60Z", 'invalid time "2026-11-20T14:02:60Z": second must be in 0..59'),
        ("2026-11-20T14:02:00+24:00", 'invalid time "2026-11-20T14:02:00+24:00": UTC offset out of range'),
        ("2026-11-20T14:02:00+02:60", 'invalid time "2026-11-20T14:02:00+02:60": UTC offset out of range'),
        (
            "9999999999",
            'invalid time "9999999999": outside the representable range (years 1677 to 2262)',
        ),
        (
            "9223372036854775808",
            'invalid time "9223372036854775808": outside the representable range (years 1677 to 2262)',
        ),
        (
            "2300-01-01T00:00:00Z",
            'invalid time "2300-01-01T00:00:00Z": outside the representable range (years 1677 to 2262)',
        ),
    ],
)
def test_parse_time_errors(text: str, message: str) -> None:
    with pytest.raises(TimeParseError) as caught:
        parse_time(text, now_ns=NOW)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("15s", 15 * S),
        ("1m30s", 90 * S),
        ("500ms", 500 * MS),
        ("1h", 3600 * S),
        ("1d", 86400 * S),
        ("2w", 14 * 86400 * S),
        ("1y", 365 * 86400 * S),
        ("1h30m", 5400 * S),
        ("1d2h3m4s5ms", (86400 + 7200 + 180 + 4) * S + 5 * MS),
        ("1.5h", 5400 * S),
        ("90m", 5400 * S),  # amounts may exceed the next unit up
        ("10", 10 * S),
        ("0.5", 500 * MS),
        (" 15s ", 15 * S),
        ("1ms", MS),
        ("0.000000001", 1),
    ],
)
def test_parse_duration(text: str, expected: int) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", f'invalid duration "": expected {DURATION_FORMS}'),
        ("abc", f'invalid duration "abc": expected {DURATION_FORMS}'),
        ("1x", f'invalid duration "1x": expected {DURATION_FORMS}'),
        ("h", f'invalid duration "h": expected {DURATION_FORMS}'),
        ("1 h", f'invalid duration "1 h": expected {DURATION_FORMS}'),
        ("30m1h", f'invalid duration "30m1h": expected {DURATION_FORMS}'),
        ("1h1h", f'invalid duration "1h1h": expected {DURATION_FORMS}'),
        ("1s500", f'invalid duration "1s500": expected {DURATION_FORMS}'),
        ("1H", f'invalid duration "1H": expected {DURATION_FORMS}'),
        ("-", f'invalid duration "-": expected {DURATION_FORMS}'),
        ("0", 'invalid duration "0": must be greater than zero'),
        ("0s", 'invalid duration "0s": must be greater than zero'),
        ("0h0m", 'invalid duration "0h0m": must be greater than zero'),
        ("0.0000000001", 'invalid duration "0.0000000001": must be greater than zero'),
        ("-5m", 'invalid duration "-5m": must be greater than zero'),
        ("-10", 'invalid duration "-10": must be greater than zero'),
    ],
)
def test_parse_duration_errors(text: str, message: str) -> None:
    with pytest.raises(TimeParseError) as caught:
        parse_duration(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("start", "end", "span", "expected"),
    [
        (None, None, "1h", (NOW - 3600 * S, NOW)),
        ("", "", "1h", (NOW - 3600 * S, NOW)),  # empty query parameters count as missing
        (None, None, "15m", (NOW - 900 * S, NOW)),
        ("now-6h", None, "1h", (NOW - 6 * 3600 * S, NOW)),
        (None, "now-1d", "1h", (NOW - 25 * 3600 * S, NOW - 24 * 3600 * S)),  # the span ends at `until`
        ("1700000000", "1700000060000", "1h", (EPOCH_1700, EPOCH_1700 + 60 * S)),
        ("2026-11-20T14:00:00Z", "2026-11-20T14:02:00Z", "1h", (NOW - 120 * S, NOW)),
        ("now", "now", "1h", (NOW, NOW)),  # an empty range is allowed
    ],
)
def test_resolve_range(start: str | None, end: str | None, span: str, expected: tuple[int, int]) -> None:
    assert resolve_range(start, end, default_span=span, now_ns=NOW) == expected


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        ("now", "now-1h", "from (2026-11-20T14:02:00.000Z) is after until (2026-11-20T13:02:00.000Z)"),
        (
            "2026-11-20T14:02:00.002Z",
            "2026-11-20T14:02:00.001Z",
            "from (2026-11-20T14:02:00.002Z) is after until (2026-11-20T14:02:00.001Z)",
        ),
        ("now+1m", None, "from (2026-11-20T14:03:00.000Z) is after until (2026-11-20T14:02:00.000Z)"),
    ],
)
def test_resolve_range_rejects_reversed_ranges(start: str | None, end: str | None, message: str) -> None:
    with pytest.raises(TimeRangeError) as caught:
        resolve_range(start, end, now_ns=NOW)
    assert str(caught.value) == message


EARLIEST = "1677-09-21T00:12:43.145224192Z"  # -2**63 ns


def test_resolve_range_default_span_stops_at_the_earliest_time() -> None:
    assert parse_time(EARLIEST) == -(2**63)
    assert resolve_range(None, EARLIEST, now_ns=NOW) == (-(2**63), -(2**63))
    assert resolve_range(None, "1677-09-21T00:42:43.145224192Z", now_ns=NOW) == (-(2**63), -(2**63) + 1800 * S)


# Durations past the int64 nanosecond range (found by fuzzing, fuzz/README.md), numbers with thousands
# of digits (int() refused them with its own message) and digits of other scripts that `\d` matched.
OUT_OF_RANGE = "outside the representable range (years 1677 to 2262)"
TOO_LONG = "longer than the int64 nanosecond range (292 years)"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("9" * 5000, OUT_OF_RANGE),
        ("1" + "0" * 4400 + ".5", OUT_OF_RANGE),
        ("now-" + "9" * 5000 + "s", OUT_OF_RANGE),
        ("now+" + "9" * 5000, OUT_OF_RANGE),
        ("\u0661\u0667\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660", f"expected {TIME_FORMS}"),
        ("\u0662\u0660\u0662\u0666-11-20T14:02:00Z", f"expected {TIME_FORMS}"),
    ],
)
def test_parse_time_errors_for_fuzzed_input(text: str, problem: str) -> None:
    with pytest.raises(TimeParseError) as caught:
        parse_time(text, now_ns=NOW)
    assert str(caught.value) == f'invalid time "{text}": {problem}'


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("9999999999", TOO_LONG),
        ("9223372036.854775808", TOO_LONG),
        ("293y", TOO_LONG),
        ("9" * 5000, TOO_LONG),
        ("9" * 5000 + "s", TOO_LONG),
        ("1" + "0" * 5000 + "y1ms", TOO_LONG),
        ("\u0665s", f"expected {DURATION_FORMS}"),
    ],
)
def test_parse_duration_errors_for_fuzzed_input(text: str, problem: str) -> None:
    with pytest.raises(TimeParseError) as caught:
        parse_duration(text)
    assert str(caught.value) == f'invalid duration "{text}": {problem}'


def test_the_longest_duration_is_the_int64_range() -> None:
    assert parse_duration("9223372036.854775807") == 2**63 - 1


def test_resolve_range_reports_unparseable_ends() -> None:
    with pytest.raises(TimeParseError, match='^invalid time "soon": expected now'):
        resolve_range("soon", None, now_ns=NOW)


def test_resolve_range_uses_one_now_for_both_ends() -> None:
    start, end = resolve_range("now-1h", "now")
    assert end - start == 3600 * S


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (NOW, "2026-11-20T14:02:00.000Z"),
        (NOW + 123_999_999, "2026-11-20T14:02:00.123Z"),  # rounded down to the millisecond
        (0, "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (EPOCH_1700, "2023-11-14T22:13:20.000Z"),
        (2**63 - 1, "2262-04-11T23:47:16.854Z"),
    ],
)
def test_format_ns(ns: int, text: str) -> None:
    assert format_ns(ns) == text


@pytest.mark.parametrize("ns", [NOW, NOW + 5 * MS, 0, EPOCH_1700 + 999 * MS])
def test_format_ns_round_trips_through_parse_time(ns: int) -> None:
    assert parse_time(format_ns(ns)) == ns
