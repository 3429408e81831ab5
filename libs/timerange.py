"""Times, durations and time ranges as users and APIs write them, as int nanoseconds since the epoch.

parse_time accepts, after trimming surrounding whitespace:

- `now`, `now-<duration>`, `now+<duration>` (`now-1h`, `now-1d2h`), relative to one `now_ns`;
- an epoch number, whose unit follows from the size of its integer part: below 10^10 seconds,
  below 10^13 milliseconds, below 10^16 microseconds, otherwise nanoseconds; that is up to 10 digits
  seconds (`1700000000`), 11-13 milliseconds (`1700000000000`), 14-16 microseconds and 17-19
  nanoseconds (`1700000000000000000`). Each unit's latest value inside the int64 nanosecond range
  (2262-04-11) lies below its threshold, so every time from 1970-04-26T17:46:40Z (10^7 s) on reads
  right whatever its unit; only earlier sub-second timestamps are misread as a coarser unit.
  A fraction is allowed in every unit (`1700000000.5`); digits below a nanosecond are dropped;
- RFC 3339 (`2026-11-20T14:02:00Z`, `2026-11-20T16:02:00.123+02:00`): the UTC offset is required,
  because guessing a time zone would silently shift the range; up to 9 fractional digits are kept.

Durations are Prometheus-style: integer or decimal amounts with units y (365d), w, d, h, m, s, ms,
from largest to smallest, each at most once (`1h30m`, `500ms`); a bare number means seconds.

Errors:

    ValueError
    ├── TimeParseError  text that is not a time or a duration
    └── TimeRangeError  a range that starts after it ends
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

_SECOND = 10**9
_UNITS = {  # largest first: the order durations must be written in
    "y": 365 * 86_400 * _SECOND,
    "w": 7 * 86_400 * _SECOND,
    "d": 86_400 * _SECOND,
    "h": 3_600 * _SECOND,
    "m": 60 * _SECOND,
    "s": _SECOND,
    "ms": _SECOND // 1_000,
}
_UNIT_RANK = {unit: rank for rank, unit in enumerate(_UNITS)}
# [0-9], not \d: \d would also take other scripts' digits, which Decimal and int() then read.
_COMPONENT_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|[ywdhms])")
_NUMBER_RE = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_EPOCH_UNITS = ((10**10, _SECOND), (10**13, 10**6), (10**16, 10**3))  # (integer part below, ns per unit)
_RFC3339_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))?",
    re.ASCII,
)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Amounts are summed as Decimals and capped here before becoming ints: the cap is out of range from any
# int64 `now`, and int() of a Decimal with thousands of digits would fail (int_max_str_digits).
_NS_CAP = Decimal(2**65)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_DURATION_FORMS = (
    "a number of seconds (10, 0.5) or amounts with units y, w, d, h, m, s, ms "
    "from largest to smallest (1h30m, 500ms)"
)
_TIME_FORMS = (
    "now, now-<duration> (e.g. now-1h, now-1d2h), epoch seconds, milliseconds or nanoseconds "
    "(e.g. 1700000000, 1700000000000), or RFC 3339 (e.g. 2026-11-20T14:02:00Z)"
)


class TimeParseError(ValueError):
    """Text that is not a time or a duration; the message names the text and the accepted forms."""


class TimeRangeError(ValueError):
    """A time range whose start is after its end."""


def parse_duration(text: str) -> int:
    """Parse a positive duration such as `15s`, `1m30s`, `500ms` or `10` (seconds) into nanoseconds."""
    stripped = text.strip()
    negative = stripped.startswith("-")
    ns = _duration_ns(stripped[1:] if negative else stripped)
    if ns is None:
        raise TimeParseError(f'invalid duration "{text}": expected {_DURATION_FORMS}')
    if negative or ns <= 0:
        raise TimeParseError(f'invalid duration "{text}": must be greater than zero')
    if ns > _INT64_MAX:
        raise TimeParseError(f'invalid duration "{text}": longer than the int64 nanosecond range (292 years)')
    return ns


def _duration_ns(text: str) -> int | None:
    """Nanoseconds (zero allowed), or None when `text` is not a duration."""
    if _NUMBER_RE.fullmatch(text):
        return _capped_int(Decimal(text) * _SECOND)
    total, pos, last_rank = Decimal(0), 0, -1
    while pos < len(text):
        match = _COMPONENT_RE.match(text, pos)
        if match is None or _UNIT_RANK[match[2]] <= last_rank:
            return None
        total += Decimal(match[1]) * _UNITS[match[2]]
        pos, last_rank = match.end(), _UNIT_RANK[match[2]]
    return _capped_int(total) if text else None


def _capped_int(ns: Decimal) -> int:
    return int(min(ns, _NS_CAP))


def parse_time(text: str, now_ns: int | None = None) -> int:
    """Parse a time in any accepted form (see the module docstring) into epoch nanoseconds."""
    stripped = text.strip()
    if stripped.startswith("now"):
        ns = _relative_ns(text, stripped[3:], time.time_ns() if now_ns is None else now_ns)
    elif _NUMBER_RE.fullmatch(stripped):
        ns = _epoch_ns(stripped)
    elif match := _RFC3339_RE.fullmatch(stripped):
        ns = _rfc3339_ns(text, match)
    else:
        raise TimeParseError(f'invalid time "{text}": expected {_TIME_FORMS}')
    if not _INT64_MIN <= ns <= _INT64_MAX:
        raise TimeParseError(f'invalid time "{text}": outside the representable range (years 1677 to 2262)')
    return ns


def _relative_ns(text: str, offset: str, now_ns: int) -> int:
    if not offset:
        return now_ns
    ns = _duration_ns(offset[1:]) if offset[0] in "+-" else None
    if ns is None:
        raise TimeParseError(
            f'invalid time "{text}": expected now-<duration> or now+<duration> with units '
            "y, w, d, h, m, s, ms (e.g. now-1h, now-1d2h)"
        )
    return now_ns - ns if offset[0] == "-" else now_ns + ns


def _epoch_ns(number: str) -> int:
    value = Decimal(number)
    scale = next((ns for below, ns in _EPOCH_UNITS if value < below), 1)  # by the integer part's size
    return _capped_int(value * scale)


def _rfc3339_ns(text: str, match: re.Match[str]) -> int:
    year, month, day, hour, minute, second = (int(group) for group in match.groups()[:6])
    fraction, zulu, sign, offset_hours, offset_minutes = match.groups()[6:]
    if not zulu and not sign:
        raise TimeParseError(f'invalid time "{text}": RFC 3339 needs a UTC offset such as Z or +02:00')
    try:
        local = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as exc:  # month 13, February 30, second 60, ...
        raise TimeParseError(f'invalid time "{text}": {exc}') from exc
    seconds = (local - _EPOCH) // timedelta(seconds=1) - _offset_seconds(
        text, sign, offset_hours, offset_minutes
    )
    return seconds * _SECOND + int((fraction or "").ljust(9, "0"))


def _offset_seconds(text: str, sign: str | None, hours: str | None, minutes: str | None) -> int:
    if not sign:  # Z
        return 0
    if int(hours) > 23 or int(minutes) > 59:
        raise TimeParseError(f'invalid time "{text}": UTC offset out of range')
    return (int(hours) * 3600 + int(minutes) * 60) * (-1 if sign == "-" else 1)


def resolve_range(
    start: str | None, end: str | None, *, default_span: str = "1h", now_ns: int | None = None
) -> tuple[int, int]:
    """Resolve a (from, until) pair; a missing or empty end is now, a missing start is end - default_span."""
    now = time.time_ns() if now_ns is None else now_ns  # one "now" for both ends
    until = now if not (end or "").strip() else parse_time(end, now)
    # A default span reaching past the earliest representable time stops there.
    earliest = max(until - parse_duration(default_span), _INT64_MIN)
    since = parse_time(start, now) if (start or "").strip() else earliest
    if since > until:
        raise TimeRangeError(f"from ({format_ns(since)}) is after until ({format_ns(until)})")
    return since, until


def format_ns(ns: int) -> str:
    """RFC 3339 in UTC with milliseconds, e.g. `2026-11-20T14:02:00.000Z` (rounded down)."""
    ms = ns // 1_000_000
    moment = _EPOCH + timedelta(milliseconds=ms)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"
