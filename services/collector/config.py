"""The collector's YAML configuration file: its schema as frozen dataclasses, their defaults, and the loader.

    global:            {scrape_interval: 10s, scrape_timeout: 10s}
    scrape_configs:    [ScrapeConfig, ...]   one per job
    storage:           {...}                 kept as an opaque mapping; validated by the storage config

The loader reads the file and nothing else: secret files (`password_file`, `credentials_file`), TLS files,
file discovery globs and kubeconfig files are kept as written, relative to whatever directory the caller
runs in.

Rules that are not visible from the dataclasses alone:

- A key set to null is the same as leaving it out; an unknown key anywhere is an error.
- Durations are written as `10s`, `1m30s`, `500ms` or a bare number of seconds.
- `scrape_interval` and `scrape_timeout` left out of a job are inherited from `global`, except that an
  inherited timeout is cut down to the job's interval; an explicit timeout must not exceed the interval.
  The timeout bounds the wait for an answer after the profiling duration (`seconds`) has elapsed.
- `profiling_config.pprof_config` entries are merged field by field over `default_pprof_config`, so
  `memory: {path: /debug/pprof/heap}` keeps memory enabled. A new name needs a `path`. An endpoint with
  `delta: true` and no `seconds` profiles for the scrape interval in whole seconds (at least 1).
  `fast_scrape_interval` (memory: 5s when the job's interval is longer) must be shorter than the job's
  interval; `0s` turns it off.
- `incidents: {enabled: true}` (the default) records the OOM kills and restarts of the pods a job's
  `kubernetes_sd_configs` with role pod find; it does nothing for other jobs.
- `kubernetes_sd_configs` take `api_server` or `kubeconfig_file`, not both (neither: in-cluster), and a
  selector may only narrow an object kind its role watches (`KUBERNETES_SELECTOR_ROLES`).

Every error is a ConfigError (`flamewatch.configreader`, with the strict YAML loader and the typed
readers) whose message starts with the YAML path of the offending value, e.g.
`scrape_configs[2].scrape_timeout: 15s must not exceed scrape_interval 10s`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from flamewatch.clientconfig import (
    Authorization,
    BasicAuth,
    TLSConfig,
    check_exclusive,
    read_authorization,
    read_basic_auth,
    read_tls_config,
)
from flamewatch.configreader import (
    ConfigError,
    boolean,
    duration_s,
    expect,
    fields_of,
    format_seconds,
    join_path,
    kind_of,
    label_map,
    load_yaml,
    nonempty_string,
    optional,
    positive_int,
    reads_list,
    required,
    string,
    string_list,
)
from flamewatch.labels.labelset import is_valid_label_name
from flamewatch.labels.relabel import RelabelConfig, check_relabel

__all__ = [
    "Authorization", "BasicAuth", "ConfigError", "FileConfig", "FileSDConfig", "GlobalConfig", "IncidentsConfig",
    "KubernetesNamespaces",
    "KubernetesSDConfig", "KubernetesSelector", "PprofEndpoint", "ProfilingConfig", "ScrapeConfig", "StaticConfig",
    "TLSConfig", "default_pprof_config", "load_config", "parse_config",
]

DEFAULT_SCRAPE_INTERVAL_S = 10.0
DEFAULT_SCRAPE_TIMEOUT_S = 10.0
DEFAULT_FILE_SD_REFRESH_S = 300.0
DEFAULT_FAST_SCRAPE_S = 5.0

# ---------------------------------------------------------------------------------------------- schema


@dataclass(frozen=True)
class PprofEndpoint:
    """One profile to fetch from each target: `path` is relative to the target (before `path_prefix`)."""

    enabled: bool = True
    path: str = ""
    delta: bool = False
    seconds: int | None = None  # sent as ?seconds=N: how long the target profiles before answering
    # While the in-use heap this endpoint returns keeps growing or nears the container's memory limit, it
    # is scraped this often instead of at the job's interval (`heappace.py`); None: never faster.
    fast_scrape_interval_s: float | None = None


def default_pprof_config(scrape_interval_s: float = DEFAULT_SCRAPE_INTERVAL_S) -> dict[str, PprofEndpoint]:
    """The endpoints every job fetches unless its configuration says otherwise."""
    fast = DEFAULT_FAST_SCRAPE_S if scrape_interval_s > DEFAULT_FAST_SCRAPE_S else None
    return {
        "process_cpu": PprofEndpoint(True, "/debug/pprof/profile", True, _whole_seconds(scrape_interval_s)),
        "memory": PprofEndpoint(True, "/debug/pprof/allocs", False, fast_scrape_interval_s=fast),
        "goroutine": PprofEndpoint(True, "/debug/pprof/goroutine", False),
        "mutex": PprofEndpoint(True, "/debug/pprof/mutex", False),
        "block": PprofEndpoint(True, "/debug/pprof/block", False),
    }


def _whole_seconds(interval_s: float) -> int:
    return max(1, int(interval_s))  # pprof handlers take whole seconds; 0 would mean their own default


@dataclass(frozen=True)
class ProfilingConfig:
    path_prefix: str = ""  # e.g. "/service-a" when the pprof handlers are mounted below a prefix
    pprof_config: dict[str, PprofEndpoint] = field(default_factory=default_pprof_config)

    def endpoints(self) -> dict[str, PprofEndpoint]:
        """The enabled endpoints, with `path_prefix` applied to their paths."""
        return {name: replace(ep, path=self.path_prefix + ep.path) for name, ep in self.pprof_config.items()
                if ep.enabled}


@dataclass(frozen=True)
class StaticConfig:
    targets: tuple[str, ...] = ()  # host:port
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FileSDConfig:
    files: tuple[str, ...] = ()  # globs over JSON or YAML target files
    refresh_interval_s: float = DEFAULT_FILE_SD_REFRESH_S


KUBERNETES_ROLES = ("pod", "endpoints", "endpointslice", "service", "node")
# The object kinds a selector may narrow for each role: a role also watches the pods and services it joins in.
KUBERNETES_SELECTOR_ROLES = {
    "pod": ("pod",),
    "endpoints": ("endpoints", "pod", "service"),
    "endpointslice": ("endpointslice", "pod", "service"),
    "service": ("service",),
    "node": ("node",),
}


@dataclass(frozen=True)
class KubernetesNamespaces:
    """No names and not own_namespace: every namespace."""

    names: tuple[str, ...] = ()
    own_namespace: bool = False  # the namespace the collector runs in (its service account's)


@dataclass(frozen=True)
class KubernetesSelector:
    role: str
    label: str = ""  # a label selector, e.g. `app=web,tier!=db`
    field: str = ""  # a field selector, e.g. `spec.nodeName=node-1`


@dataclass(frozen=True)
class KubernetesSDConfig:
    """Neither api_server nor kubeconfig_file: in-cluster (the pod's service account token and CA)."""

    role: str
    api_server: str = ""
    kubeconfig_file: str = ""
    namespaces: KubernetesNamespaces = field(default_factory=KubernetesNamespaces)
    selectors: tuple[KubernetesSelector, ...] = ()


@dataclass(frozen=True)
class IncidentsConfig:
    """What the collector records about the job's programs besides profiles (`oomwatch.py`)."""

    enabled: bool = True  # with role pod discovery: record OOM kills and restarts with an error


@dataclass(frozen=True)
class ScrapeConfig:
    """One job. Left as None, the timeout and profiling config are derived from the interval."""

    job_name: str
    scrape_interval_s: float = DEFAULT_SCRAPE_INTERVAL_S
    scrape_timeout_s: float | None = None  # None: min(scrape_interval_s, DEFAULT_SCRAPE_TIMEOUT_S)
    scheme: str = "http"
    params: dict[str, tuple[str, ...]] = field(default_factory=dict)
    basic_auth: BasicAuth | None = None
    authorization: Authorization | None = None
    tls_config: TLSConfig | None = None
    static_configs: tuple[StaticConfig, ...] = ()
    file_sd_configs: tuple[FileSDConfig, ...] = ()
    kubernetes_sd_configs: tuple[KubernetesSDConfig, ...] = ()
    relabel_configs: tuple[RelabelConfig, ...] = ()
    profiling_config: ProfilingConfig | None = None  # None: ProfilingConfig(default_pprof_config(interval))
    incidents: IncidentsConfig = field(default_factory=IncidentsConfig)

    def watches_pods(self) -> tuple[KubernetesSDConfig, ...]:
        """The pod discovery configs whose pods the collector watches for kills (none when incidents are off)."""
        if not self.incidents.enabled:
            return ()
        return tuple(sd for sd in self.kubernetes_sd_configs if sd.role == "pod")

    def __post_init__(self) -> None:
        if self.scrape_timeout_s is None:
            object.__setattr__(self, "scrape_timeout_s", min(self.scrape_interval_s, DEFAULT_SCRAPE_TIMEOUT_S))
        if self.profiling_config is None:
            pprof = default_pprof_config(self.scrape_interval_s)
            object.__setattr__(self, "profiling_config", ProfilingConfig(pprof_config=pprof))


@dataclass(frozen=True)
class GlobalConfig:
    scrape_interval_s: float = DEFAULT_SCRAPE_INTERVAL_S
    scrape_timeout_s: float = DEFAULT_SCRAPE_TIMEOUT_S


@dataclass(frozen=True)
class FileConfig:
    global_config: GlobalConfig = field(default_factory=GlobalConfig)
    scrape_configs: tuple[ScrapeConfig, ...] = ()
    storage: dict[str, Any] = field(default_factory=dict)  # not validated here


# ---------------------------------------------------------------------------------------------- loading


def load_config(path: str | Path) -> FileConfig:
    """Read and validate the YAML file at `path`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc  # strerror leaves out the path we already name
        raise ConfigError(f"cannot read {path}: {reason}", str(path)) from exc
    return parse_config(text, str(path))


def parse_config(text: str, source: str = "<string>") -> FileConfig:
    """Validate YAML `text`; `source` names where it came from in the error's `source` attribute."""
    try:
        return _file_config(load_yaml(text))
    except ConfigError as exc:
        exc.source = source
        raise


# ---------------------------------------------------------------------------------------- the sections


def _file_config(raw: Any) -> FileConfig:
    if raw is None:
        return FileConfig()
    if not isinstance(raw, dict):
        raise ConfigError(f"top level: expected a mapping, got {kind_of(raw)}")
    fields = fields_of(raw, "", ("global", "scrape_configs", "storage"))
    global_config = optional(fields, "global", "", _global_config, GlobalConfig())
    jobs = optional(fields, "scrape_configs", "", reads_list(lambda v, p: _scrape_config(v, p, global_config)), ())
    _check_unique_jobs(jobs)
    storage = optional(fields, "storage", "", _opaque_mapping, {})
    return FileConfig(global_config, jobs, storage)


def _opaque_mapping(value: Any, path: str) -> dict[str, Any]:
    expect(value, dict, "a mapping", path)
    return value


def _global_config(value: Any, path: str) -> GlobalConfig:
    fields = fields_of(value, path, ("scrape_interval", "scrape_timeout"))
    interval = optional(fields, "scrape_interval", path, duration_s, DEFAULT_SCRAPE_INTERVAL_S)
    timeout = optional(fields, "scrape_timeout", path, duration_s, None)
    _check_timeout(timeout, interval, path)
    return GlobalConfig(interval, min(interval, DEFAULT_SCRAPE_TIMEOUT_S) if timeout is None else timeout)


def _check_timeout(timeout: float | None, interval: float, path: str) -> None:
    if timeout is not None and timeout > interval:
        raise ConfigError(f"{path}.scrape_timeout: {format_seconds(timeout)} must not exceed scrape_interval "
                          f"{format_seconds(interval)}")


def _check_unique_jobs(jobs: tuple[ScrapeConfig, ...]) -> None:
    first: dict[str, int] = {}
    for i, job in enumerate(jobs):
        if job.job_name in first:
            raise ConfigError(f'scrape_configs[{i}].job_name: "{job.job_name}" is already used by '
                              f"scrape_configs[{first[job.job_name]}]")
        first[job.job_name] = i


_SCRAPE_FIELDS = (
    "job_name", "scrape_interval", "scrape_timeout", "scheme", "params", "basic_auth", "authorization",
    "tls_config", "static_configs", "file_sd_configs", "kubernetes_sd_configs", "relabel_configs", "profiling_config",
    "incidents",
)


def _scrape_config(value: Any, path: str, defaults: GlobalConfig) -> ScrapeConfig:
    fields = fields_of(value, path, _SCRAPE_FIELDS)
    interval = optional(fields, "scrape_interval", path, duration_s, defaults.scrape_interval_s)
    timeout = optional(fields, "scrape_timeout", path, duration_s, None)
    _check_timeout(timeout, interval, path)
    check_exclusive(fields, path, "basic_auth", "authorization")
    return ScrapeConfig(
        job_name=required(fields, "job_name", path, nonempty_string),
        scrape_interval_s=interval,
        scrape_timeout_s=min(interval, defaults.scrape_timeout_s) if timeout is None else timeout,
        scheme=optional(fields, "scheme", path, _scheme, "http"),
        params=optional(fields, "params", path, _params, {}),
        basic_auth=optional(fields, "basic_auth", path, read_basic_auth, None),
        authorization=optional(fields, "authorization", path, read_authorization, None),
        tls_config=optional(fields, "tls_config", path, read_tls_config, None),
        static_configs=optional(fields, "static_configs", path, reads_list(_static_config), ()),
        file_sd_configs=optional(fields, "file_sd_configs", path, reads_list(_file_sd_config), ()),
        kubernetes_sd_configs=optional(fields, "kubernetes_sd_configs", path, reads_list(_kubernetes_sd_config), ()),
        relabel_configs=optional(fields, "relabel_configs", path, reads_list(_relabel_config), ()),
        profiling_config=_profiling_config(fields.get("profiling_config", {}), join_path(path, "profiling_config"),
                                           interval),
        incidents=optional(fields, "incidents", path, _incidents, IncidentsConfig()),
    )


def _incidents(value: Any, path: str) -> IncidentsConfig:
    fields = fields_of(value, path, ("enabled",))
    return IncidentsConfig(optional(fields, "enabled", path, boolean, True))


def _scheme(value: Any, path: str) -> str:
    if string(value, path) not in ("http", "https"):
        raise ConfigError(f'{path}: must be http or https, got "{value}"')
    return value


def _params(value: Any, path: str) -> dict[str, tuple[str, ...]]:
    expect(value, dict, "a mapping", path)
    return {string(name, path): string_list(values, join_path(path, name)) for name, values in value.items()}


def _static_config(value: Any, path: str) -> StaticConfig:
    fields = fields_of(value, path, ("targets", "labels"))
    return StaticConfig(optional(fields, "targets", path, reads_list(_target), ()),
                        optional(fields, "labels", path, label_map, {}))


_TARGET_RE = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")


def _target(value: Any, path: str) -> str:
    match = _TARGET_RE.fullmatch(string(value, path))
    if match is None or not 0 < int(match.group(1)) < 65536:
        raise ConfigError(f'{path}: "{value}" must be host:port')
    return value


_FILE_SD_SUFFIXES = (".json", ".yml", ".yaml")


def _file_sd_config(value: Any, path: str) -> FileSDConfig:
    fields = fields_of(value, path, ("files", "refresh_interval"))
    files = required(fields, "files", path, reads_list(_file_sd_pattern))
    if not files:
        raise ConfigError(f"{join_path(path, 'files')}: must list at least one file")
    return FileSDConfig(files, optional(fields, "refresh_interval", path, duration_s, DEFAULT_FILE_SD_REFRESH_S))


def _file_sd_pattern(value: Any, path: str) -> str:
    if not nonempty_string(value, path).endswith(_FILE_SD_SUFFIXES):
        raise ConfigError(f'{path}: "{value}" must end in .json, .yml or .yaml')
    return value


_KUBERNETES_FIELDS = ("role", "api_server", "kubeconfig_file", "namespaces", "selectors")


def _kubernetes_sd_config(value: Any, path: str) -> KubernetesSDConfig:
    fields = fields_of(value, path, _KUBERNETES_FIELDS)
    check_exclusive(fields, path, "api_server", "kubeconfig_file")
    role = required(fields, "role", path, _kubernetes_role)
    selectors = optional(fields, "selectors", path, reads_list(_kubernetes_selector), ())
    for i, selector in enumerate(selectors):
        if selector.role not in KUBERNETES_SELECTOR_ROLES[role]:
            allowed = ", ".join(KUBERNETES_SELECTOR_ROLES[role])
            raise ConfigError(f'{path}.selectors[{i}].role: "{selector.role}" cannot narrow role {role} '
                              f"(expected {allowed})")
    return KubernetesSDConfig(role, optional(fields, "api_server", path, _api_server, ""),
                              optional(fields, "kubeconfig_file", path, nonempty_string, ""),
                              optional(fields, "namespaces", path, _kubernetes_namespaces, KubernetesNamespaces()),
                              selectors)


def _kubernetes_role(value: Any, path: str) -> str:
    if string(value, path) not in KUBERNETES_ROLES:
        raise ConfigError(f'{path}: unknown role "{value}", expected one of {", ".join(KUBERNETES_ROLES)}')
    return value


def _api_server(value: Any, path: str) -> str:
    if not string(value, path).startswith(("http://", "https://")):
        raise ConfigError(f'{path}: "{value}" must be an http:// or https:// URL')
    return value.rstrip("/")


def _kubernetes_namespaces(value: Any, path: str) -> KubernetesNamespaces:
    fields = fields_of(value, path, ("names", "own_namespace"))
    return KubernetesNamespaces(optional(fields, "names", path, reads_list(nonempty_string), ()),
                                optional(fields, "own_namespace", path, boolean, False))


def _kubernetes_selector(value: Any, path: str) -> KubernetesSelector:
    fields = fields_of(value, path, ("role", "label", "field"))
    role = required(fields, "role", path, string)
    if role not in KUBERNETES_ROLES:
        raise ConfigError(f'{path}.role: unknown role "{role}", expected one of {", ".join(KUBERNETES_ROLES)}')
    return KubernetesSelector(role, optional(fields, "label", path, string, ""),
                              optional(fields, "field", path, string, ""))


_RELABEL_FIELDS = ("source_labels", "separator", "target_label", "regex", "modulus", "replacement", "action")


def _relabel_config(value: Any, path: str) -> RelabelConfig:
    fields = fields_of(value, path, _RELABEL_FIELDS)
    defaults = RelabelConfig()
    cfg = RelabelConfig(
        source_labels=optional(fields, "source_labels", path, string_list, ()),
        separator=optional(fields, "separator", path, string, defaults.separator),
        target_label=optional(fields, "target_label", path, string, defaults.target_label),
        regex=optional(fields, "regex", path, string, defaults.regex),
        modulus=optional(fields, "modulus", path, positive_int, defaults.modulus),
        replacement=optional(fields, "replacement", path, string, defaults.replacement),
        action=optional(fields, "action", path, string, defaults.action).lower(),
    )
    try:
        check_relabel(cfg, path)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    return cfg


def _profiling_config(value: Any, path: str, interval_s: float) -> ProfilingConfig:
    fields = fields_of(value, path, ("path_prefix", "pprof_config"))
    prefix = optional(fields, "path_prefix", path, _path_prefix, "")
    pprof = default_pprof_config(interval_s)
    pprof_path = join_path(path, "pprof_config")
    for name, entry in fields_of(fields.get("pprof_config", {}), pprof_path, None).items():
        entry_path = f"{pprof_path}.{name}"
        if not is_valid_label_name(name):  # the name becomes part of the stored profile type
            raise ConfigError(f'{entry_path}: "{name}" is not a valid profile name (letters, digits and _)')
        pprof[name] = _pprof_endpoint(entry, entry_path, pprof.get(name), interval_s)
    return ProfilingConfig(prefix, pprof)


def _path_prefix(value: Any, path: str) -> str:
    if string(value, path) and not value.startswith("/"):
        raise ConfigError(f'{path}: "{value}" must start with /')
    return value.rstrip("/")


def _pprof_endpoint(value: Any, path: str, default: PprofEndpoint | None, interval_s: float) -> PprofEndpoint:
    fields = fields_of(value, path, ("enabled", "path", "delta", "seconds", "fast_scrape_interval"))
    base = default or PprofEndpoint(path=required(fields, "path", path, _url_path))
    delta = optional(fields, "delta", path, boolean, base.delta)
    # A default duration belongs to the default delta setting: `process_cpu: {delta: false}` drops it.
    seconds = optional(fields, "seconds", path, positive_int, base.seconds if "delta" not in fields else None)
    if delta and seconds is None:
        seconds = _whole_seconds(interval_s)
    fast = optional(fields, "fast_scrape_interval", path, _fast_interval, base.fast_scrape_interval_s)
    if "fast_scrape_interval" in fields and fast is not None and fast >= interval_s:
        raise ConfigError(f"{path}.fast_scrape_interval: {format_seconds(fast)} must be shorter than scrape_interval "
                          f"{format_seconds(interval_s)} (0s turns fast scraping off)")
    return PprofEndpoint(optional(fields, "enabled", path, boolean, base.enabled),
                         optional(fields, "path", path, _url_path, base.path), delta, seconds, fast)


def _fast_interval(value: Any, path: str) -> float | None:
    """A duration; 0s turns fast scraping off."""
    if value in (0, "0", "0s"):
        return None
    return duration_s(value, path)


def _url_path(value: Any, path: str) -> str:
    if not string(value, path).startswith("/"):
        raise ConfigError(f'{path}: "{value}" must start with /')
    return value
