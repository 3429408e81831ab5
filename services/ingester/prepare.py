"""Turn one pushed pprof and its labels into typed profiles ready for a block, or reject it.

Everything that can be wrong with a push is found here, before anything is written: size limits
(checked while decompressing, so a gzip bomb stops at the limit), pprof rules, label rules.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from flamewatch.config import IngestLimits
from flamewatch.labels.labelset import fingerprint, validate_labels
from flamewatch.pprof import LimitExceeded, decode, decompress, split, validate
from flamewatch.storage.block import BlockEntry

NAME_LABEL = "__name__"
TYPE_LABEL = "__profile_type__"
SERVICE_LABEL = "service_name"
DEFAULT_SERVICE = "unknown_service"


@dataclass(frozen=True)
class Prepared:
    entries: list[BlockEntry]
    nbytes: int  # decompressed pprof size, what batching counts


def prepare(labels: dict[str, str], raw: bytes, limits: IngestLimits, now_ns: int,
            name_hint: str | None = None, span: tuple[int, int] | None = None) -> Prepared:
    """`name_hint` (for example from a file name) only chooses between names the content allows;
    `span` (start, end in ns, as a push protocol may send them) dates a pprof that has no time."""
    if len(raw) > limits.max_compressed_bytes:
        raise LimitExceeded(f"profile is {len(raw)} bytes, the limit is {limits.max_compressed_bytes}")
    data = decompress(raw, limits.max_decompressed_bytes)
    profile = decode(data, limits.max_decompressed_bytes)
    validate(profile, limits.profile_limits())
    base = {SERVICE_LABEL: DEFAULT_SERVICE, **labels}
    time_ns = profile.time_nanos or (span[0] if span else now_ns)
    duration_ns = profile.duration_nanos or (span[1] - span[0] if span else 0)
    entries = []
    digest = hashlib.blake2b(data, digest_size=16).digest()
    for column, typed in enumerate(split(profile, base.get(NAME_LABEL), name_hint)):
        series = {**base, NAME_LABEL: typed.profile_type.name, TYPE_LABEL: typed.profile_type.id}
        validate_labels(series, max_labels=limits.max_labels, max_name_length=limits.max_label_name_length,
                        max_value_length=limits.max_label_value_length)
        entries.append(BlockEntry(series, fingerprint(series), typed, time_ns, duration_ns,
                                  content_hash(digest, column)))
    return Prepared(entries, len(data))



def content_hash(digest: bytes, column: int) -> int:
    """A non-zero signed 64-bit hash of one sample type of a pprof: with the series and time it tells
    a retried push from a new profile."""
    value = int.from_bytes(hashlib.blake2b(digest + column.to_bytes(4, "big"), digest_size=8).digest(), "big",
                           signed=True)
    return value or 1
