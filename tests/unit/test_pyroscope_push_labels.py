"""push.v1 series → the ingester's input: Pyroscope's label names made ours, its internal labels dropped."""

import asyncio
import gzip
import json

import httpx
import pytest
from fastapi import FastAPI
from google.protobuf import json_format

from flamewatch.api.push.v1 import push_pb2
from flamewatch.api.types.v1 import types_pb2
from flamewatch.ingester.pyroscope import connect_router, series_of


def _request(*labelled: list[tuple[str, str]]) -> push_pb2.PushRequest:
    return push_pb2.PushRequest(series=[push_pb2.RawProfileSeries(
        labels=[types_pb2.LabelPair(name=k, value=v) for k, v in labels],
        samples=[push_pb2.RawSample(ID=f"s{i}", raw_profile=b"pprof")]) for i, labels in enumerate(labelled)])


def test_series_keep_labels_and_samples_and_drop_pyroscopes_internal_labels():
    request = _request([("__name__", "process_cpu"), ("service_name", "a"), ("__delta__", "false"),
                        ("__session_id__", "1234"), ("process.runtime.name", "cpython")],
                       [("__name__", "memory"), ("service_name", "b")])
    assert series_of(request) == [
        ({"__name__": "process_cpu", "service_name": "a", "process_runtime_name": "cpython"}, [("s0", b"pprof")]),
        ({"__name__": "memory", "service_name": "b"}, [("s1", b"pprof")]),
    ]


def test_internal_labels_are_dropped_however_they_are_written():
    """A name that becomes `__delta__` once sanitised was kept as a label (found by fuzzing)."""
    request = _request([("service_name", "a"), ("__delta..", "false"), ("__session.id__", "1")])
    assert series_of(request) == [({"service_name": "a"}, [("s0", b"pprof")])]


def test_names_that_collide_with_different_values_are_refused():
    with pytest.raises(ValueError, match='labels "a.b" and "a_b" both become "a_b" with different values'):
        series_of(_request([("a.b", "1"), ("a_b", "2")]))
    assert series_of(_request([("a.b", "1"), ("a_b", "1")]))[0][0] == {"a_b": "1"}


def test_a_push_without_profiles_is_refused():
    with pytest.raises(ValueError, match="push has no profiles"):
        series_of(push_pb2.PushRequest(series=[push_pb2.RawProfileSeries(
            labels=[types_pb2.LabelPair(name="service_name", value="a")])]))


def test_a_push_over_the_profile_count_is_refused_before_any_profile_is_read():
    """Over Connect, in process: 1,001 tiny profiles would each be decompressed and decoded."""
    pushed = []

    async def push(tenant, series):
        pushed.append(series)

    async def call(request: push_pb2.PushRequest) -> httpx.Response:
        app = FastAPI()
        app.include_router(connect_router(push, 1 << 20, max_profiles=1000))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ingester") as client:
            return await client.post("/push.v1.PusherService/Push", content=request.SerializeToString(),
                                     headers={"Content-Type": "application/proto"})

    many = push_pb2.PushRequest(series=[push_pb2.RawProfileSeries(
        labels=[types_pb2.LabelPair(name="service_name", value="a")],
        samples=[push_pb2.RawSample(ID=f"s{i}", raw_profile=b"pprof") for i in range(1001)])])
    r = asyncio.run(call(many))
    assert (r.status_code, r.json()) == (429, {"code": "resource_exhausted", "message": (
        "push has 1001 profiles, the limit is 1000 per push (--limits.max-profiles-per-push)")})
    del many.series[0].samples[1000]
    assert asyncio.run(call(many)).status_code == 200
    assert [len(s[0][1]) for s in pushed] == [1000]


def test_a_json_push_over_the_profile_count_is_refused_before_protobufs_json_parser(monkeypatch):
    """300k series as JSON (34 KB gzipped) cost 3.4 s of CPU in the parser before the count was checked."""
    pushed = []
    parsed = []
    parse_dict = json_format.ParseDict

    def recording_parse_dict(document, message, **kwargs):
        parsed.append(len(document.get("series", ())))
        return parse_dict(document, message, **kwargs)

    monkeypatch.setattr(json_format, "ParseDict", recording_parse_dict)

    async def push(tenant, series):
        pushed.append(series)

    async def call(body: bytes) -> httpx.Response:
        app = FastAPI()
        app.include_router(connect_router(push, 64 << 20, max_profiles=1000))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ingester") as client:
            return await client.post("/push.v1.PusherService/Push", content=gzip.compress(body),
                                     headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})

    body = json.dumps({"series": [{"samples": [{"rawProfile": "AA=="}]}] * 300_000}).encode()
    r = asyncio.run(call(body))
    assert (r.status_code, r.json()) == (429, {"code": "resource_exhausted", "message": (
        "push has 300000 series, the limit is 1000 per push (--limits.max-profiles-per-push)")})
    assert parsed == []  # refused on the decoded JSON's counts: protobuf's parser never saw the 300k series
    one = {"series": [{"labels": [{"name": "service_name", "value": "a"}], "samples": [{"rawProfile": "AA=="}] * 3}]}
    assert asyncio.run(call(json.dumps(one).encode())).status_code == 200
    assert pushed == [[({"service_name": "a"}, [("", b"\0")] * 3)]]
    assert parsed == [1]
