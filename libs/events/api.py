"""Recording events over the wire: `POST /api/v1/events` and gRPC `EventService.Record`.

The ingester, the querier and `flamewatch all` serve both (`routers`, `register_grpc`), so a supervisor
can post to whichever it reaches and the collector records kills through the ingester it pushes to.
A request is checked whole before anything is written (`model.check`); a refused one records nothing.

    curl -X POST localhost:8080/api/v1/events -H 'Content-Type: application/json' -d '{"events": [
      {"kind": "oom_kill", "time": "2026-11-26T14:02:00Z", "labels": {"service_name": "api"},
       "exit_code": 137, "memory_limit_bytes": 268435456, "message": "killed by the kernel"}]}'

Each new event counts in `flamewatch_incidents_total{kind, service_name}` and goes to the `notify`
callback (Alertmanager, when configured).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from fastapi import APIRouter
from prometheus_client import Counter
from pydantic import BaseModel, ConfigDict, Field

from flamewatch.api.flamewatch.v1 import events_pb2, events_pb2_grpc
from flamewatch.auth.caller import Action
from flamewatch.events.convert import event_of_proto
from flamewatch.events.model import DEFAULT_LIMITS, Event, EventLimits, check
from flamewatch.events.store import Recorded, record
from flamewatch.rpc.auth import WriteTenant, grpc_tenant
from flamewatch.rpc.grpc_server import handled
from flamewatch.rpc.openapi import ERROR_RESPONSES
from flamewatch.storage.postgres import Database
from flamewatch.timerange import parse_time

log = logging.getLogger(__name__)

INCIDENTS = Counter("flamewatch_incidents", "Events recorded (OOM kills, restarts with an error), by kind and the "
                    "service_name of the program", ["kind", "service_name"])

Notify = Callable[[str, list[Recorded]], None]  # (tenant, the new events), called off the event loop


class Recorder:
    def __init__(self, db: Database, limits: EventLimits = DEFAULT_LIMITS, notify: Notify | None = None) -> None:
        self._db, self._limits, self._notify = db, limits, notify

    async def record(self, tenant: str, events: list[Event]) -> tuple[int, int]:
        """Check, then record every event or none; returns (new, duplicates)."""
        now = time.time_ns()
        keyed = check(events, now, self._limits)
        new = await asyncio.to_thread(record, self._db, tenant, keyed, now)
        for event in (r.event for r in new):
            INCIDENTS.labels(event.kind, event.labels.get("service_name", "")).inc()
            log.info("recorded %s of %s at %d (tenant %s)", event.kind, event.labels, event.time_ns, tenant)
        if new and self._notify is not None:
            await asyncio.to_thread(self._notified, tenant, new)
        return len(new), len(keyed) - len(new)

    def _notified(self, tenant: str, new: list[Recorded]) -> None:
        """The events are recorded whatever becomes of the notification."""
        try:
            self._notify(tenant, new)
        except Exception:
            log.exception("could not pass %d new events of tenant %s on to be notified", len(new), tenant)


class EventBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str = Field(description="oom_kill, restart or regression")
    time: str | int = Field(description="when the program ended: RFC 3339, or seconds/ms/ns since the epoch")
    labels: dict[str, str] = Field(description="the labels the program's profiles carry")
    exit_code: int = 0
    memory_limit_bytes: int = 0
    restart_count: int = 0
    started: str | int | None = Field(None, description="when the run that ended had started")
    message: str = ""
    key: str = Field("", description="recorded once per key; default: from kind, labels and time")
    details: dict = Field(default_factory=dict, description="what the kind carries besides: a regression's two "
                          "selections (a, b: query, from, until, value) and ranked functions, as rules record them")


class EventsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    events: list[EventBody]


class RecordedAnswer(BaseModel):
    recorded: int
    duplicates: int


def _event_of(body: EventBody, now_ns: int) -> Event:
    started = parse_time(str(body.started), now_ns) if body.started not in (None, "") else 0
    return Event(body.kind, parse_time(str(body.time), now_ns), body.labels, body.exit_code, body.memory_limit_bytes,
                 body.restart_count, started, body.message, body.key, body.details)


def router(recorder: Recorder) -> APIRouter:
    r = APIRouter(prefix="/api/v1", responses=ERROR_RESPONSES)

    @r.post("/events", summary="Record events (OOM kills, restarts with an error) of the tenant's programs",
            response_model=RecordedAnswer)
    async def post_events(body: EventsBody, tenant: WriteTenant) -> dict:
        now = time.time_ns()
        recorded, duplicates = await recorder.record(tenant, [_event_of(e, now) for e in body.events])
        return {"recorded": recorded, "duplicates": duplicates}

    return r


class EventServicer(events_pb2_grpc.EventServiceServicer):
    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    @handled
    async def Record(self, request: events_pb2.RecordEventsRequest, context) -> events_pb2.RecordEventsResponse:
        tenant = grpc_tenant(context, Action.WRITE)
        recorded, duplicates = await self._recorder.record(tenant, [event_of_proto(e) for e in request.events])
        return events_pb2.RecordEventsResponse(recorded=recorded, duplicates=duplicates)


def register_grpc(recorder: Recorder):
    def register(server) -> None:
        events_pb2_grpc.add_EventServiceServicer_to_server(EventServicer(recorder), server)

    return register


def assemble(db: Database, notify: Notify | None = None):
    """Recording events in a process: its route and servicer (once per process, whatever it runs)."""
    from flamewatch.rpc.assembly import Assembly

    recorder = Recorder(db, notify=notify)
    return Assembly([router(recorder)], register_grpc(recorder), parts={"recorder": recorder})
