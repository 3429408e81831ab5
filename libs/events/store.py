"""Events in Postgres (table `events`, migration 0006): recorded once per key, listed by time.

A list is filtered by time and kind in SQL and by a label selector in Python: a tenant has a few events
a day, not millions, and the selector's regular expressions are RE2's (`flamewatch.labels.selector`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from psycopg.types.json import Jsonb

from flamewatch.events.model import Event
from flamewatch.labels.selector import Matcher
from flamewatch.storage.postgres import Database

DEFAULT_LIMIT = 500


@dataclass(frozen=True)
class Recorded:
    id: int
    event: Event
    recorded_ns: int


def record(db: Database, tenant: str, events: list[Event], now_ns: int) -> list[Recorded]:
    """Record checked, keyed events (`model.check`) in one transaction; returns the ones that were new,
    with their ids (an event whose key the tenant has already recorded is left as it was)."""
    new = []
    with db.connection() as conn:
        for event in events:
            row = conn.execute(
                "INSERT INTO events (tenant, kind, time, labels, payload, key, recorded_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (tenant, key) DO NOTHING RETURNING id",
                (tenant, event.kind, event.time_ns, Jsonb(event.labels), Jsonb(event.payload()), event.key,
                 now_ns)).fetchone()
            if row is not None:
                new.append(Recorded(row[0], event, now_ns))
    return new


def prune(db: Database, keep_ns: Callable[[str], int | None], now_ns: int) -> int:
    """Delete every tenant's events older than that tenant's retention (`keep_ns(tenant)`, None: for ever):
    an incident outlives its profiles by no more than they are kept. Returns the events deleted."""
    with db.connection() as conn:
        tenants = [t for (t,) in conn.execute("SELECT DISTINCT tenant FROM events")]
        deleted = 0
        for tenant in tenants:
            if (keep := keep_ns(tenant)) is not None:
                deleted += conn.execute("DELETE FROM events WHERE tenant = %s AND time < %s",
                                        (tenant, now_ns - keep)).rowcount
    return deleted


def get_event(db: Database, tenant: str, id_: int) -> Recorded | None:
    """One of the tenant's events by its id (a permalink names it), or None."""
    with db.connection() as conn:
        row = conn.execute("SELECT id, kind, time, labels, payload, key, recorded_at FROM events "
                           "WHERE tenant = %s AND id = %s", (tenant, id_)).fetchone()
    return _recorded(row) if row is not None else None


def _recorded(row: tuple) -> Recorded:
    id_, kind, time_ns, labels, payload, key, recorded = row
    return Recorded(id_, Event(kind, time_ns, labels, key=key, **payload), recorded)


def list_events(db: Database, tenant: str, start_ns: int, end_ns: int, matchers: tuple[Matcher, ...] = (),
                kinds: tuple[str, ...] = (), limit: int = DEFAULT_LIMIT) -> list[Recorded]:
    """The tenant's events with start <= time <= end whose labels match every matcher, newest first."""
    out: list[Recorded] = []
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT id, kind, time, labels, payload, key, recorded_at FROM events "
            "WHERE tenant = %s AND time BETWEEN %s AND %s AND (cardinality(%s::text[]) = 0 OR kind = ANY(%s)) "
            "ORDER BY time DESC, id DESC", (tenant, start_ns, end_ns, list(kinds), list(kinds)))
        for row in rows:
            if all(m.matches(row[3].get(m.name)) for m in matchers):
                out.append(_recorded(row))
                if len(out) >= limit:
                    break
    return out
