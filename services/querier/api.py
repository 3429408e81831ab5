"""The querier's operations as the APIs see them: parse request values, call the engine, render.

Both the REST routes and the gRPC servicer go through these functions, so the two APIs always
answer the same question the same way. Reads take the tenant, or the several tenants X-Scope-OrgID
names (`a|b`, `rpc.auth.ReadTenants`), as the engine does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client import Histogram

from flamewatch.auth.caller import Caller
from flamewatch.auth.webconfig import ALL_TENANTS
from flamewatch.changes.stats import Changes, Settings
from flamewatch.labels.selector import Matcher, Query, parse_query
from flamewatch.querier import deadline
from flamewatch.querier.cost import QueryCost
from flamewatch.querier.engine import Merged, Querier
from flamewatch.querier.formats import RENDERERS, diff_renderer, renderer
from flamewatch.querier.merging import GRANULARITIES
from flamewatch.rpc.disconnect import caller_gone
from flamewatch.rpc.tenant import Tenants
from flamewatch.timerange import parse_duration, parse_time, resolve_range

QUERY_SECONDS = Histogram("flamewatch_query_seconds", "Time to answer a merged-profile query", ["kind"],
                          buckets=(0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100))

FORMATS = (*RENDERERS, "pprof")
MAX_NODES_LIMIT = 100_000
_MIN_STEP_NS = 10 * 10**9
_POINTS = 120
CHANGES_LIMIT = 100


@dataclass(frozen=True)
class Rendered:
    merged: Merged
    body: dict | bytes  # bytes for pprof


@dataclass(frozen=True)
class TenantInfo:
    name: str
    series: int  # in the index; 0 for a tenant without data yet
    default: bool  # the tenant of a request without X-Scope-OrgID


def time_range(start: str | None, end: str | None) -> tuple[int, int]:
    return resolve_range(start, end)


def step_ns(step: str | int | None, start: int, end: int) -> int:
    """A duration text (REST) or nanoseconds (gRPC); unset means about 120 points over the range."""
    if isinstance(step, int) and step < 0:
        raise ValueError(f"step must be positive, got {step} ns")
    if isinstance(step, str) and step:
        return parse_duration(step)
    if step:
        return step
    return max(_MIN_STEP_NS, (end - start) // _POINTS)


def check_max_nodes(max_nodes: int | None, default: int) -> int:
    value = default if max_nodes is None else max_nodes
    if not 1 <= value <= MAX_NODES_LIMIT:
        raise ValueError(f"max_nodes must be between 1 and {MAX_NODES_LIMIT}, got {value}")
    return value


def check_granularity(granularity: str | None) -> str:
    value = granularity or GRANULARITIES[0]
    if value not in GRANULARITIES:
        raise ValueError(f"unknown granularity {value!r}; known: {', '.join(GRANULARITIES)}")
    return value


def tenants(q: Querier, caller: Caller) -> list[TenantInfo]:
    """The tenants the caller may read (`Caller.readable_tenants`), its default first, each with its series.

    A credential that lists its tenants learns the counts of those only; one that may read every tenant
    gets every tenant with data."""
    explicit = None if ALL_TENANTS in caller.access.read else caller.readable_tenants(())
    series = q.tenant_series(explicit)
    names = explicit if explicit is not None else caller.readable_tenants(series)
    return [TenantInfo(name, series.get(name, 0), i == 0) for i, name in enumerate(names)]


def query(q: Querier, tenant: Tenants, text: str, start: int, end: int, at: int | None, fmt: str,
          max_nodes: int, granularity: str = "functions") -> Rendered:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known formats: {', '.join(FORMATS)}")
    granularity = check_granularity(granularity)
    with QUERY_SECONDS.labels(fmt).time():
        if fmt == "pprof":  # pprof keeps lines and everything else whatever the granularity
            merged, body = q.pprof(tenant, text, start, end, at)
            return Rendered(merged, body)
        merged = (q.nearest(tenant, text, at, granularity) if at is not None
                  else q.merge(tenant, text, start, end, granularity))
        body = renderer(fmt)(merged.tree, max_nodes)
        if fmt == "flamegraph":
            with_binaries(q, body)
        return Rendered(merged, body)


def with_binaries(q: Querier, body: dict) -> dict:
    """A flamegraph answer with `binaries` beside `names` (where each function was executed from, "" when
    unknown) when its profiles' mappings name any."""
    binaries = q.blocks.paths.binaries(body["names"])
    if any(binaries):
        body["binaries"] = binaries
    return body


def diff(q: Querier, tenant: Tenants, left: tuple[str, int, int], right: tuple[str, int, int],
         max_nodes: int) -> dict:
    # one budget for both sides
    with QUERY_SECONDS.labels("diff").time(), deadline.bounded(q.config.query_timeout_s, caller_gone()):
        lm, rm = q.merge(tenant, *left), q.merge(tenant, *right)
    if lm.profile_type != rm.profile_type:
        raise ValueError(f"cannot compare {lm.profile_type.id} with {rm.profile_type.id}: "
                         "both sides need the same profile type")
    return with_binaries(q, diff_renderer("diff")(lm.tree, rm.tree, max_nodes))


def changes(q: Querier, tenant: Tenants, a: tuple[str, int, int], b: tuple[str, int, int], order: str = "self",
            alpha: float | None = None, limit: int | None = None) -> Changes:
    """What changed from side a to side b, the largest increases first, at most `limit` functions."""
    if alpha is not None and not 0 < alpha < 1:
        raise ValueError(f"alpha is a false discovery rate between 0 and 1, e.g. 0.01; got {alpha}")
    limit = CHANGES_LIMIT if limit is None else limit
    if not 1 <= limit <= MAX_NODES_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_NODES_LIMIT}, got {limit}")
    settings = Settings(alpha=alpha) if alpha is not None else Settings()
    with QUERY_SECONDS.labels("changes").time(), deadline.bounded(q.config.query_timeout_s, caller_gone()):
        found = q.changes(tenant, a, b, settings, order)
    return Changes(found.functions[:limit], found.profiles, found.notes)


@dataclass(frozen=True)
class Analysis:
    cost: QueryCost
    max_bytes: int  # the tenant's --query.max-bytes; 0: no limit

    def json(self) -> dict:
        return {"blocks": self.cost.blocks, "series": self.cost.series, "profiles": self.cost.profiles,
                "block_bytes": self.cost.bytes, "max_bytes": self.max_bytes}


def analyze(q: Querier, tenant: Tenants, text: str, start: int, end: int) -> Analysis:
    """What a merge of the query over the range would read, from the index (`cost`)."""
    return Analysis(*q.analyze(tenant, text, start, end))


def sides(query: str | None, label: str | None, a: str | None, b: str | None, a_query: str | None,
          b_query: str | None, names: tuple[str, str] = ("a_query", "b_query")) -> tuple[str, str]:
    """The two selections of a comparison: given whole (`a_query`, `b_query`, called `names` in the
    request), or as one query and two values of one label (`query`, `label`, `a`, `b`: the query with
    label="a" against label="b")."""
    if label or a or b:
        if not (query and label and a is not None and b is not None):
            raise ValueError("compare two values of a label with query, label, a and b together, e.g. "
                             'query=process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="api"}&label=version'
                             "&a=1.0&b=1.1")
        base = parse_query(query)
        return tuple(str(Query(base.profile_type, (*base.matchers, Matcher(label, "=", value)))) for value in (a, b))
    if not (a_query or query) or not (b_query or query):
        raise ValueError(f"give the two selections: {names[0]} and {names[1]} (or query for both, with a time range "
                         "each), or query, label, a and b")
    return a_query or query, b_query or query


def optional_time(text: str | None) -> int | None:
    return parse_time(text) if text else None


def group_by(values: Sequence[str] | None) -> list[str]:
    """group_by may repeat or be comma-separated."""
    return [g.strip() for v in values or () for g in v.split(",") if g.strip()]
