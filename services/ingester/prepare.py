"""Turn one pushed pprof and its labels into typed profiles ready for a block, or reject it.

Everything that can be wrong with a push is found here, before anything is written: size limits
(checked while decompressing, so a gzip bomb stops at the limit), the number of sample types (checked
right after decoding, before anything is split), pprof rules, the profile's time window and label
rules (every string that reaches Postgres: a NUL there would fail the whole flush, not just this push).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from flamewatch.ingester.config import IngestLimits
from flamewatch.labels.labelset import fingerprint, validate_labels
from flamewatch.labels.names import DEFAULT_SERVICE, NAME_LABEL, SERVICE_LABEL, TYPE_LABEL
from flamewatch.pprof import InvalidProfile, LimitExceeded, decode, decompress, split, validate
from flamewatch.storage.blockwrite import BlockEntry

_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class Prepared:
    entries: list[BlockEntry]
    nbytes: int  # decompressed pprof size, what batching counts
    dated_by_server: bool = False  # the pprof had no time and no span: `now_ns` dates it (see `service.py`)


def prepare(labels: dict[str, str], raw: bytes, limits: IngestLimits, now_ns: int,
            name_hint: str | None = None, span: tuple[int, int] | None = None,
            push_budget: int | None = None) -> Prepared:
    """`name_hint` (for example from a file name) only chooses between names the content allows;
    `span` (start, end in ns, as a push protocol may send them) dates a pprof that has no time;
    `push_budget` is what the push this pprof came in may still decompress to (its other pprofs took the rest)."""
    if len(raw) > limits.max_compressed_bytes:
        raise LimitExceeded(f"profile is {len(raw)} bytes, the limit is {limits.max_compressed_bytes}")
    max_bytes = limits.max_decompressed_bytes
    if push_budget is not None and push_budget < max_bytes:
        try:
            data = decompress(raw, push_budget)
        except LimitExceeded:
            raise LimitExceeded(f"the push's profiles are more than {limits.max_push_decompressed_bytes} bytes "
                                "decompressed together (--limits.max-push-decompressed-bytes); send them in "
                                "several pushes") from None
        max_bytes = push_budget
    else:
        data = decompress(raw, max_bytes)
    profile = decode(data, max_bytes)
    _check_sample_types(len(profile.sample_types), limits.max_sample_types)
    validate(profile, limits.profile_limits())
    base = {SERVICE_LABEL: DEFAULT_SERVICE, **labels}
    time_ns = profile.time_nanos or (span[0] if span else now_ns)
    duration_ns = profile.duration_nanos or (span[1] - span[0] if span else 0)
    check_time(time_ns, duration_ns, limits, now_ns)
    entries = []
    digest = hashlib.blake2b(data, digest_size=16).digest()
    for column, typed in enumerate(split(profile, base.get(NAME_LABEL), name_hint)):
        series = {**base, NAME_LABEL: typed.profile_type.name, TYPE_LABEL: typed.profile_type.id}
        validate_labels(series, max_labels=limits.max_labels, max_name_length=limits.max_label_name_length,
                        max_value_length=limits.max_label_value_length)
        entries.append(BlockEntry(series, fingerprint(series), typed, time_ns, duration_ns,
                                  content_hash(digest, column)))
    return Prepared(entries, len(data), dated_by_server=not profile.time_nanos and not span)


def _check_sample_types(count: int, limit: int) -> None:
    # Each sample type becomes a series: a small pprof declaring thousands would create thousands.
    if count > limit:
        raise LimitExceeded(f"profile has {count} sample types, the limit is {limit} (each becomes a series; "
                            "--limits.max-sample-types raises it)")


def check_time(time_ns: int, duration_ns: int, limits: IngestLimits, now_ns: int) -> None:
    """Refuse a profile dated outside [now - reject_older_than, now + reject_newer_than].

    Times are int64 nanoseconds everywhere (Postgres bigint): a profile dated near the ends of that
    range cannot be bucketed into hours or days without overflowing, so it is refused here rather
    than breaking every later compaction of its tenant."""
    oldest = now_ns - limits.reject_older_than_ns if limits.reject_older_than_ns else 0
    newest = now_ns + limits.reject_newer_than_ns
    if time_ns < oldest:
        flag = ("--limits.reject-older-than (by default the tenant's retention)" if oldest
                else "times before 1970 are never accepted")
        raise InvalidProfile(f"profile time {_when(time_ns)} is too old: accepted are times from {_when(oldest)} to "
                             f"{_when(newest)} ({flag}); send the profile with its real time")
    if time_ns > newest:
        raise InvalidProfile(f"profile time {_when(time_ns)} is too far in the future: accepted are times up to "
                             f"{_when(newest)}, {_minutes(limits.reject_newer_than_ns)} after the server's clock "
                             "(--limits.reject-newer-than); check the client's clock")
    if duration_ns < 0 or duration_ns > _INT64_MAX - time_ns:
        raise InvalidProfile(f"profile duration {duration_ns} ns is out of range: it must be >= 0 and end before "
                             "the year 2262")


def _when(ns: int) -> str:
    try:
        return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    except (OverflowError, ValueError, OSError):  # far outside what datetime can show
        return f"{ns} ns since 1970"


def _minutes(ns: int) -> str:
    return f"{ns / 60e9:g} min"


def content_hash(digest: bytes, column: int) -> int:
    """A non-zero signed 64-bit hash of one sample type of a pprof: with the series and time it tells
    a retried push from a new profile."""
    value = int.from_bytes(hashlib.blake2b(digest + column.to_bytes(4, "big"), digest_size=8).digest(), "big",
                           signed=True)
    return value or 1
