"""The one list of built-in discoverers: which config type builds which discoverer.

The config dataclasses of `flamewatch.collector.config` are plain data (the file's schema, no imports of
discovery), so they do not build their discoverers themselves; this table does it. To add a discoverer,
add its entry to `BUILTINS` (see the collector README). Nothing registers itself on import.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from flamewatch.collector.config import FileSDConfig, KubernetesSDConfig, StaticConfig
from flamewatch.collector.discovery import Discoverer
from flamewatch.collector.discovery.file import file_discoverer
from flamewatch.collector.discovery.static import StaticDiscoverer

__all__ = ["BUILTINS", "Builtin", "UnknownDiscoveryConfig", "discoverers_for", "sd_configs"]


@dataclass(frozen=True)
class Builtin:
    kind: str  # names the discoverers it builds: "<job>/<kind>/<i>"
    field: str  # the scrape config field holding a list of these configs
    build: Callable[[str, Any], Discoverer]  # (name, config) -> discoverer


def _kubernetes_discoverer(name: str, config: KubernetesSDConfig) -> Discoverer:
    """Imported on first use: the Kubernetes client takes seconds to import, and only a configuration with
    `kubernetes_sd_configs` needs it (tests/unit/test_lazy_imports.py keeps it so)."""
    from flamewatch.collector.discovery.kubernetes import kubernetes_discoverer

    return kubernetes_discoverer(name, config)


BUILTINS: dict[type, Builtin] = {
    StaticConfig: Builtin("static", "static_configs", StaticDiscoverer),
    FileSDConfig: Builtin("file", "file_sd_configs", file_discoverer),
    KubernetesSDConfig: Builtin("kubernetes", "kubernetes_sd_configs", _kubernetes_discoverer),
}


class UnknownDiscoveryConfig(TypeError):
    """A service discovery config of a type no built-in discoverer is registered for."""


def sd_configs(scrape_config: Any) -> list[Any]:
    """The discovery configs of one job, in registry order.

    `scrape_config` is a job's scrape config (its `static_configs`, `file_sd_configs`, ... fields are
    read) or already a sequence of discovery configs.
    """
    if isinstance(scrape_config, Sequence):
        return list(scrape_config)
    return [config for entry in BUILTINS.values() for config in getattr(scrape_config, entry.field, ())]


def discoverers_for(job_name: str, scrape_config: Any) -> list[Discoverer]:
    """One discoverer per discovery config of the job, named `<job>/<kind>/<i>`.

    UnknownDiscoveryConfig names the job, the config type and the known types for a config no entry builds.
    """
    seen: Counter[str] = Counter()
    discoverers = []
    for config in sd_configs(scrape_config):
        entry = _entry(job_name, config)
        discoverers.append(entry.build(f"{job_name}/{entry.kind}/{seen[entry.kind]}", config))
        seen[entry.kind] += 1
    return discoverers


def _entry(owner: str, config: Any) -> Builtin:
    entry = BUILTINS.get(type(config))
    if entry is None:
        known = ", ".join(sorted(config_type.__name__ for config_type in BUILTINS))
        raise UnknownDiscoveryConfig(
            f"{owner}: no discoverer for config type {type(config).__name__!r}; known types: {known}")
    return entry
