"""Connect's unary protocol as `flamewatch.rpc.connect` serves it, driven through httpx.

The services here are Pyroscope's own descriptors with small handlers, mounted on the FastAPI app our
services use (`rpc.http.build_app`), so the routes, codecs, compression, limits and error bodies are the
ones Grafana and the SDKs meet.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

import httpx
import pytest

from flamewatch.api.push.v1 import push_pb2
from flamewatch.api.querier.v1 import querier_pb2
from flamewatch.api.types.v1 import types_pb2
from flamewatch.auth.caller import Action
from flamewatch.labels.selector import parse_selector
from flamewatch.rpc import connect
from flamewatch.rpc.http import build_app

LIMIT = 64 << 10
QUERIER = querier_pb2.DESCRIPTOR.services_by_name["QuerierService"]
PUSHER = push_pb2.DESCRIPTOR.services_by_name["PusherService"]
PROTO = {"Content-Type": "application/proto"}
JSON = {"Content-Type": "application/json"}


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    async def push(self, request, call: connect.Call):
        self.calls.append((call.tenant, request))
        return push_pb2.PushResponse()

    async def label_names(self, request, call: connect.Call):
        for m in request.matchers:
            parse_selector(m)  # raises ValueError naming the problem, as the engine does
        return types_pb2.LabelNamesResponse(names=[f"{call.tenant}:{m}" for m in request.matchers])

    async def label_values(self, request, call: connect.Call):
        return types_pb2.LabelValuesResponse(names=[f"{request.name}-{i:05d}" for i in range(request.start)])

    async def series(self, request, call: connect.Call):
        await asyncio.sleep(5)
        return querier_pb2.SeriesResponse()

    async def profile_types(self, request, call: connect.Call):
        raise RuntimeError("a bug")


class Client:
    """httpx over ASGI: the app is called in this process, every request on a fresh event loop."""

    def __init__(self, app) -> None:
        self._app = app

    def post(self, path: str, **kwargs) -> httpx.Response:
        return asyncio.run(self._post(path, **kwargs))

    async def _post(self, path: str, **kwargs) -> httpx.Response:
        transport = httpx.ASGITransport(self._app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://flamewatch") as client:
            return await client.post(path, **kwargs)


@pytest.fixture
def served() -> tuple[Client, Recorder]:
    r = Recorder()
    querier = connect.Service(QUERIER, Action.READ, {"LabelNames": r.label_names, "LabelValues": r.label_values,
                                        "Series": r.series, "ProfileTypes": r.profile_types}, LIMIT)
    pusher = connect.Service(PUSHER, Action.WRITE, {"Push": r.push}, LIMIT)
    return Client(build_app([connect.router(querier), connect.router(pusher)], ready=lambda: [])), r


def _push(labels: dict[str, str], raw: bytes = b"pprof") -> push_pb2.PushRequest:
    return push_pb2.PushRequest(series=[push_pb2.RawProfileSeries(
        labels=[types_pb2.LabelPair(name=k, value=v) for k, v in labels.items()],
        samples=[push_pb2.RawSample(raw_profile=raw, ID="one")])])


def _error(response, status: int, code: str, *words: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["code"] == code, body
    for word in words:
        assert word in body["message"], body


def test_proto_request_and_answer(served):
    client, r = served
    request = _push({"__name__": "process_cpu", "service_name": "a"}, b"\x1f\x8bdata")
    response = client.post("/push.v1.PusherService/Push", content=request.SerializeToString(),
                           headers={**PROTO, "Connect-Protocol-Version": "1", "X-Scope-OrgID": "team-a"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/proto"
    assert push_pb2.PushResponse.FromString(response.content) == push_pb2.PushResponse()
    assert r.calls == [("team-a", request)]


def test_json_request_and_answer_use_protobuf_json_mapping(served):
    client, _ = served
    response = client.post("/querier.v1.QuerierService/LabelNames", headers=JSON,
                           content=json.dumps({"matchers": ['{job="x"}'], "start": "5", "end": 9}))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"names": ['anonymous:{job="x"}']}
    # bytes are base64 and int64 may be strings, as in Connect's JSON (protobuf's mapping)
    body = {"series": [{"labels": [{"name": "__name__", "value": "memory"}],
                        "samples": [{"rawProfile": "AQID", "ID": "x"}]}]}
    assert client.post("/push.v1.PusherService/Push", headers=JSON, json=body).json() == {}
    assert served[1].calls[-1][1].series[0].samples[0].raw_profile == b"\x01\x02\x03"


def test_gzip_request_body_in_either_header(served):
    client, r = served
    request = _push({"service_name": "zipped"})
    for header in ("Content-Encoding", "Connect-Content-Encoding"):
        response = client.post("/push.v1.PusherService/Push", content=gzip.compress(request.SerializeToString()),
                               headers={**PROTO, header: "gzip"})
        assert response.status_code == 200, response.text
    assert [call[1] for call in r.calls] == [request, request]


def test_large_answers_are_gzipped_when_accepted_and_small_ones_are_not(served):
    client, _ = served
    ask = types_pb2.LabelValuesRequest(name="pod", start=500).SerializeToString()
    zipped = client.post("/querier.v1.QuerierService/LabelValues", content=ask,
                         headers={**PROTO, "Accept-Encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip"
    answer = types_pb2.LabelValuesResponse.FromString(zipped.content)  # httpx has gunzipped it
    assert answer.names[0] == "pod-00000" and len(answer.names) == 500
    plain = client.post("/querier.v1.QuerierService/LabelValues", content=ask,
                        headers={**PROTO, "Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert types_pb2.LabelValuesResponse.FromString(plain.content) == answer
    small = client.post("/querier.v1.QuerierService/LabelValues", headers={**PROTO, "Accept-Encoding": "gzip"},
                        content=types_pb2.LabelValuesRequest(name="pod", start=2).SerializeToString())
    assert "content-encoding" not in small.headers


def test_unknown_method_is_unimplemented_404(served):
    client, _ = served
    response = client.post("/querier.v1.QuerierService/SelectEverything", headers=JSON, content="{}")
    _error(response, 404, "unimplemented", "querier.v1.QuerierService has no method 'SelectEverything'")


def test_method_without_handler_is_unimplemented_501(served):
    client, _ = served
    response = client.post("/querier.v1.QuerierService/SelectHeatmap", headers=JSON, content="{}")
    _error(response, 501, "unimplemented", "querier.v1.QuerierService/SelectHeatmap is not implemented")


@pytest.mark.parametrize(("headers", "body", "words"), [
    (PROTO, b"\xff\xff\xff", ["malformed application/proto body for push.v1.PusherService/Push"]),
    (JSON, b'{"series": [', ["malformed application/json body for push.v1.PusherService/Push"]),
    (JSON, b'{"series": 3}', ["malformed application/json body", "series"]),
    # found by fuzzing: a JSON body that is not an object failed inside protobuf's parser (a 500)
    (JSON, (Path(__file__).parent / "testdata" / "fuzz" / "connect-json-number.bin").read_bytes()[1:],
     ["malformed application/json body for push.v1.PusherService/Push: expected a JSON object"]),
    (JSON, b"null", ["malformed application/json body for push.v1.PusherService/Push: expected a JSON object"]),
    ({**PROTO, "Content-Encoding": "gzip"}, b"not gzip", ["request body is not valid gzip"]),
    ({**PROTO, "Content-Encoding": "gzip"}, gzip.compress(b"x" * 1000)[:-30], ["truncated"]),
    ({**PROTO, "Connect-Protocol-Version": "2"}, b"", ['Connect-Protocol-Version "2" is not supported']),
    ({**PROTO, "Connect-Timeout-Ms": "soon"}, b"", ['Connect-Timeout-Ms "soon" is not a number']),
    ({**PROTO, "X-Scope-OrgID": "../etc"}, b"", ['invalid tenant "../etc"']),
])
def test_malformed_requests_are_invalid_argument_and_reach_no_handler(served, headers, body, words):
    client, r = served
    _error(client.post("/push.v1.PusherService/Push", content=body, headers=headers), 400, "invalid_argument",
           *words)
    assert r.calls == []


def test_a_bad_selector_is_invalid_argument_with_the_engines_message(served):
    client, _ = served
    response = client.post("/querier.v1.QuerierService/LabelNames", headers=JSON,
                           json={"matchers": ['{job="x"', "{}"]})
    _error(response, 400, "invalid_argument", "invalid selector")


def test_oversize_bodies_are_resource_exhausted_before_and_after_decompression(served):
    client, r = served
    raw = _push({"service_name": "big"}, b"\0" * (LIMIT + 1)).SerializeToString()
    _error(client.post("/push.v1.PusherService/Push", content=raw, headers=PROTO), 429, "resource_exhausted",
           f"request body is larger than {LIMIT} bytes")
    bomb = gzip.compress(raw)
    assert len(bomb) < LIMIT
    _error(client.post("/push.v1.PusherService/Push", content=bomb, headers={**PROTO, "Content-Encoding": "gzip"}),
           429, "resource_exhausted", f"larger than {LIMIT} bytes once decompressed")
    assert r.calls == []


def test_unsupported_content_type_is_415_and_names_the_accepted_ones(served):
    client, r = served
    response = client.post("/push.v1.PusherService/Push", content=b"x", headers={"Content-Type": "text/plain"})
    _error(response, 415, "invalid_argument", 'content type "text/plain" is not supported', "application/proto")
    assert response.headers["accept-post"] == "application/proto, application/json"
    assert r.calls == []


def test_unsupported_content_encoding_is_unimplemented(served):
    client, r = served
    response = client.post("/push.v1.PusherService/Push", content=b"x", headers={**PROTO, "Content-Encoding": "br"})
    _error(response, 501, "unimplemented", 'content encoding "br" is not supported')
    assert r.calls == []


def test_the_clients_deadline_is_deadline_exceeded(served):
    client, _ = served
    response = client.post("/querier.v1.QuerierService/Series", content=b"",
                           headers={**PROTO, "Connect-Timeout-Ms": "50"})
    _error(response, 504, "deadline_exceeded", "deadline of 50 ms passed")


def test_a_bug_is_internal_500(served):
    client, _ = served
    response = client.post("/querier.v1.QuerierService/ProfileTypes", content=b"", headers=PROTO)
    _error(response, 500, "internal", "RuntimeError: a bug")


def test_a_table_naming_methods_the_service_lacks_is_refused():
    with pytest.raises(ValueError, match=r"querier.v1.QuerierService has no methods \['Push'\]"):
        connect.Service(QUERIER, Action.READ, {"Push": Recorder().push})


def test_a_service_that_reads_several_tenants_hands_them_all_and_a_write_names_one():
    async def tenants(request, call: connect.Call):
        return types_pb2.LabelNamesResponse(names=list(call.tenants))

    several = connect.Service(QUERIER, Action.READ, {"LabelNames": tenants}, reads_several=True)
    pusher = connect.Service(PUSHER, Action.WRITE, {"Push": Recorder().push})
    client = Client(build_app([connect.router(several), connect.router(pusher)], ready=lambda: []))

    def call(path: str, tenant: str) -> httpx.Response:
        return client.post(path, json={}, headers={"X-Scope-OrgID": tenant})

    assert call("/querier.v1.QuerierService/LabelNames", "b|a|b").json() == {"names": ["a", "b"]}
    assert call("/querier.v1.QuerierService/LabelNames", "").json() == {"names": ["anonymous"]}
    _error(call("/querier.v1.QuerierService/LabelNames", "a|b c"), 400, "invalid_argument", 'invalid tenant "b c"')
    _error(call("/push.v1.PusherService/Push", "a|b"), 400, "invalid_argument",
           'X-Scope-OrgID "a|b" names several tenants: a write names one tenant')


def test_a_service_that_reads_one_tenant_refuses_several(served):
    client, r = served
    response = client.post("/querier.v1.QuerierService/LabelNames", json={"matchers": ["{}"]},
                           headers={"X-Scope-OrgID": "a|b"})
    _error(response, 400, "invalid_argument", "names several tenants: this API reads one tenant at a time")
    assert r.calls == []
