"""Incidents: recorded events (`flamewatch.events`) with the profiles that explain them, linked as
ready-to-run queries.

For an event at time T of a program with labels L:

- the program's profiles are those whose series carry L's identity: `namespace`, `pod` and `container`
  when the event has all three (what the collector's Kubernetes watcher records), otherwise every label
  of the event but `node` (a supervisor posts the labels its program's profiles carry);
- `last_heap`: its last in-use heap profile at or before T (within `LOOKBACK_NS`), and its age at T;
- `first_heap`: its first heap profile after the run that ended had started (`started_ns`), or, when
  the start is unknown, the oldest of the lookback;
- `inuse_growth`: first against last heap, as a diff; `alloc_growth`: what was allocated in the run's
  first minute against its last minute (only when the program's heap profiles have `alloc_space`, as
  Go's do; allocations are stored per scrape, so one profile alone may hold none);
- `cpu_before`: its CPU over the `CPU_WINDOW_NS` before T, when it has CPU profiles.

What cannot be linked is said in `notes`. Nothing is copied: the links are queries over the stored
profiles, so they open whatever retention still keeps.

`GET /api/v1/incidents` lists them (newest first; gRPC `IncidentService.List`); `format=annotations`
answers in the shape of Grafana's JSON annotations (`time`, `timeEnd`, `title`, `text`, `tags`).
`GET /api/v1/incidents/{id}` answers one (gRPC `IncidentService.Get`): the UI's permalink names only the id.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Annotated, Literal

import numpy as np
from fastapi import APIRouter, Query

from flamewatch.api.flamewatch.v1 import events_pb2, events_pb2_grpc, types_pb2
from flamewatch.auth.caller import Action
from flamewatch.events.convert import event_proto
from flamewatch.events.model import KINDS, REGRESSION, incident_path
from flamewatch.events.store import DEFAULT_LIMIT, Recorded, get_event, list_events
from flamewatch.labels.selector import Matcher, format_matchers, parse_selector
from flamewatch.querier.api import time_range
from flamewatch.rpc.auth import ReadTenant, grpc_tenant
from flamewatch.rpc.errors import NotFoundError
from flamewatch.rpc.grpc_server import handled
from flamewatch.rpc.openapi import ERROR_RESPONSES
from flamewatch.storage import index
from flamewatch.storage.postgres import Database
from flamewatch.timerange import format_ns

HEAP_INUSE = "memory:inuse_space:bytes:space:bytes"
HEAP_ALLOC = "memory:alloc_space:bytes:space:bytes"
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
LOOKBACK_NS = 24 * 3600 * 10**9
CPU_WINDOW_NS = 5 * 60 * 10**9
ALLOC_WINDOW_NS = 60 * 10**9
KUBERNETES_IDENTITY = ("namespace", "pod", "container")
MAX_LIMIT = 5000


@dataclass(frozen=True)
class ProfileLink:
    query: str
    start_ns: int
    end_ns: int
    time_ns: int = 0  # a single profile: the one of exactly this time

    def json(self) -> dict:
        out = {"query": self.query, "from": self.start_ns, "until": self.end_ns}
        return {**out, "time": self.time_ns} if self.time_ns else out

    def proto(self) -> events_pb2.ProfileLink:
        return events_pb2.ProfileLink(query=self.query, range=types_pb2.TimeRange(start_ns=self.start_ns,
                                                                                  end_ns=self.end_ns),
                                      time_ns=self.time_ns)


@dataclass(frozen=True)
class DiffLink:
    left: ProfileLink
    right: ProfileLink

    def json(self) -> dict:
        return {"left": self.left.json(), "right": self.right.json()}

    def proto(self) -> events_pb2.DiffLink:
        return events_pb2.DiffLink(left_query=self.left.query, left_range=self.left.proto().range,
                                   right_query=self.right.query, right_range=self.right.proto().range)


@dataclass(frozen=True)
class Evidence:
    last_heap: ProfileLink | None = None
    last_heap_age_ns: int = 0
    first_heap: ProfileLink | None = None
    inuse_growth: DiffLink | None = None
    alloc_growth: DiffLink | None = None
    cpu_before: ProfileLink | None = None
    notes: tuple[str, ...] = ()
    ui_path: str = ""
    change: DiffLink | None = None  # a regression: what the rule compared

    def json(self) -> dict:
        links = {name: getattr(self, name) for name in LINKS}
        return {**{name: link.json() if link else None for name, link in links.items()},
                "last_heap_age_ns": self.last_heap_age_ns if self.last_heap else None,
                "notes": list(self.notes), "ui_path": self.ui_path}


@dataclass(frozen=True)
class Incident:
    recorded: Recorded
    evidence: Evidence = field(default_factory=Evidence)


LINKS = ("last_heap", "first_heap", "inuse_growth", "alloc_growth", "cpu_before", "change")


def identity(labels: dict[str, str]) -> tuple[Matcher, ...]:
    """The matchers that find the program's profiles (see the module docstring)."""
    if all(labels.get(name) for name in KUBERNETES_IDENTITY):
        chosen = {name: labels[name] for name in KUBERNETES_IDENTITY}
    else:
        chosen = {name: value for name, value in labels.items() if name != "node"}
    return tuple(Matcher(name, "=", value) for name, value in sorted(chosen.items()))


class Incidents:
    def __init__(self, db: Database) -> None:
        self._db = db

    def list(self, tenant: str, start: int, end: int, selector: str = "", kinds: tuple[str, ...] = (),
             limit: int = 0) -> list[Incident]:
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown incident kind {unknown[0]!r}; kinds are {', '.join(KINDS)}")
        if not 0 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        matchers = parse_selector(selector) if selector.strip() else ()
        found = list_events(self._db, tenant, start, end, matchers, kinds, limit or DEFAULT_LIMIT)
        return [Incident(r, self.evidence(tenant, r)) for r in found]

    def get(self, tenant: str, id_: int) -> Incident:
        """One incident by its id, as its permalink (`ui_path`) names it; NotFoundError when the tenant has
        none of that id."""
        found = get_event(self._db, tenant, id_)
        if found is None:
            raise NotFoundError(f"no incident {id_} in tenant {tenant!r}")
        return Incident(found, self.evidence(tenant, found))

    def evidence(self, tenant: str, recorded: Recorded) -> Evidence:
        event = recorded.event
        if event.kind == REGRESSION:
            return _regression_evidence(recorded)
        matchers = identity(event.labels)
        selector = format_matchers(matchers)
        end, notes = event.time_ns, []
        start = max(end - LOOKBACK_NS, 0)
        heap = self._times(tenant, HEAP_INUSE, matchers, start, end)
        ui_path = incident_path(recorded.id)
        if not len(heap):
            notes.append(f"no in-use heap profile of {selector} in the {LOOKBACK_NS // 3600 // 10**9} h before "
                         f"{format_ns(end)}: scrape its heap (e.g. /debug/pprof/heap) to have one next time")
            return Evidence(notes=tuple(notes), cpu_before=self._cpu(tenant, matchers, selector, end),
                            ui_path=ui_path)
        last = int(heap.max())
        run = heap[heap >= event.started_ns] if event.started_ns else heap
        if not len(run):
            notes.append(f"no heap profile of this run (started {format_ns(event.started_ns)}); the growth is "
                         "measured from the oldest one of the last 24 h")
            run = heap
        elif not event.started_ns:
            notes.append("the run's start is unknown: the growth is measured from the oldest heap profile of the "
                         "last 24 h")
        first = int(run.min())
        last_link, first_link = _single(HEAP_INUSE, selector, last), _single(HEAP_INUSE, selector, first)
        alloc = None
        if len(self._times(tenant, HEAP_ALLOC, matchers, first, last)):
            # Allocations are kept per scrape (deltas), and a Go heap profile changes only at a collection:
            # one profile's allocations may be nothing. So the allocations of the run's first minute are set
            # against those of its last minute before the end.
            span = min(ALLOC_WINDOW_NS, max((last - first) // 2, 1))
            alloc = DiffLink(ProfileLink(HEAP_ALLOC + selector, first, first + span),
                             ProfileLink(HEAP_ALLOC + selector, last - span, last))
        if first == last:
            notes.append("only one heap profile of this run: there is no growth to show")
        return Evidence(last_link, end - last, first_link,
                        DiffLink(first_link, last_link) if first != last else None,
                        alloc if first != last else None, self._cpu(tenant, matchers, selector, end),
                        tuple(notes), ui_path)

    def _cpu(self, tenant: str, matchers: tuple[Matcher, ...], selector: str, end: int) -> ProfileLink | None:
        start = max(end - CPU_WINDOW_NS, 0)
        return ProfileLink(CPU + selector, start, end) if len(self._times(tenant, CPU, matchers, start, end)) else None

    def _times(self, tenant: str, profile_type: str, matchers: tuple[Matcher, ...], start: int, end: int):
        series = index.find_series(self._db, tenant, matchers, start, end, profile_type=profile_type)
        if not series:
            return np.zeros(0, np.int64)
        return index.profile_totals(self._db, [s.id for s in series], start, end).time


def _regression_evidence(recorded: Recorded) -> Evidence:
    """The comparison the rule made, and its largest changes as notes."""
    details = recorded.event.details
    a, b = details.get("a"), details.get("b")
    change = DiffLink(*(ProfileLink(side["query"], side["from"], side["until"]) for side in (a, b))) if a and b \
        else None
    notes = tuple(f"{f['name']}: {f['a']:.2%} -> {f['b']:.2%} of the total ({f['change']:+.2%})"
                  for f in details.get("functions", [])[:10])
    return Evidence(notes=notes, ui_path=incident_path(recorded.id), change=change)


def _single(profile_type: str, selector: str, time_ns: int) -> ProfileLink:
    return ProfileLink(profile_type + selector, time_ns, time_ns, time_ns)


def incident_json(incident: Incident) -> dict:
    r = incident.recorded
    e = r.event
    return {"id": r.id, "kind": e.kind, "time": e.time_ns, "labels": e.labels, **e.payload(), "key": e.key,
            "recorded": r.recorded_ns, "evidence": incident.evidence.json()}


def annotation_json(incident: Incident) -> dict:
    """One incident as Grafana's JSON annotations read it (times in ms)."""
    e = incident.recorded.event
    what = {"oom_kill": "OOM kill", "restart": "restart", "regression": "regression"}.get(e.kind, e.kind)
    who = e.labels.get("service_name") or "/".join(e.labels.get(n, "") for n in KUBERNETES_IDENTITY).strip("/")
    text = [f"exit code {e.exit_code}"] + ([e.message] if e.message else []) + list(incident.evidence.notes)
    age = incident.evidence.last_heap_age_ns
    if incident.evidence.last_heap is not None:
        text.insert(1, f"last heap profile {age / 1e9:.1f} s before")
    return {"time": e.time_ns // 10**6, "timeEnd": e.time_ns // 10**6, "title": f"{what}: {who}",
            "text": "; ".join(text), "tags": [e.kind, *(f"{k}={v}" for k, v in sorted(e.labels.items()))],
            "id": incident.recorded.id, "ui_path": incident.evidence.ui_path}


Kinds = Annotated[list[str] | None, Query(alias="kind", description="oom_kill or restart; repeat for more")]


def router(incidents: Incidents) -> APIRouter:
    r = APIRouter(prefix="/api/v1", responses=ERROR_RESPONSES)

    @r.get("/incidents", summary="Incidents (OOM kills, restarts with an error) with links to their profiles")
    def list_incidents(tenant: ReadTenant, start: Annotated[str | None, Query(alias="from")] = None,
                       until: str | None = None, query: str = "", kind: Kinds = None, limit: int = 0,
                       format: Literal["json", "annotations"] = "json") -> dict | list:
        lo, hi = time_range(start, until)
        found = incidents.list(tenant, lo, hi, query, tuple(kind or ()), limit)
        if format == "annotations":
            return [annotation_json(i) for i in found]
        return {"incidents": [incident_json(i) for i in found]}

    @r.get("/incidents/{incident_id}", summary="One incident, by the id its permalink carries")
    def get_incident(tenant: ReadTenant, incident_id: int) -> dict:
        return incident_json(incidents.get(tenant, incident_id))

    return r


def _evidence_proto(ev: Evidence) -> events_pb2.Evidence:
    out = events_pb2.Evidence(last_heap_age_ns=ev.last_heap_age_ns, notes=list(ev.notes), ui_path=ev.ui_path)
    for name in LINKS:
        link = getattr(ev, name)
        if link is not None:
            getattr(out, name).CopyFrom(link.proto())
    return out


def _incident_proto(i: Incident) -> events_pb2.Incident:
    return events_pb2.Incident(id=i.recorded.id, event=event_proto(i.recorded.event),
                               evidence=_evidence_proto(i.evidence), recorded_ns=i.recorded.recorded_ns)


class IncidentServicer(events_pb2_grpc.IncidentServiceServicer):
    def __init__(self, incidents: Incidents) -> None:
        self._incidents = incidents

    @handled
    async def List(self, request: events_pb2.ListIncidentsRequest, context) -> events_pb2.ListIncidentsResponse:
        tenant = grpc_tenant(context, Action.READ)
        lo, hi = (request.range.start_ns, request.range.end_ns) if request.range.end_ns else time_range(None, None)
        found = await asyncio.to_thread(self._incidents.list, tenant, lo, hi, request.selector,
                                        tuple(request.kinds), request.limit)
        return events_pb2.ListIncidentsResponse(incidents=[_incident_proto(i) for i in found])

    @handled
    async def Get(self, request: events_pb2.GetIncidentRequest, context) -> events_pb2.Incident:
        tenant = grpc_tenant(context, Action.READ)
        return _incident_proto(await asyncio.to_thread(self._incidents.get, tenant, request.id))


def register_grpc(incidents: Incidents):
    def register(server) -> None:
        events_pb2_grpc.add_IncidentServiceServicer_to_server(IncidentServicer(incidents), server)

    return register
