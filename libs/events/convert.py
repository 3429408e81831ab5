"""Events between the model (`model.Event`) and the wire (`flamewatch.v1.Event`), both ways, in one place."""

from __future__ import annotations

import json

from flamewatch.api.flamewatch.v1 import events_pb2, types_pb2
from flamewatch.events.model import Event, InvalidEvent
from flamewatch.rpc.labelpairs import label_pairs, labels_of_pairs


def event_of_proto(e: events_pb2.Event) -> Event:
    return Event(e.kind, e.time_ns, labels_of_pairs(e.labels), e.exit_code, e.memory_limit_bytes, e.restart_count,
                 e.started_ns, e.message, e.key, _details(e.details_json))


def event_proto(e: Event) -> events_pb2.Event:
    return events_pb2.Event(kind=e.kind, time_ns=e.time_ns, labels=label_pairs(e.labels, types_pb2.LabelPair),
                            exit_code=e.exit_code, memory_limit_bytes=e.memory_limit_bytes,
                            restart_count=e.restart_count, started_ns=e.started_ns, message=e.message, key=e.key,
                            details_json=json.dumps(e.details) if e.details else "")


def _details(text: str) -> dict:
    """`details_json` as the model's dict; an event that sends something else is refused with what it sent."""
    if not text:
        return {}
    try:
        details = json.loads(text)
    except ValueError as exc:
        raise InvalidEvent(f"details_json is not JSON ({exc}); send a JSON object such as {{\"a\": ...}}") from exc
    if not isinstance(details, dict):
        raise InvalidEvent(f"details_json is a JSON {type(details).__name__}, not an object")
    return details
