"""Strict YAML for configuration files, and the typed readers that check each value against its place.

`load_yaml` refuses duplicate keys and turns every YAML problem into a `ConfigError` with its line and
column. The readers (`string`, `duration_s`, `list_of`, `fields_of`, ...) take a value and its YAML path
(`scrape_configs[2].scrape_timeout`), return it typed, and raise a `ConfigError` whose message starts
with that path. A schema is written as functions of (value, path) built from them (see `flamewatch.collector.config`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import yaml

from flamewatch.labels.labelset import is_valid_label_name
from flamewatch.timerange import TimeParseError, parse_duration

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration that cannot be used; `source` names the file (or "<string>") it came from."""

    def __init__(self, message: str, source: str = "<string>") -> None:
        super().__init__(message)
        self.source = source


class StrictLoader(yaml.SafeLoader):
    """A safe loader that rejects duplicate keys, which would otherwise silently keep the last value."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                continue  # other keys are reported by the schema, with their YAML path
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f'duplicate key "{key}"', key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    # PyYAML lets a few bad values escape as ValueError or OverflowError, without a position: a date
    # such as 2026-13-01 when it is constructed, a "\\UFFFFFFFF" escape while it is scanned.
    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(None, None, str(exc), node.start_mark) from exc

    def scan_flow_scalar_non_spaces(self, double: bool, start_mark: yaml.Mark) -> list[str]:
        try:
            return super().scan_flow_scalar_non_spaces(double, start_mark)
        except (ValueError, OverflowError) as exc:
            raise yaml.scanner.ScannerError(None, None, "an escape sequence is not a Unicode character",
                                            self.get_mark()) from exc


def load_yaml(text: str) -> Any:
    try:
        loader = StrictLoader(text)  # safe: a SafeLoader subclass; it checks the characters first
        try:
            return loader.get_single_data()
        except RecursionError as exc:
            raise ConfigError(f"invalid YAML at {_where(loader.get_mark())}: nested too deeply") from exc
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(_yaml_message(exc)) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}") from exc


def _where(mark: yaml.Mark | None) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"


def _yaml_message(exc: yaml.MarkedYAMLError) -> str:
    message = f"invalid YAML at {_where(exc.problem_mark or exc.context_mark)}: {exc.problem or exc.context}"
    if exc.problem and exc.context and exc.context_mark:  # an unclosed bracket is found far from its start
        message += f" ({exc.context} at line {exc.context_mark.line + 1})"
    return message


# -------------------------------------------------------------------------------- generic typed readers


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    names = {str: "a string", list: "a list", dict: "a mapping"}
    return names.get(type(value), type(value).__name__)


def expect(value: Any, types: type | tuple[type, ...], what: str, path: str) -> None:
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
        raise ConfigError(f"{path}: expected {what}, got {kind_of(value)}")


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def fields_of(value: Any, path: str, allowed: Iterable[str] | None) -> dict[str, Any]:
    """The mapping at `path` without its null values, after checking every key is in `allowed` (None: any)."""
    expect(value, dict, "a mapping", path)
    allowed = None if allowed is None else tuple(allowed)
    for key in value:
        _check_key(key, path, allowed)
    return {key: item for key, item in value.items() if item is not None}


def _check_key(key: Any, path: str, allowed: tuple[str, ...] | None) -> None:
    if not isinstance(key, str):
        raise ConfigError(f"{path or 'top level'}: keys must be strings, got {kind_of(key)} {key!r}")
    if allowed is not None and key not in allowed:
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"{join_path(path, key)}: unknown field{hint}")


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def optional(fields: dict[str, Any], key: str, path: str, read: Callable[[Any, str], T], default: T) -> T:
    return read(fields[key], join_path(path, key)) if key in fields else default


def required(fields: dict[str, Any], key: str, path: str, read: Callable[[Any, str], T]) -> T:
    if key not in fields:
        raise ConfigError(f"{join_path(path, key)}: required")
    return read(fields[key], join_path(path, key))


def string(value: Any, path: str) -> str:
    expect(value, str, "a string", path)
    return value


def nonempty_string(value: Any, path: str) -> str:
    if string(value, path) == "":
        raise ConfigError(f"{path}: must not be empty")
    return value


def boolean(value: Any, path: str) -> bool:
    expect(value, bool, "true or false", path)
    return value


def positive_int(value: Any, path: str) -> int:
    expect(value, int, "an integer", path)
    if value <= 0:
        raise ConfigError(f"{path}: must be greater than zero, got {value}")
    return value


def duration_s(value: Any, path: str) -> float:
    expect(value, (str, int, float), "a duration such as 10s or 500ms", path)
    try:
        return parse_duration(str(value)) / 1e9
    except TimeParseError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def list_of(value: Any, path: str, read: Callable[[Any, str], T]) -> tuple[T, ...]:
    expect(value, list, "a list", path)
    return tuple(read(item, f"{path}[{i}]") for i, item in enumerate(value))


def reads_list(read: Callable[[Any, str], T]) -> Callable[[Any, str], tuple[T, ...]]:
    return lambda value, path: list_of(value, path, read)


def string_list(value: Any, path: str) -> tuple[str, ...]:
    return list_of(value, path, string)


def label_map(value: Any, path: str) -> dict[str, str]:
    expect(value, dict, "a mapping", path)
    for name, item in value.items():
        if not isinstance(name, str) or not is_valid_label_name(name):
            raise ConfigError(f'{path}: "{name}" is not a valid label name')
        string(item, join_path(path, name))
    return dict(value)


def format_seconds(seconds: float) -> str:
    """Write a duration the way users write it in the file: 90.5 -> `1m30s500ms`."""
    ms = round(seconds * 1000)
    parts = []
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        amount, ms = divmod(ms, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return "".join(parts) or "0s"
