"""Target relabeling: rewrite, keep or drop a target's label set by a list of rules before it is scraped.

The rules follow the usual relabeling semantics, so configurations written for other collectors keep
working:

- replace: join `source_labels` with `separator`; if `regex` matches, set `target_label` to the expanded
  `replacement`, or remove it when the expansion is empty;
- keep / drop: drop the target unless / if `regex` matches the joined source values;
- hashmod: set `target_label` to md5(joined values), last 8 bytes as a big-endian integer, mod `modulus`;
- labelmap: for every label whose name matches `regex`, add a copy named by the expanded `replacement`
  (the original stays; follow with labeldrop to rename);
- labeldrop / labelkeep: remove the labels whose name matches / does not match `regex`.

Regexes are fully anchored (`a.*` does not match `ba`). A missing source label joins as the empty string.
Replacements refer to groups as `$1`, `${1}`, `$name` or `${name}`; `$$` is a literal `$`; a reference to a
group that does not exist or did not take part in the match expands to nothing. As in the usual
semantics, `$1x` names the group `1x`, so write `${1}x`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from flamewatch.labels.labelset import is_valid_label_name

__all__ = ["ACTIONS", "RelabelConfig", "check_relabel", "relabel"]

ACTIONS = ("replace", "keep", "drop", "hashmod", "labelmap", "labeldrop", "labelkeep")
_NEEDS_TARGET = ("replace", "hashmod")
_ON_LABEL_NAMES = ("labelmap", "labeldrop", "labelkeep")

_REFERENCE_RE = re.compile(r"\$(?:(\$)|\{(\w+)\}|(\w+))")
# A target label or labelmap replacement: a label name in which group references may stand for parts.
_NAME_TEMPLATE_RE = re.compile(r"(?:[a-zA-Z_]|\$(?:\{\w+\}|\w++))(?:\w|\$(?:\{\w+\}|\w++))*")


@dataclass(frozen=True)
class RelabelConfig:
    """One relabeling rule; the defaults make an empty rule a no-op `replace` that needs a target label."""

    source_labels: tuple[str, ...] = ()
    separator: str = ";"
    target_label: str = ""
    regex: str = "(.*)"
    modulus: int = 0
    replacement: str = "$1"
    action: str = "replace"

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The regex, compiled on first use (use `fullmatch`); raises re.error if `regex` is invalid."""
        return re.compile(self.regex, re.DOTALL)  # `.` matches newlines too, as in the usual semantics


def relabel(labels: Mapping[str, str], configs: Sequence[RelabelConfig]) -> dict[str, str] | None:
    """Apply `configs` in order to a copy of `labels`; None means a keep or drop rule dropped the target."""
    result = dict(labels)
    for cfg in configs:
        if not _ACTIONS[cfg.action](result, cfg):
            return None
    return result


def check_relabel(cfg: RelabelConfig, path: str) -> None:
    """Raise ValueError naming the YAML `path` of the first field of `cfg` that cannot work."""
    problem = _problem(cfg)
    if problem is not None:
        field, message = problem
        raise ValueError(f"{path}.{field}: {message}")


def _problem(cfg: RelabelConfig) -> tuple[str, str] | None:
    if cfg.action not in ACTIONS:
        return "action", f'unknown action "{cfg.action}", expected one of {", ".join(ACTIONS)}'
    try:
        cfg.pattern  # noqa: B018 - compiling is the check
    except re.error as exc:
        return "regex", f'invalid regular expression "{cfg.regex}": {exc}'
    for name in cfg.source_labels:
        if not is_valid_label_name(name):
            return "source_labels", f'"{name}" is not a valid label name'
    if cfg.action in _NEEDS_TARGET:
        return _target_problem(cfg)
    if cfg.action in _ON_LABEL_NAMES:
        return _label_names_problem(cfg)
    return None


def _target_problem(cfg: RelabelConfig) -> tuple[str, str] | None:
    if not cfg.target_label:
        return "target_label", f"required for action {cfg.action}"
    valid = _NAME_TEMPLATE_RE.fullmatch if cfg.action == "replace" else is_valid_label_name
    if not valid(cfg.target_label):
        return "target_label", f'"{cfg.target_label}" is not a valid label name'
    if cfg.action == "hashmod" and cfg.modulus <= 0:
        return "modulus", "required for action hashmod and must be greater than zero"
    return None


def _label_names_problem(cfg: RelabelConfig) -> tuple[str, str] | None:
    # These actions look at label names only, so source values or a target would silently do nothing.
    if cfg.source_labels:
        return "source_labels", f"not allowed for action {cfg.action}"
    if cfg.target_label:
        return "target_label", f"not allowed for action {cfg.action}"
    if cfg.action == "labelmap" and not _NAME_TEMPLATE_RE.fullmatch(cfg.replacement):
        return "replacement", f'"{cfg.replacement}" is not a valid label name for action labelmap'
    return None


def _joined(labels: Mapping[str, str], cfg: RelabelConfig) -> str:
    return cfg.separator.join(labels.get(name, "") for name in cfg.source_labels)


def _expand(template: str, match: re.Match[str]) -> str:
    return _REFERENCE_RE.sub(lambda ref: _group(ref, match), template)


def _group(ref: re.Match[str], match: re.Match[str]) -> str:
    if ref.group(1):
        return "$"
    name = ref.group(2) or ref.group(3)
    key: int | str = int(name) if name.isdigit() else name
    try:
        return match.group(key) or ""
    except IndexError:  # no such group
        return ""


def _replace(labels: dict[str, str], cfg: RelabelConfig) -> bool:
    match = cfg.pattern.fullmatch(_joined(labels, cfg))
    if match is None:
        return True
    target = _expand(cfg.target_label, match)
    if not is_valid_label_name(target):
        return True
    value = _expand(cfg.replacement, match)
    if value:
        labels[target] = value
    else:
        labels.pop(target, None)
    return True


def _keep(labels: dict[str, str], cfg: RelabelConfig) -> bool:
    return cfg.pattern.fullmatch(_joined(labels, cfg)) is not None


def _drop(labels: dict[str, str], cfg: RelabelConfig) -> bool:
    return cfg.pattern.fullmatch(_joined(labels, cfg)) is None


def _hashmod(labels: dict[str, str], cfg: RelabelConfig) -> bool:
    digest = hashlib.md5(_joined(labels, cfg).encode(), usedforsecurity=False).digest()
    labels[cfg.target_label] = str(int.from_bytes(digest[8:], "big") % cfg.modulus)
    return True


def _labelmap(labels: dict[str, str], cfg: RelabelConfig) -> bool:
    # Matches are taken from the labels as they were before this rule, so a new name is never re-mapped.
    for name, value in list(labels.items()):
        match = cfg.pattern.fullmatch(name)
        if match is not None:
            labels[_expand(cfg.replacement, match)] = value
    return True


def _labeldrop(labels: dict[str, str], cfg: RelabelConfig) -> bool:
    for name in [name for name in labels if cfg.pattern.fullmatch(name)]:
        del labels[name]
    return True


def _labelkeep(labels: dict[str, str], cfg: RelabelConfig) -> bool:
    for name in [name for name in labels if not cfg.pattern.fullmatch(name)]:
        del labels[name]
    return True


# Each action edits the label dict in place and answers whether the target survives.
_ACTIONS: dict[str, Callable[[dict[str, str], RelabelConfig], bool]] = {
    "replace": _replace,
    "keep": _keep,
    "drop": _drop,
    "hashmod": _hashmod,
    "labelmap": _labelmap,
    "labeldrop": _labeldrop,
    "labelkeep": _labelkeep,
}
