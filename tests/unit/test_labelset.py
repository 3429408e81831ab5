"""Label set rules and limits, the series fingerprint and CLI label arguments."""

from __future__ import annotations

import pytest

from flamewatch.labels.errors import InvalidLabelError, LabelError
from flamewatch.labels.labelset import fingerprint, is_valid_label_name, parse_label_args, validate_labels

LIMITS = {"max_labels": 32, "max_name_length": 64, "max_value_length": 2048}


@pytest.mark.parametrize(
    "labels",
    [
        {},
        {"service_name": "demo"},
        {"__name__": "process_cpu", "__profile_type__": "process_cpu:cpu:nanoseconds:cpu:nanoseconds"},
        {"_": "x", "A9_z": "with spaces and = signs"},
        {f"l{i}": "v" for i in range(32)},
        {"n" * 64: "v" * 2048},
        {"pod": "é" * 1024},  # 2048 bytes
    ],
)
def test_valid_labels(labels: dict[str, str]) -> None:
    validate_labels(labels, **LIMITS)


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({f"l{i}": "v" for i in range(40)}, "series has 40 labels, the limit is 32"),
        ({"pod": "x" * 3000}, 'label "pod": value is 3000 bytes long, the limit is 2048'),
        ({"pod": "é" * 1025}, 'label "pod": value is 2050 bytes long, the limit is 2048'),
        ({"n" * 65: "v"}, f'label "{"n" * 65}": name is 65 bytes long, the limit is 64'),
        ({"9x": "v"}, 'invalid label name "9x": must match [a-zA-Z_][a-zA-Z0-9_]*'),
        ({"a-b": "v"}, 'invalid label name "a-b": must match [a-zA-Z_][a-zA-Z0-9_]*'),
        ({"": "v"}, 'invalid label name "": must match [a-zA-Z_][a-zA-Z0-9_]*'),
        ({"pödname": "v"}, 'invalid label name "pödname": must match [a-zA-Z_][a-zA-Z0-9_]*'),
        ({"x": ""}, 'label "x" has an empty value'),
        ({"x": "\udcff"}, 'label "x": value is not valid UTF-8'),
        ({"foo": "a\x00b"}, 'label "foo": value contains a NUL character (\\x00 at position 1), which cannot be '
                             'stored; remove it'),  # Postgres refused it at the flush: every push of it failed
        ({"a\x00": "v"}, 'invalid label name "a\x00": must match [a-zA-Z_][a-zA-Z0-9_]*'),
        ({"b": "", "a": "", "9": "v"}, 'invalid label name "9": must match [a-zA-Z_][a-zA-Z0-9_]*'),  # sorted
        ({"b": "", "a": ""}, 'label "a" has an empty value'),
    ],
)
def test_invalid_labels(labels: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidLabelError) as caught:
        validate_labels(labels, **LIMITS)
    assert str(caught.value) == message


def test_invalid_label_error_is_a_value_error() -> None:
    with pytest.raises(LabelError):
        validate_labels({"x": ""}, **LIMITS)
    with pytest.raises(ValueError):
        validate_labels({"x": ""}, **LIMITS)


@pytest.mark.parametrize(
    ("name", "valid"),
    [("a", True), ("_", True), ("__name__", True), ("A_9", True), ("9", False), ("a.b", False), ("", False)],
)
def test_is_valid_label_name(name: str, valid: bool) -> None:
    assert is_valid_label_name(name) is valid


# The fingerprint keys stored series: these values must never change.
@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, -1970711489451281740),
        ({"service_name": "demo"}, -4033502736928060539),
        ({"__name__": "process_cpu", "job": "demo", "instance": "127.0.0.1:6060"}, 157388498693363323),
    ],
)
def test_fingerprint_is_stable(labels: dict[str, str], expected: int) -> None:
    assert fingerprint(labels) == expected


def test_fingerprint_ignores_order() -> None:
    assert fingerprint({"a": "1", "b": "2"}) == fingerprint({"b": "2", "a": "1"})


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"a": "b=c"}, {"a=b": "c"}),
        ({"a": "bc"}, {"ab": "c"}),
        ({"a": "1", "b": "2"}, {"a": "1b2"}),
        ({"a": "1"}, {"a": "2"}),
        ({"a": "1"}, {"b": "1"}),
        ({}, {"a": "1"}),
    ],
)
def test_fingerprint_separates_pairs(first: dict[str, str], second: dict[str, str]) -> None:
    assert fingerprint(first) != fingerprint(second)


def test_fingerprint_fits_a_signed_bigint() -> None:
    values = [fingerprint({"i": str(i)}) for i in range(2000)]
    assert all(-(2**63) <= value < 2**63 for value in values)
    assert any(value < 0 for value in values)
    assert len(set(values)) == len(values)


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], {}),
        (["service_name=demo"], {"service_name": "demo"}),
        (["a=1", "b=2"], {"a": "1", "b": "2"}),
        (["url=http://x/?a=b"], {"url": "http://x/?a=b"}),  # only the first = separates
        (["a= spaced "], {"a": " spaced "}),
    ],
)
def test_parse_label_args(items: list[str], expected: dict[str, str]) -> None:
    assert parse_label_args(items) == expected


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["service_name"], 'invalid label argument "service_name": expected name=value'),
        (["9x=1"], 'invalid label argument "9x=1": label name must match [a-zA-Z_][a-zA-Z0-9_]*'),
        (["=1"], 'invalid label argument "=1": label name must match [a-zA-Z_][a-zA-Z0-9_]*'),
        (["a =1"], 'invalid label argument "a =1": label name must match [a-zA-Z_][a-zA-Z0-9_]*'),
        (["a="], 'invalid label argument "a=": value is empty'),
        (["a=1", "a=2"], 'invalid label argument "a=2": label "a" was already given'),
    ],
)
def test_parse_label_args_errors(items: list[str], message: str) -> None:
    with pytest.raises(InvalidLabelError) as caught:
        parse_label_args(items)
    assert str(caught.value) == message


def test_parse_label_args_accepts_any_iterable() -> None:
    assert parse_label_args(item for item in ["a=1"]) == {"a": "1"}


def test_pyroscopes_derived_labels_are_parts_of_the_profile_type_and_a_copy_of_the_service():
    from flamewatch.labels.names import with_derived

    stored = {"service_name": "api", "__profile_type__": "process_cpu:cpu:nanoseconds:cpu:nanoseconds"}
    assert with_derived(stored) == {**stored, "__type__": "cpu", "__unit__": "nanoseconds", "__period_type__": "cpu",
                                    "__period_unit__": "nanoseconds", "__service_name__": "api"}
    assert with_derived({"job": "x"}) == {"job": "x"}  # nothing to derive from
    assert with_derived({"__profile_type__": "not-a-type"}) == {"__profile_type__": "not-a-type"}
