"""Recording an event from a script or supervisor: `flamewatch event` posts it to `/api/v1/events`."""

from __future__ import annotations

import httpx

from flamewatch.clientconfig import server_name_extensions, ssl_context
from flamewatch.events.model import Event
from flamewatch.rpc.channels import CREDENTIAL_HINT, http_headers, identity
from flamewatch.upload import base_url, error_message


class EventError(Exception):
    """The server could not be reached or refused the event."""


def post_event(url: str, event: Event, tenant: str | None, timeout: float) -> str:
    """Post with this process's client identity (`rpc.channels`); returns a line saying what happened."""
    body = {"events": [{"kind": event.kind, "time": event.time_ns, "labels": event.labels,
                        "exit_code": event.exit_code, "memory_limit_bytes": event.memory_limit_bytes,
                        "restart_count": event.restart_count, "started": event.started_ns or None,
                        "message": event.message, "key": event.key}]}
    me = identity()
    headers = {**http_headers(), **({"X-Scope-OrgID": tenant} if tenant else {})}
    try:
        with httpx.Client(base_url=base_url(url), timeout=timeout, verify=ssl_context(me.tls)) as client:
            response = client.post("/api/v1/events", json=body, headers=headers,
                                   extensions=server_name_extensions(me.tls))
    except httpx.HTTPError as exc:
        raise EventError(f"cannot reach {url}: {exc}") from exc
    if response.status_code == 404:
        raise EventError(f"{url} has no /api/v1/events (404): --url should be the base URL of flamewatch all, an "
                         "ingester or a querier, e.g. http://127.0.0.1:8080")
    if response.status_code == 401:
        raise EventError(f"{url} asks for credentials (401): {error_message(response)}; {CREDENTIAL_HINT}")
    if response.status_code != 200:
        raise EventError(f"refused ({response.status_code}): {error_message(response)}")
    answer = response.json()
    return (f"recorded {event.kind} of {event.labels}" if answer["recorded"] else
            f"{event.kind} of {event.labels} was recorded before (same key): left as it was")
