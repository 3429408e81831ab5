"""Events recorded and linked to the profiles that explain them, on a real Postgres with real Go heap
and CPU profiles stored through the ingester's writer: the last heap before the kill, the first of the
run, the growth between them and the CPU before, each a query that answers."""

from __future__ import annotations

import asyncio
import time

import pytest
from e2e.pushes import rewritten

from flamewatch.events.api import Recorder
from flamewatch.events.model import Event, InvalidEvent
from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.ingester.writer import BlockWriter
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.engine import Querier
from flamewatch.querier.incidents import CPU, HEAP_INUSE, Incidents, annotation_json, incident_json
from flamewatch.querier.paths import PathIndex
from flamewatch.rpc.errors import NotFoundError
from flamewatch.storage.objstore import FilesystemConfig, ObjectStore, open_object_store

pytestmark = [pytest.mark.postgres, pytest.mark.go]

TENANT = "team-a"
POD = {"namespace": "shop", "pod": "api-7d9f", "container": "api", "service_name": "shop/api"}
S = 10**9


@pytest.fixture
def store(tmp_path) -> ObjectStore:
    return open_object_store(FilesystemConfig(str(tmp_path / "objects")))


def push(db, store: ObjectStore, labels: dict[str, str], data: bytes, time_ns: int) -> None:
    """Stored as the ingester stores a push (prepared, then written as one block), into TENANT."""
    entries = prepare(labels, rewritten(data, time_ns=time_ns), IngestLimits(), time_ns).entries
    BlockWriter(store, db).write(TENANT, entries)


def record(db, events: list[Event], tenant: str = TENANT) -> tuple[int, int]:
    return asyncio.run(Recorder(db).record(tenant, events))


@pytest.fixture
def stored(db, store, go_profiles):
    """A container's heap every 10 s from `start` for a minute, its CPU in the last 30 s, and a
    neighbour pod's heap after the kill (which must not be linked)."""
    start = (time.time_ns() // S - 600) * S
    for i in range(7):
        push(db, store, {**POD, "job": "pods"}, go_profiles["heap"], start + i * 10 * S)
    push(db, store, {**POD, "job": "pods"}, go_profiles["cpu"], start + 50 * S)
    push(db, store, {**POD, "pod": "api-other"}, go_profiles["heap"], start + 64 * S)
    return start


def querier(db, store) -> Querier:
    return Querier(db, BlockCache(store, 64 << 20, 2, PathIndex()), QuerierConfig())


def test_a_kill_links_the_last_heap_before_it_the_first_of_its_run_and_the_growth(db, store, stored):
    kill = Event("oom_kill", stored + 65 * S, {**POD, "node": "n1"}, exit_code=137, memory_limit_bytes=256 << 20,
                 restart_count=3, started_ns=stored + 5 * S, key="kubernetes/uid-1/api/3")
    assert record(db, [kill]) == (1, 0)
    assert record(db, [kill]) == (0, 1)  # a re-list, or a second collector: recorded once

    [incident] = Incidents(db).list(TENANT, stored, stored + 120 * S)
    ev = incident.evidence
    assert ev.last_heap.time_ns == stored + 60 * S and ev.last_heap_age_ns == 5 * S
    assert ev.first_heap.time_ns == stored + 10 * S  # the first after the run started, not the one before
    assert ev.last_heap.query == HEAP_INUSE + '{container="api",namespace="shop",pod="api-7d9f"}'
    assert (ev.inuse_growth.left, ev.inuse_growth.right) == (ev.first_heap, ev.last_heap)
    assert ev.alloc_growth is not None and ev.alloc_growth.right.query.startswith("memory:alloc_space:")
    assert ev.cpu_before.query.startswith(CPU) and ev.cpu_before.end_ns == kill.time_ns
    assert ev.ui_path == f"/?view=incidents&incident={incident.recorded.id}"

    q = querier(db, store)
    for link in (ev.last_heap, ev.first_heap, ev.cpu_before):
        merged = q.merge(TENANT, link.query, link.start_ns, link.end_ns)
        assert merged.profiles == 1 and merged.tree is not None, link
    # allocations: the run's first and last stretch (25 s each here, half of the 50 s run), not one profile
    left, right = ev.alloc_growth.left, ev.alloc_growth.right
    assert (left.start_ns, left.end_ns, right.start_ns, right.end_ns) == (
        stored + 10 * S, stored + 35 * S, stored + 35 * S, stored + 60 * S)
    assert q.merge(TENANT, left.query, left.start_ns, left.end_ns).profiles == 3
    as_json = incident_json(incident)
    assert as_json["evidence"]["last_heap"]["time"] == stored + 60 * S and as_json["exit_code"] == 137
    note = annotation_json(incident)
    assert note["time"] == kill.time_ns // 10**6 and note["title"] == "OOM kill: shop/api"
    assert "oom_kill" in note["tags"]


def test_without_a_start_the_growth_runs_from_the_oldest_heap_and_says_so(db, store, stored):
    record(db, [Event("restart", stored + 61 * S, {"service_name": "shop/api", "job": "pods"}, exit_code=2)])
    [incident] = Incidents(db).list(TENANT, stored, stored + 120 * S, selector='{service_name="shop/api"}')
    assert incident.evidence.first_heap.time_ns == stored
    assert any("start is unknown" in n for n in incident.evidence.notes)
    assert incident.evidence.last_heap.query.endswith('{job="pods",service_name="shop/api"}')


def test_a_program_without_heap_profiles_gets_a_note_that_says_what_to_do(db, store, stored):
    record(db, [Event("oom_kill", stored + 30 * S, {"service_name": "batch"})])
    [incident] = Incidents(db).list(TENANT, stored, stored + 120 * S, kinds=("oom_kill",))
    assert incident.evidence.last_heap is None and incident.evidence.cpu_before is None
    assert "no in-use heap profile of {service_name=\"batch\"}" in incident.evidence.notes[0]
    assert "scrape its heap" in incident.evidence.notes[0]


def test_tenants_and_selectors_keep_incidents_apart(db, store, stored):
    record(db, [Event("oom_kill", stored + 30 * S, POD)], tenant="team-b")
    record(db, [Event("restart", stored + 40 * S, {**POD, "pod": "api-other"}, exit_code=1)])
    assert [i.recorded.event.labels["pod"] for i in Incidents(db).list(TENANT, stored, stored + 120 * S)] == \
        ["api-other"]
    assert Incidents(db).list(TENANT, stored, stored + 120 * S, selector='{pod="api-7d9f"}') == []
    assert len(Incidents(db).list("team-b", stored, stored + 120 * S, selector='{pod=~"api-.*"}')) == 1


def test_one_incident_by_its_id_as_its_permalink_names_it_and_only_in_its_tenant(db, store, stored):
    record(db, [Event("oom_kill", stored + 65 * S, POD, exit_code=137)])
    [listed] = Incidents(db).list(TENANT, stored, stored + 120 * S)
    one = Incidents(db).get(TENANT, listed.recorded.id)
    assert incident_json(one) == incident_json(listed)
    with pytest.raises(NotFoundError, match=f"no incident {listed.recorded.id} in tenant 'team-b'"):
        Incidents(db).get("team-b", listed.recorded.id)


@pytest.mark.parametrize(("event", "problem"), [
    (Event("segfault", 0, {"service_name": "a"}), "unknown kind 'segfault'; use one of oom_kill, restart"),
    (Event("oom_kill", -2**63, {"service_name": "a"}), "is outside the accepted window"),
    (Event("oom_kill", 2**62, {"service_name": "a"}), "is outside the accepted window"),
    (Event("oom_kill", 0, {}), "no labels"),
    (Event("oom_kill", 0, {"service_name": "a\x00b"}), "NUL"),
    (Event("oom_kill", 0, {"service_name": "x" * 5000}), "the limit is 2048"),
    (Event("oom_kill", 0, {f"l{i}": "v" for i in range(40)}), "40 labels, the limit is 32"),
    (Event("oom_kill", 0, {"bad-name": "v"}), 'invalid label name "bad-name"'),
    (Event("oom_kill", 0, {"a": "b"}, message="m" * 10_000), "message is 10000 bytes long"),
    (Event("oom_kill", 0, {"a": "b"}, started_ns=2**62), "must be before the event's time"),
])
def test_a_bad_event_is_refused_and_nothing_of_its_request_is_written(db, event: Event, problem: str):
    now = time.time_ns()
    if event.time_ns == 0:
        event = Event(**{**event.__dict__, "time_ns": now})
    good = Event("oom_kill", now, {"service_name": "fine"})
    with pytest.raises(InvalidEvent, match="event 1: ") as refused:
        record(db, [good, event])
    assert problem in str(refused.value)
    assert Incidents(db).list(TENANT, 0, now + 60 * S) == []
