"""Label sets: the naming rule, limit checks, the series fingerprint and `name=value` CLI arguments.

A series is identified by its label set; `fingerprint` is the key under which the series is stored
(the `series.fingerprint` bigint column), so its encoding must never change.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping

from flamewatch.labels.errors import InvalidLabelError

LABEL_NAME_PATTERN = "[a-zA-Z_][a-zA-Z0-9_]*"
_LABEL_NAME_RE = re.compile(LABEL_NAME_PATTERN)

# 0xff never occurs in UTF-8, so it cannot be confused with a byte of a name or value: the pairs
# ("a", "b=c") and ("a=b", "c") hash differently.
_SEPARATOR = b"\xff"


def is_valid_label_name(name: str) -> bool:
    """Whether `name` matches the Prometheus label name rule."""
    return _LABEL_NAME_RE.fullmatch(name) is not None


def validate_labels(
    labels: Mapping[str, str], *, max_labels: int, max_name_length: int, max_value_length: int
) -> None:
    """Raise InvalidLabelError for the first rule or limit `labels` breaks; lengths are UTF-8 bytes.

    Every label of a series reaches Postgres (`series.labels`, jsonb), so this is also where a string
    Postgres would refuse is stopped: a NUL character, or a lone surrogate (not UTF-8)."""
    if len(labels) > max_labels:
        raise InvalidLabelError(f"series has {len(labels)} labels, the limit is {max_labels}")
    for name in sorted(labels):
        _validate_name(name, max_name_length)
        _validate_value(name, labels[name], max_value_length)


def _validate_name(name: str, max_length: int) -> None:
    if not is_valid_label_name(name):
        raise InvalidLabelError(f'invalid label name "{name}": must match {LABEL_NAME_PATTERN}')
    if len(name) > max_length:  # the name is ASCII, so characters are bytes
        raise InvalidLabelError(f'label "{name}": name is {len(name)} bytes long, the limit is {max_length}')


def _validate_value(name: str, value: str, max_length: int) -> None:
    if not value:
        raise InvalidLabelError(f'label "{name}" has an empty value')
    if "\x00" in value:  # Postgres stores no NUL in text or jsonb: it would fail the whole flush, not one push
        raise InvalidLabelError(f'label "{name}": value contains a NUL character (\\x00 at position '
                                f'{value.index(chr(0))}), which cannot be stored; remove it')
    size = len(_utf8(name, value))
    if size > max_length:
        raise InvalidLabelError(f'label "{name}": value is {size} bytes long, the limit is {max_length}')


def _utf8(name: str, value: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates, e.g. from bytes decoded with surrogateescape
        raise InvalidLabelError(f'label "{name}": value is not valid UTF-8') from exc


def fingerprint(labels: Mapping[str, str]) -> int:
    """A stable signed 64-bit id of the label set (fits a Postgres bigint); independent of order."""
    digest = hashlib.blake2b(digest_size=8)
    for name in sorted(labels):
        digest.update(name.encode("utf-8") + _SEPARATOR)
        digest.update(_utf8(name, labels[name]) + _SEPARATOR)
    return int.from_bytes(digest.digest(), "big", signed=True)


def parse_label_args(items: Iterable[str]) -> dict[str, str]:
    """Parse CLI `name=value` arguments; the value is everything after the first `=`."""
    labels: dict[str, str] = {}
    for item in items:
        name, value = _split_label_arg(item)
        if name in labels:
            raise InvalidLabelError(f'invalid label argument "{item}": label "{name}" was already given')
        labels[name] = value
    return labels


def _split_label_arg(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep:
        raise InvalidLabelError(f'invalid label argument "{item}": expected name=value')
    if not is_valid_label_name(name):
        raise InvalidLabelError(
            f'invalid label argument "{item}": label name must match {LABEL_NAME_PATTERN}'
        )
    if not value:
        raise InvalidLabelError(f'invalid label argument "{item}": value is empty')
    return name, value
