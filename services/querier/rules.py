"""Rules (`--rules.file`): comparisons that find regressions by themselves, and recording rules that turn
function shares into metrics, in the shape of Prometheus rule files.

    groups:
      - name: releases
        interval: 1m            # how often the group runs (default 1m)
        tenant: team-a          # whose profiles (default anonymous)
        rules:
          - compare: version    # a new value of this label is compared with the previous value
            query: process_cpu:cpu:nanoseconds:cpu:nanoseconds{namespace="shop"}
            per: service_name   # compared within each value of this label (default service_name)
            for: 10m            # data the new value needs before it is compared (default 10m)
            window: 1h          # the newest this-much of each side is compared (default 1h)
            threshold: 1%       # the smallest significant growth of a function's share that counts
            order: self         # self (default) or total share
            labels: {severity: warning}
            annotations: {summary: "a release made something slower"}
          - record: flamewatch_function_self_ratio
            query: process_cpu:cpu:nanoseconds:cpu:nanoseconds{namespace="shop"}
            by: [service_name]  # one series per value of these labels, and per function
            range: 5m           # profiles merged per evaluation (default 5m)
            top: 20             # the functions with the largest share (default 20)
            measure: self       # self (default) or total share
            labels: {team: shop}

A comparison that finds a significant regression records an event of kind `regression` (the incidents
store, so it is listed, alerted and annotated like an OOM kill) once per baseline/new-value pair; the
values are ordered by when they first appeared. Recorded series are served on the querier's /metrics
(`flamewatch_function_self_ratio{service_name, function, ...}`), for Prometheus to scrape.

A bad file is refused with the YAML path of the problem, at start and on reload (SIGHUP, POST /-/reload):
a reload that fails keeps the rules that run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import Counter
from prometheus_client.core import GaugeMetricFamily

from flamewatch.changes.stats import parse_share
from flamewatch.configreader import (
    ConfigError,
    duration_s,
    fields_of,
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
from flamewatch.events.model import REGRESSION, Event
from flamewatch.labels.labelset import is_valid_label_name
from flamewatch.labels.selector import Matcher, Query, SelectorError, parse_query
from flamewatch.periodic import every
from flamewatch.querier.formats import renderer
from flamewatch.storage import index

log = logging.getLogger(__name__)

EVALUATIONS = Counter("flamewatch_rule_evaluations", "Rule evaluations, by group and result", ["group", "result"])
LOOKBACK_NS = 7 * 24 * 3600 * 10**9  # how far back the values of a compared label are looked for
METRIC_NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*"


@dataclass(frozen=True)
class CompareRule:
    label: str
    query: Query
    per: str = "service_name"
    for_s: float = 600.0
    window_s: float = 3600.0
    threshold: float = 0.01
    order: str = "self"
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordRule:
    record: str
    query: Query
    by: tuple[str, ...] = ("service_name",)
    range_s: float = 300.0
    top: int = 20
    measure: str = "self"
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Group:
    name: str
    interval_s: float = 60.0
    tenant: str = "anonymous"
    rules: tuple[CompareRule | RecordRule, ...] = ()


# ------------------------------------------------------------------------------------------- the file


def load_rules(path: str | Path) -> tuple[Group, ...]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", str(path)) from exc
    try:
        return parse_rules(text)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}", str(path)) from exc


def parse_rules(text: str) -> tuple[Group, ...]:
    raw = load_yaml(text)
    if raw is None:
        return ()
    fields = fields_of(raw, "", ("groups",))
    groups = optional(fields, "groups", "", reads_list(_group), ())
    seen: dict[str, int] = {}
    for i, g in enumerate(groups):
        if g.name in seen:
            raise ConfigError(f'groups[{i}].name: "{g.name}" is already used by groups[{seen[g.name]}]')
        seen[g.name] = i
    return groups


def _group(value: Any, path: str) -> Group:
    fields = fields_of(value, path, ("name", "interval", "tenant", "rules"))
    return Group(required(fields, "name", path, nonempty_string), optional(fields, "interval", path, duration_s, 60.0),
                 optional(fields, "tenant", path, nonempty_string, "anonymous"),
                 optional(fields, "rules", path, reads_list(_rule), ()))


def _rule(value: Any, path: str) -> CompareRule | RecordRule:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: expected a mapping, got {kind_of(value)}")
    if ("compare" in value) == ("record" in value):
        raise ConfigError(f"{path}: a rule has either compare (a label whose new values are compared) or record "
                          "(the name of the metric it records)")
    return _compare_rule(value, path) if "compare" in value else _record_rule(value, path)


def _compare_rule(value: dict, path: str) -> CompareRule:
    fields = fields_of(value, path, ("compare", "query", "per", "for", "window", "threshold", "order", "labels",
                                     "annotations"))
    return CompareRule(required(fields, "compare", path, _label_name), required(fields, "query", path, _query),
                       optional(fields, "per", path, _label_name, "service_name"),
                       optional(fields, "for", path, duration_s, 600.0),
                       optional(fields, "window", path, duration_s, 3600.0),
                       optional(fields, "threshold", path, _share, 0.01),
                       optional(fields, "order", path, _measure, "self"),
                       optional(fields, "labels", path, label_map, {}),
                       optional(fields, "annotations", path, _annotations, {}))


def _record_rule(value: dict, path: str) -> RecordRule:
    fields = fields_of(value, path, ("record", "query", "by", "range", "top", "measure", "labels"))
    return RecordRule(required(fields, "record", path, _metric_name), required(fields, "query", path, _query),
                      optional(fields, "by", path, _label_names, ("service_name",)),
                      optional(fields, "range", path, duration_s, 300.0),
                      optional(fields, "top", path, positive_int, 20),
                      optional(fields, "measure", path, _measure, "self"),
                      optional(fields, "labels", path, label_map, {}))


def _label_name(value: Any, path: str) -> str:
    if not is_valid_label_name(string(value, path)):
        raise ConfigError(f'{path}: "{value}" is not a valid label name')
    return value


def _label_names(value: Any, path: str) -> tuple[str, ...]:
    names = string_list(value, path)
    for i, name in enumerate(names):
        _label_name(name, f"{path}[{i}]")
    return names


def _metric_name(value: Any, path: str) -> str:
    import re

    if not re.fullmatch(METRIC_NAME, string(value, path)):
        raise ConfigError(f'{path}: "{value}" is not a valid metric name ({METRIC_NAME})')
    return value


def _query(value: Any, path: str) -> Query:
    try:
        query = parse_query(string(value, path))
    except SelectorError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    if query.profile_type is None:
        raise ConfigError(f"{path}: name the profile type before the selector, e.g. "
                          'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="api"}')
    return query


def _share(value: Any, path: str) -> float:
    try:
        return parse_share(value)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def _measure(value: Any, path: str) -> str:
    if string(value, path) not in ("self", "total"):
        raise ConfigError(f'{path}: expected self or total, got "{value}"')
    return value


def _annotations(value: Any, path: str) -> dict[str, str]:
    fields = fields_of(value, path, None)
    return {key: string(item, f"{path}.{key}") for key, item in fields.items()}


# -------------------------------------------------------------------------------------- evaluation


Record = Callable[[str, list[Event]], Any]  # (tenant, events) -> awaitable: `events.api.Recorder.record`


class Rules:
    """Runs every group of the file each `interval` (one `periodic.every` task per group); holds the
    latest value of every recorded series and serves them as a Prometheus collector."""

    def __init__(self, querier, load: Callable[[], tuple[Group, ...]], record: Record | None = None,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self._querier, self._load, self._record, self._clock = querier, load, record, clock
        self._groups = load()
        self._tasks: list[asyncio.Task] = []
        self._recorded: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}  # metric -> labels -> value
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def groups(self) -> tuple[Group, ...]:
        return self._groups

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        for group in self._groups:
            self._tasks.append(asyncio.create_task(
                every(group.interval_s, lambda g=group: self.evaluate(g), f"rule group {group.name}", log),
                name=f"rules-{group.name}"))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def reload(self) -> None:
        """Read the file again; a bad one raises (and is logged by the caller) and the running rules stay."""
        groups = self._load()
        for task in self._tasks:
            task.cancel()
        self._tasks, self._groups = [], groups
        self._recorded.clear()
        if self._loop is not None:
            self.start()
        log.info("rules reloaded: %d groups, %d rules", len(groups), sum(len(g.rules) for g in groups))

    def evaluate(self, group: Group) -> list[Event]:
        """One run of a group (on a worker thread); returns the regressions it recorded."""
        found: list[Event] = []
        now = self._clock()
        for rule in group.rules:
            try:
                if isinstance(rule, CompareRule):
                    found += self._compare(group, rule, now)
                else:
                    self._record_shares(group, rule, now)
                EVALUATIONS.labels(group.name, "success").inc()
            except (ValueError, LookupError) as exc:
                EVALUATIONS.labels(group.name, "failure").inc()
                log.warning("rule group %s: a rule failed: %s", group.name, exc)
        if found and self._record is not None and self._loop is not None:
            asyncio.run_coroutine_threadsafe(self._record(group.tenant, found), self._loop).result(60)
        return found

    # ---------------------------------------------------------------------------- comparisons

    def _compare(self, group: Group, rule: CompareRule, now: int) -> list[Event]:
        q = self._querier
        series = index.find_series(q.db, group.tenant, rule.query.matchers, now - LOOKBACK_NS, now,
                                   profile_type=rule.query.profile_type)
        spans = _spans(q.db, series, rule, now)
        out = []
        window = int(rule.window_s * 1e9)
        for per, values in sorted(spans.items()):
            if len(values) < 2:
                continue
            (old, (old_first, old_last)), (new, (new_first, new_last)) = \
                sorted(values.items(), key=lambda kv: kv[1][0])[-2:]
            if new_first + int(rule.for_s * 1e9) > now:
                continue  # not enough of the new value yet
            sides = [(_with(rule.query, (rule.per, per), (rule.label, v)), max(last - window, first), last)
                     for v, first, last in ((old, old_first, old_last), (new, new_first, new_last))]
            changes = q.changes(group.tenant, sides[0], sides[1], order=rule.order)
            worse = changes.regressions(rule.threshold, rule.order)
            if worse:
                out.append(_regression(group, rule, per, old, new, sides, changes, worse, now))
        return out

    # ---------------------------------------------------------------------------- recording

    def _record_shares(self, group: Group, rule: RecordRule, now: int) -> None:
        q = self._querier
        start = now - int(rule.range_s * 1e9)
        series = index.find_series(q.db, group.tenant, rule.query.matchers, start, now,
                                   profile_type=rule.query.profile_type)
        keys = sorted({tuple(s.labels.get(name, "") for name in rule.by) for s in series})
        values: dict[tuple[tuple[str, str], ...], float] = {}
        for key in keys:
            query = _with(rule.query, *((n, v) for n, v in zip(rule.by, key) if v))
            top = renderer("top")(q.merge(group.tenant, query, start, now).tree, rule.top * 4)
            if top["total"] <= 0:
                continue
            ranked = sorted(top["entries"], key=lambda e: -e[rule.measure])[: rule.top]
            for entry in ranked:
                labels = (*zip(rule.by, key), ("function", entry["name"]), *sorted(rule.labels.items()))
                values[tuple(labels)] = entry[rule.measure] / top["total"]
        self._recorded[rule.record] = values

    def collect(self):
        """The recorded series, for prometheus_client's registry (what /metrics serves)."""
        for name, values in sorted(self._recorded.items()):
            names = sorted({n for labels in values for n, _ in labels})
            family = GaugeMetricFamily(name, "Share of the total a function had over the rule's range "
                                       "(Flamewatch recording rule)", labels=names)
            for labels, value in values.items():
                as_dict = dict(labels)
                family.add_metric([as_dict.get(n, "") for n in names], value)
            yield family


def _spans(db, series, rule: CompareRule, now: int) -> dict[str, dict[str, tuple[int, int]]]:
    """Per value of `rule.per`, per value of the compared label: its first and last profile time in the
    lookback (from the profile index: a series' own first/last seen are kept to the hour only)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for s in series:
        if rule.label in s.labels:
            groups.setdefault((s.labels.get(rule.per, ""), s.labels[rule.label]), []).append(s.id)
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for (per, value), ids in groups.items():
        times = index.profile_totals(db, ids, now - LOOKBACK_NS, now).time
        if len(times):
            out.setdefault(per, {})[value] = (int(times.min()), int(times.max()))
    return out


def _with(query: Query, *pairs: tuple[str, str]) -> str:
    names = {n for n, _ in pairs}
    kept = tuple(m for m in query.matchers if not (m.op == "=" and m.name in names))
    return str(Query(query.profile_type, (*kept, *(Matcher(n, "=", v) for n, v in pairs))))


def _regression(group: Group, rule: CompareRule, per: str, old: str, new: str, sides, changes, worse,
                now: int) -> Event:
    top = [{"name": f.name, "a": getattr(f, rule.order).a, "b": getattr(f, rule.order).b,
            "change": getattr(f, rule.order).change, "p": getattr(f, rule.order).p} for f in worse[:20]]
    details = {"rule": {"group": group.name, "compare": rule.label, "threshold": rule.threshold,
                        "order": rule.order, "labels": rule.labels, "annotations": rule.annotations},
               "a": {"query": sides[0][0], "from": sides[0][1], "until": sides[0][2], "value": old},
               "b": {"query": sides[1][0], "from": sides[1][1], "until": sides[1][2], "value": new},
               "profiles": {"a": changes.profiles[0], "b": changes.profiles[1]}, "functions": top}
    first = worse[0]
    message = (f"{rule.label} {new} against {old}: {first.name} {getattr(first, rule.order).change:+.2%} of the "
               f"total" + (f" and {len(worse) - 1} more" if len(worse) > 1 else ""))
    labels = {**({rule.per: per} if per else {}), rule.label: new, **rule.labels}
    return Event(REGRESSION, now, labels, message=message, details=details,
                 key=f"regression/{group.name}/{rule.label}/{per}/{old}/{new}")
