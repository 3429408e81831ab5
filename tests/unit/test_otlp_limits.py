"""OTLP exports over a limit are refused before they are converted (`flamewatch.ingester.otlp_limits`):
the HTTP receiver in process, with a pusher that records what reaches it."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from dataclasses import dataclass, field

import httpx
import pytest
from fastapi import FastAPI
from google.protobuf import json_format
from infra.otlp import ExportBuilder, many_samples

from flamewatch.ingester.config import IngesterConfig, IngestLimits
from flamewatch.ingester.errors import OtlpInvalidProfile
from flamewatch.ingester.otlp import convert
from flamewatch.ingester.otlp_receiver import HTTP_PATH, http_router
from flamewatch.pprof import LimitExceeded, decode

WHERE = "resource_profiles[0].scope_profiles[0].profiles[0]"


@dataclass
class RecordingPusher:
    config: IngesterConfig
    pushed: list = field(default_factory=list)

    async def push(self, tenant: str, series: list, name_hint: str | None = None) -> tuple[int, int]:
        self.pushed.append(series)
        return 1, 1


def post(pusher: RecordingPusher, body: bytes, as_json: bool = False) -> httpx.Response:
    async def request() -> httpx.Response:
        app = FastAPI()
        app.include_router(http_router(pusher))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ingester") as client:
            return await client.post(HTTP_PATH, content=body, headers=headers)

    as_json = as_json or body.startswith(b"{")
    headers = {"Content-Type": "application/json" if as_json else "application/x-protobuf"}
    if body.startswith(b"\x1f\x8b"):
        headers["Content-Encoding"] = "gzip"

    return asyncio.run(request())


def test_an_export_of_600k_samples_is_refused_with_413_before_it_is_converted():
    pusher = RecordingPusher(IngesterConfig())
    body = many_samples(600_000)
    assert len(body) < 10_000  # the reproduction: a few KB on the wire
    started = time.process_time()
    r = post(pusher, body)
    cpu_s = time.process_time() - started
    assert r.status_code == 413, r.content
    assert f"{WHERE}: profile has 600000 samples, the limit is 500000 (--limits.max-samples)".encode() in r.content
    assert pusher.pushed == []
    # Reading the samples one by one and converting them took 3.5 s here (18 s on a loaded server);
    # parsing the message and counting its samples takes a few hundred ms at most.
    assert cpu_s < 1.0, f"refusing took {cpu_s:.2f} s of CPU"


def deep_export(depth: int) -> ExportBuilder:
    b = ExportBuilder()
    b.profile({"service.name": "deep"}, time_ns=1_700_000_000_000_000_000).samples.add(
        stack_index=b.stack(*(f"f{i}" for i in range(depth))), values=[1])
    b.profile({"service.name": "shallow"}, time_ns=1_700_000_000_000_000_000).samples.add(
        stack_index=b.stack("work", "main"), values=[2])
    return b


def test_a_stack_deeper_than_the_limit_refuses_its_profile_alone():
    converted, rejected = convert(deep_export(20).request, IngestLimits(max_stack_depth=10))
    assert [c.labels["service_name"] for c in converted] == ["shallow"]
    [refused] = rejected
    assert isinstance(refused.error, LimitExceeded)
    assert refused.reason == (f"{WHERE}: samples[0] has a stack 20 frames deep, the limit is 10 "
                              "(--limits.max-stack-depth)")


def test_the_profile_count_is_limited_per_request():
    with pytest.raises(LimitExceeded, match=r"^the export holds 2 resource_profiles, the limit is 1 per request "
                                            r"\(--limits.max-profiles-per-push\)$"):
        convert(deep_export(3).request, IngestLimits(max_profiles_per_push=1))


@pytest.mark.parametrize("limit", [32, 42, 44])
def test_the_entries_conversion_reads_are_limited_per_request(limit: int):
    """Dictionary entries and samples (31 + 2 here), then stack frames and lines (+ 5 + 5), then sample values
    (+ 2): each count is checked before the next walk."""
    b = deep_export(3)
    assert len(convert(b.request, IngestLimits(max_otlp_entries=45))[0]) == 2
    with pytest.raises(LimitExceeded, match=rf"^the export holds more than {limit} entries .* the limit "
                                            r"\(--limits.max-otlp-entries\); send smaller exports more often$"):
        convert(b.request, IngestLimits(max_otlp_entries=limit))


def test_every_profile_over_the_limit_makes_the_request_413_as_json():
    pusher = RecordingPusher(IngesterConfig(limits=IngestLimits(max_stack_depth=1)))
    r = post(pusher, json_format.MessageToJson(deep_export(3).request).encode())
    assert r.status_code == 413, r.text
    assert r.json()["code"] == 8  # RESOURCE_EXHAUSTED
    assert r.json()["message"].startswith("2 profiles refused: " + WHERE + ": samples[0] has a stack 3 frames deep")
    assert pusher.pushed == []


def test_a_sample_whose_values_add_up_past_int64_is_refused_not_wrapped():
    b = ExportBuilder()
    profile = b.profile({"service.name": "huge"}, time_ns=1_700_000_000_000_000_000)
    profile.samples.add(stack_index=b.stack("work", "main"), values=[1 << 62, 1 << 62])
    profile.samples.add(stack_index=b.stack("work", "main"), values=[(1 << 62) - 1, 1 << 62])
    [], [refused] = convert(b.request)
    assert isinstance(refused.error, OtlpInvalidProfile)
    assert refused.reason == f"{WHERE}: samples[0].values add up past the int64 range (±9223372036854775808)"
    del profile.samples[0]
    [converted], [] = convert(b.request)
    assert decode(converted.pprof).samples.values.tolist() == [[(1 << 63) - 1]]


def test_a_json_export_is_counted_before_protobufs_json_parser_runs(monkeypatch):
    """600k samples as OTLP/JSON: 63 KB gzipped, and 6 s of CPU in the JSON parser before the limit was checked."""
    parsed = []
    parse_dict = json_format.ParseDict

    def recording_parse_dict(document, message, **kwargs):
        parsed.append(type(message).__name__)
        return parse_dict(document, message, **kwargs)

    monkeypatch.setattr(json_format, "ParseDict", recording_parse_dict)
    profile = {"samples": [{"stackIndex": 1, "values": ["1"]}] * 600_000}
    body = json.dumps({"resourceProfiles": [{"scopeProfiles": [{"profiles": [profile]}]}],
                       "dictionary": {"stringTable": [""]}}).encode()
    pusher = RecordingPusher(IngesterConfig())
    r = post(pusher, gzip.compress(body), as_json=True)
    assert r.status_code == 413, r.text
    assert r.json() == {"code": 8, "message": f"{WHERE}: profile has 600000 samples, the limit is 500000 "
                                              "(--limits.max-samples)"}
    # Refused on the decoded JSON's counts: protobuf's JSON parser (6 s of CPU here) never ran
    assert parsed == []
    assert pusher.pushed == []
    del profile["samples"][1:]
    r = post(pusher, gzip.compress(json.dumps({"resourceProfiles": [{"scopeProfiles": [{"profiles": [profile]}]}],
                                                "dictionary": {"stringTable": [""]}}).encode()), as_json=True)
    assert parsed == ["ExportProfilesServiceRequest"]  # a request within the limits is parsed


@pytest.mark.parametrize(("limits", "message"), [
    (IngestLimits(max_profiles_per_push=1), "the export holds 2 resource_profiles, the limit is 1 per request "
                                            "(--limits.max-profiles-per-push)"),
    (IngestLimits(max_otlp_entries=44), "the export holds more than 44 entries"),
])
def test_json_exports_meet_the_same_count_limits(limits: IngestLimits, message: str):
    pusher = RecordingPusher(IngesterConfig(limits=limits))
    r = post(pusher, json_format.MessageToJson(deep_export(3).request).encode())
    assert r.status_code == 413, r.text
    assert r.json()["message"].startswith(message)
    assert post(RecordingPusher(IngesterConfig(limits=IngestLimits(max_otlp_entries=45))),
                json_format.MessageToJson(deep_export(3).request).encode()).status_code == 200
