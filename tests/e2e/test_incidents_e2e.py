"""Events and incidents across processes: a real Go heap profile pushed to the ingester, an OOM kill
recorded with `flamewatch event` (REST, at the ingester) and over gRPC (`EventService.Record`), listed by
the querier over REST (JSON and Grafana's annotation shape) and gRPC (`IncidentService.List`, `Get`), each with
the link to the last heap before it; a bad event is refused with a message that names the problem."""

from __future__ import annotations

import json
import time

import grpc
import httpx
import pytest
from e2e.cluster import Cluster
from e2e.pushes import rewritten
from e2e.test_cli_auth import flamewatch

from flamewatch.api.flamewatch.v1 import events_pb2, events_pb2_grpc, types_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

S = 10**9
LABELS = {"service_name": "leaky", "instance": "10.0.0.7:6060"}


def test_an_event_posted_by_a_script_becomes_an_incident_with_its_last_heap(cluster: Cluster, go_profiles):
    heap_at = (time.time_ns() // S - 120) * S
    pushed = httpx.post(f"{cluster.ingester_url}/ingest", params=LABELS, timeout=30,
                        content=rewritten(go_profiles["heap"], time_ns=heap_at))
    assert pushed.status_code == 200, pushed.text
    kill_at = heap_at + 7 * S
    args = ["event", "--url", cluster.ingester_url, "--kind", "oom_kill", "--time", str(kill_at), "--exit-code",
            "137", "--memory-limit", str(64 << 20), "--message", "killed by the kernel",
            *[a for k, v in LABELS.items() for a in ("--label", f"{k}={v}")]]
    first, again = flamewatch(*args), flamewatch(*args)
    assert first.returncode == 0 and first.stdout.startswith("recorded oom_kill of"), first.stderr
    assert again.returncode == 0 and "was recorded before (same key)" in again.stdout

    answer = httpx.get(f"{cluster.querier_url}/api/v1/incidents", params={"from": "now-1h"}, timeout=30)
    assert answer.status_code == 200, answer.text
    [incident] = answer.json()["incidents"]
    assert (incident["kind"], incident["exit_code"], incident["memory_limit_bytes"]) == ("oom_kill", 137, 64 << 20)
    evidence = incident["evidence"]
    assert evidence["last_heap"]["time"] == heap_at and evidence["last_heap_age_ns"] == 7 * S
    heap = httpx.get(f"{cluster.querier_url}/api/v1/query", timeout=30, params={
        "query": evidence["last_heap"]["query"], "from": str(heap_at), "until": str(heap_at)})
    assert heap.status_code == 200 and heap.json()["profiles"] == 1, heap.text

    notes = httpx.get(f"{cluster.querier_url}/api/v1/incidents", params={"from": "now-1h", "format": "annotations"},
                      timeout=30).json()
    assert notes[0]["time"] == kill_at // 10**6 and notes[0]["title"] == "OOM kill: leaky"
    assert "last heap profile 7.0 s before" in notes[0]["text"]


def test_grpc_records_at_the_ingester_and_lists_at_the_querier(cluster: Cluster):
    now = time.time_ns()
    event = events_pb2.Event(kind="restart", time_ns=now, exit_code=2, key="supervisor/run-42",
                             labels=[types_pb2.LabelPair(name="service_name", value="grpc-batch")])
    with grpc.insecure_channel(cluster.ingester_grpc) as channel:
        recorded = events_pb2_grpc.EventServiceStub(channel).Record(
            events_pb2.RecordEventsRequest(events=[event, event]), timeout=30)
    assert (recorded.recorded, recorded.duplicates) == (1, 1)  # the same key twice in one request
    with grpc.insecure_channel(cluster.querier_grpc) as channel:
        incidents = events_pb2_grpc.IncidentServiceStub(channel)
        found = incidents.List(events_pb2.ListIncidentsRequest(
            range=types_pb2.TimeRange(start_ns=now - S, end_ns=now + S), selector='{service_name="grpc-batch"}'),
            timeout=30)
        [incident] = found.incidents
        assert incidents.Get(events_pb2.GetIncidentRequest(id=incident.id), timeout=30) == incident  # a permalink's
        with pytest.raises(grpc.RpcError) as unknown:
            incidents.Get(events_pb2.GetIncidentRequest(id=incident.id + 1000), timeout=30)
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND and "no incident" in unknown.value.details()
    assert incident.event.key == "supervisor/run-42" and incident.event.exit_code == 2
    assert not incident.evidence.HasField("last_heap") and "no in-use heap profile" in incident.evidence.notes[0]
    rest = httpx.get(f"{cluster.querier_url}/api/v1/incidents/{incident.id}", timeout=30)
    assert rest.status_code == 200 and rest.json()["key"] == "supervisor/run-42", rest.text
    missing = httpx.get(f"{cluster.querier_url}/api/v1/incidents/{incident.id + 1000}", timeout=30)
    assert missing.status_code == 404 and "no incident" in missing.json()["error"], missing.text


@pytest.mark.parametrize(("event", "problem"), [
    ({"kind": "panic", "time": "now", "labels": {"a": "b"}}, "unknown kind 'panic'"),
    ({"kind": "oom_kill", "time": "1999-01-01T00:00:00Z", "labels": {"a": "b"}}, "outside the accepted window"),
    ({"kind": "oom_kill", "time": "yesterday", "labels": {"a": "b"}}, 'invalid time "yesterday"'),
    ({"kind": "oom_kill", "time": "now", "labels": {"a": "b" * 3000}}, "the limit is 2048"),
    ({"kind": "oom_kill", "time": "now", "labels": {"a": "b"}, "colour": "red"}, "colour"),
    ({"kind": "regression", "time": "now", "labels": {"a": "b"}, "details": {"x": "y" * 70_000}},
     "details is 70009 bytes long, the limit is 65536"),
])
def test_a_bad_event_is_a_400_that_names_the_problem(cluster: Cluster, event: dict, problem: str):
    answer = httpx.post(f"{cluster.ingester_url}/api/v1/events", json={"events": [event]}, timeout=30)
    assert answer.status_code == 400 and problem in answer.json()["error"], answer.text


def test_a_regression_posted_with_its_details_links_its_comparison(cluster: Cluster):
    side = {"query": 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="api",version="1.0"}',
            "from": time.time_ns() - 600 * S, "until": time.time_ns() - 300 * S, "value": "1.0"}
    details = {"a": side, "b": {**side, "query": side["query"].replace("1.0", "1.1"), "value": "1.1"},
               "functions": [{"name": "main.hash", "a": 0.2, "b": 0.25, "change": 0.05, "p": 0.001}]}
    event = {"kind": "regression", "time": "now", "labels": {"service_name": "api", "version": "1.1"},
             "details": details}
    posted = httpx.post(f"{cluster.ingester_url}/api/v1/events", timeout=30, json={"events": [event]})
    assert posted.status_code == 200, posted.text
    [incident] = httpx.get(f"{cluster.querier_url}/api/v1/incidents", timeout=30,
                           params={"kind": "regression", "from": "now-1h"}).json()["incidents"]
    assert incident["details"]["functions"][0]["name"] == "main.hash"
    assert incident["evidence"]["change"]["right"]["query"].endswith('version="1.1"}')
    assert incident["evidence"]["notes"] == ["main.hash: 20.00% -> 25.00% of the total (+5.00%)"]


def test_grpc_carries_a_regressions_details_both_ways_and_refuses_details_that_are_no_json_object(cluster: Cluster):
    now = time.time_ns()
    side = {"query": 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="grpc-api",version="1.0"}',
            "from": now - 600 * S, "until": now - 300 * S, "value": "1.0"}  # nanoseconds a double would round
    details = {"a": side, "b": {**side, "query": side["query"].replace("1.0", "1.1"), "value": "1.1"},
               "functions": [{"name": "main.hash", "a": 0.2, "b": 0.25, "change": 0.05, "p": 0.001}]}
    labels = [types_pb2.LabelPair(name="service_name", value="grpc-api")]
    event = events_pb2.Event(kind="regression", time_ns=now, labels=labels, details_json=json.dumps(details))
    with grpc.insecure_channel(cluster.ingester_grpc) as channel:
        record = events_pb2_grpc.EventServiceStub(channel).Record
        assert record(events_pb2.RecordEventsRequest(events=[event]), timeout=30).recorded == 1
        for bad, problem in (("[1, 2]", "details_json is a JSON list, not an object"),
                             ("{", "details_json is not JSON")):
            with pytest.raises(grpc.RpcError) as refused:
                record(events_pb2.RecordEventsRequest(events=[events_pb2.Event(
                    kind="regression", time_ns=now, labels=labels, details_json=bad, key=bad)]), timeout=30)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and problem in refused.value.details()
    with grpc.insecure_channel(cluster.querier_grpc) as channel:
        [incident] = events_pb2_grpc.IncidentServiceStub(channel).List(events_pb2.ListIncidentsRequest(
            range=types_pb2.TimeRange(start_ns=now - S, end_ns=now + S), selector='{service_name="grpc-api"}'),
            timeout=30).incidents
    assert json.loads(incident.event.details_json) == details
    assert incident.evidence.change.right_query.endswith('version="1.1"}')
