"""File discovery: target groups read from JSON or YAML files that match some globs.

Each file holds a list of `{targets: [host:port, ...], labels: {name: value}}`. Every second the files
are globbed and stat'ed, and only new or changed ones (mtime, size, inode) are read; every
`refresh_interval_s` all of them are read again. A file that cannot be read or parsed is logged with
its name (and line, for syntax errors) and keeps the groups it had; a file that no longer matches
loses them. Each group gets the `__meta_filepath` label.
"""

from __future__ import annotations

import asyncio
import glob
import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from flamewatch.collector.config import FileSDConfig
from flamewatch.collector.discovery.refresh import RefreshDiscoverer
from flamewatch.collector.targetgroup import TargetGroup

__all__ = ["CHECK_INTERVAL_S", "FileSDError", "FileTargets", "file_discoverer", "read_groups"]

logger = logging.getLogger(__name__)

CHECK_INTERVAL_S = 1.0
"""How often files are globbed and stat'ed for changes; reading happens only on a change."""

_KEYS = {"targets", "labels"}
_SUFFIXES = (".json", ".yml", ".yaml")


class FileSDError(ValueError):
    """A target file that does not hold a valid list of groups; the message starts with `path[:line]:`."""


def file_discoverer(name: str, config: FileSDConfig, *, check_interval_s: float = CHECK_INTERVAL_S
                    ) -> RefreshDiscoverer:
    """The discoverer of one `file_sd_configs` entry."""
    targets = FileTargets(config.files, config.refresh_interval_s)
    return RefreshDiscoverer(name, check_interval_s, targets.refresh)


@dataclass(frozen=True)
class _File:
    stamp: tuple[int, int, int]  # (mtime_ns, size, inode): any change means the file is read again
    groups: list[TargetGroup]


class FileTargets:
    """The groups of the files matching `patterns`, remembered per file between refreshes."""

    def __init__(self, patterns: Iterable[str], full_every_s: float, clock: Callable[[], float] = time.monotonic):
        self.patterns = tuple(patterns)
        self.full_every_s = full_every_s
        self._clock = clock
        self._next_full = clock()
        self._files: dict[str, _File] = {}

    async def refresh(self) -> list[TargetGroup]:
        # Globbing, stat'ing and parsing block; keep them off the event loop.
        return await asyncio.to_thread(self.scan)

    def scan(self) -> list[TargetGroup]:
        """Pick up new, changed and vanished files; re-read every file when a full refresh is due."""
        full = self._clock() >= self._next_full
        if full:
            self._next_full = self._clock() + self.full_every_s
        files = {path: self._update(path, self._files.get(path), full) for path in self._matching()}
        self._files = {path: file for path, file in files.items() if file is not None}
        return [group for path in sorted(self._files) for group in self._files[path].groups]

    def _matching(self) -> set[str]:
        return {path for pattern in self.patterns for path in glob.glob(pattern) if os.path.isfile(path)}

    def _update(self, path: str, known: _File | None, full: bool) -> _File | None:
        """The file's state now; None when it vanished."""
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            return None
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if known is not None and known.stamp == stamp and not full:
            return known
        try:
            return _File(stamp, read_groups(path))
        except FileNotFoundError:
            return None
        except (OSError, FileSDError) as exc:
            # Remember the new stamp so a broken file is reported once per change, not every second.
            logger.warning("file discovery: %s (keeping the previous targets of this file)", exc)
            return _File(stamp, known.groups if known is not None else [])


def read_groups(path: str) -> list[TargetGroup]:
    """The groups in one target file; FileSDError names the file and what is wrong."""
    if not path.endswith(_SUFFIXES):
        raise FileSDError(f"{path}: a target file must end in .json, .yml or .yaml")
    with open(path, encoding="utf-8") as file:
        try:
            text = file.read()
        except UnicodeDecodeError as exc:
            raise FileSDError(f"{path}: not UTF-8 text: {exc}") from exc
    entries = _parse_json(path, text) if path.endswith(".json") else _parse_yaml(path, text)
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise FileSDError(f"{path}: must hold a list of {{targets: [...], labels: {{...}}}}")
    return [_group(path, index, entry) for index, entry in enumerate(entries)]


def _parse_json(path: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FileSDError(f"{path}:{exc.lineno}: {exc.msg} (column {exc.colno})") from exc


def _parse_yaml(path: str, text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise FileSDError(f"{path}{line}: {exc.problem or exc.context}") from exc
    except yaml.YAMLError as exc:
        raise FileSDError(f"{path}: {exc}") from exc


def _group(path: str, index: int, entry: Any) -> TargetGroup:
    where = f"{path}: [{index}]"
    if not isinstance(entry, dict):
        raise FileSDError(f"{where}: must be a mapping with targets and labels")
    unknown = sorted(str(key) for key in entry if key not in _KEYS)
    if unknown:
        raise FileSDError(f"{where}: unknown key {unknown[0]!r}; known keys: labels, targets")
    targets = entry.get("targets") or []
    if not isinstance(targets, list) or not all(isinstance(t, str) and t for t in targets):
        raise FileSDError(f"{where}.targets: must be a list of host:port strings")
    return TargetGroup(
        source=f"{path}:{index}",
        targets=tuple({"__address__": target} for target in targets),
        labels={**_labels(f"{where}.labels", entry.get("labels")), "__meta_filepath": path},
    )


def _labels(where: str, raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(name, str) for name in raw):
        raise FileSDError(f"{where}: must be a mapping of label names to values")
    return {name: _label_value(f"{where}.{name}", value) for name, value in raw.items()}


def _label_value(where: str, value: Any) -> str:
    # YAML reads `port: 8080` as a number; a user means the string.
    if isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool)):
        return str(value)
    raise FileSDError(f"{where}: must be a string")
