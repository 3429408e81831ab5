"""OTLP profiles converted to pprof (`flamewatch.ingester.otlp`) and OTLP bodies read
(`flamewatch.ingester.otlp_receiver`): labels, stacks, values, sample labels, and every refusal's message."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from google.protobuf import json_format
from infra.otlp import ExportBuilder

from flamewatch.ingester.errors import OtlpDecodeError, OtlpInvalidProfile
from flamewatch.ingester.otlp import convert
from flamewatch.ingester.otlp_receiver import parse_json, parse_protobuf
from flamewatch.pprof import Profile, decode

TIME_NS = 1_700_000_000_000_000_000
TRACE, SPAN = bytes(range(16)), bytes(range(8, 16))
WHERE = "resource_profiles[0].scope_profiles[0].profiles[0]"


def example() -> ExportBuilder:
    b = ExportBuilder()
    profile = b.profile({"service.name": "checkout", "k8s.pod.name": "checkout-1"}, {"profiler.kind": "ebpf"},
                        TIME_NS)
    work, idle = b.stack("work", "serve", "main"), b.stack("idle", "main")
    b.stack("unused", "main")
    thread, tid = b.attribute("thread.name", "worker-1"), b.attribute("thread.id", 42, "id")
    profile.samples.add(stack_index=work, values=[30], attribute_indices=[thread, tid], link_index=b.link(TRACE, SPAN))
    profile.samples.add(stack_index=idle, timestamps_unix_nano=[TIME_NS + 5, TIME_NS + 9])
    profile.samples.add(stack_index=work, values=[5, 5], timestamps_unix_nano=[TIME_NS + 1, TIME_NS + 2])
    profile.attribute_indices.append(b.attribute("process.executable.name", "app"))
    return b


def stacks(p: Profile) -> list[tuple[list[str], int]]:
    """Each sample's function names (leaf first) and value."""
    function_name = {int(i): p.string(n) for i, n in zip(p.functions.id, p.functions.name, strict=True)}
    location_names = {int(i): [function_name[int(f)] for f in p.locations.line_function_id[a:b]]
                      for i, a, b in zip(p.locations.id, p.locations.line_offsets[:-1], p.locations.line_offsets[1:],
                                         strict=True)}
    return [([n for loc in p.samples.locations[a:b] for n in location_names[int(loc)]], int(v))
            for a, b, v in zip(p.samples.offsets[:-1], p.samples.offsets[1:], p.samples.values[:, 0], strict=True)]


def sample_labels(p: Profile) -> list[tuple[int, str, str, int, str]]:
    s = p.samples
    return [(int(i), p.string(k), p.string(v), int(n), p.string(u))
            for i, k, v, n, u in zip(s.label_sample, s.label_key, s.label_str, s.label_num, s.label_num_unit,
                                     strict=True)]


def test_a_profile_becomes_a_pprof_with_its_stacks_values_and_series_labels():
    [converted], refused = convert(example().request)
    assert refused == []
    assert converted.where == WHERE
    assert converted.labels == {"service_name": "checkout", "k8s_pod_name": "checkout-1", "profiler_kind": "ebpf",
                                "process_executable_name": "app"}
    p = decode(converted.pprof)
    assert stacks(p) == [(["work", "serve", "main"], 30), (["idle", "main"], 2), (["work", "serve", "main"], 10)]
    assert p.sample_type_names() == [("samples", "count")]
    assert (p.string(p.period_type[0]), p.string(p.period_type[1]), p.period) == ("cpu", "nanoseconds", 10**7)
    assert (p.time_nanos, p.duration_nanos) == (TIME_NS, 10**9)
    assert [p.string(f) for f in p.mappings.filename] == ["/bin/app"]
    assert "unused" not in set(p.strings)  # only the part of the dictionary the samples use


def test_sample_attributes_and_links_become_sample_labels():
    p = decode(convert(example().request)[0][0].pprof)
    assert sample_labels(p) == [(0, "thread_name", "worker-1", 0, ""), (0, "thread_id", "", 42, "id"),
                                (0, "trace_id", TRACE.hex(), 0, ""), (0, "span_id", SPAN.hex(), 0, "")]


def test_a_profile_without_a_time_takes_its_first_sample_timestamp():
    b = example()
    b.request.resource_profiles[0].scope_profiles[0].profiles[0].time_unix_nano = 0
    assert decode(convert(b.request)[0][0].pprof).time_nanos == TIME_NS + 1


@pytest.mark.parametrize("time_field", ["time_unix_nano", "timestamps_unix_nano"])
def test_a_time_after_int64_nanoseconds_refuses_the_profile(time_field: str):
    b = example()
    profile = b.request.resource_profiles[0].scope_profiles[0].profiles[0]
    if time_field == "time_unix_nano":
        profile.time_unix_nano = 2**64 - 1
    else:  # fixed64 timestamps past 2**63 used to overflow an int64 column (a 500)
        profile.time_unix_nano = 0
        profile.samples[1].timestamps_unix_nano[:] = [2**64 - 1, 2**64 - 1]
        profile.samples[2].timestamps_unix_nano[:] = []
    assert [r.reason for r in convert(b.request)[1]] == [
        f"{WHERE}: time 18446744073709551615 ns is after the year 2262, the last time we store"]


def _break(what: str, b: ExportBuilder) -> None:
    d, profile = b.request.dictionary, b.request.resource_profiles[0].scope_profiles[0].profiles[0]
    match what:
        case "stack":
            profile.samples[0].stack_index = 50
        case "location":
            d.stack_table[1].location_indices[0] = 60
        case "function":
            d.location_table[1].lines[0].function_index = 70
        case "mapping":
            d.location_table[1].mapping_index = 9
        case "attribute":
            profile.samples[0].attribute_indices[0] = 80
        case "link":
            profile.samples[0].link_index = 5
        case "string":
            d.function_table[1].name_strindex = 99
        case "string at our strings":  # past the request's strings, at those the conversion appends
            d.function_table[1].name_strindex = 17
        case "sample type":
            profile.sample_type.unit_strindex = -1
        case "mapping file name":  # negative: int32 in OTLP, a uint64 column must not take it
            d.mapping_table[1].filename_strindex = -2


@pytest.mark.parametrize(("what", "message"), [
    ("stack", "samples[].stack_index 50 is outside the dictionary's stack_table (4 entries)"),
    ("location", "stack_table[].location_indices 60 is outside the dictionary's location_table (8 entries)"),
    ("function", "location_table[].lines[].function_index 70 is outside the dictionary's function_table (8 entries)"),
    ("mapping", "location_table[].mapping_index 9 is outside the dictionary's mapping_table (2 entries)"),
    ("attribute", "samples[].attribute_indices 80 is outside the dictionary's attribute_table (4 entries)"),
    ("link", "samples[].link_index 5 is outside the dictionary's link_table (2 entries)"),
    ("string", "function_table[].name_strindex 99 is outside the dictionary's string_table (16 entries)"),
    ("string at our strings", "function_table[].name_strindex 17 is outside the dictionary's string_table "
                              "(16 entries)"),
    ("sample type", "sample_type -1 is outside the dictionary's string_table (16 entries)"),
    ("mapping file name", "mapping_table[].filename_strindex -2 is outside the dictionary's string_table "
                          "(16 entries)"),
])
def test_an_index_outside_the_dictionary_refuses_the_profile_and_names_it(what: str, message: str):
    b = example()
    _break(what, b)
    assert [(r.where, r.reason) for r in convert(b.request)[1]] == [(WHERE, f"{WHERE}: {message}")]


def test_a_resource_attribute_outside_the_string_table_refuses_its_profile():
    b = example()
    b.request.resource_profiles[0].resource.attributes.add(key_strindex=20).value.string_value_strindex = 3
    b.request.resource_profiles[0].scope_profiles[0].profiles[0].attribute_indices.append(9)
    assert [r.reason for r in convert(b.request)[1]] == [
        f"{WHERE}: attribute key_strindex 20 is outside the dictionary's string_table (16 strings)"]
    del b.request.resource_profiles[0].resource.attributes[-1]
    assert [r.reason for r in convert(b.request)[1]] == [
        f"{WHERE}: attribute_indices 9 is outside the dictionary's attribute_table (4 entries)"]


def test_a_bad_profile_is_refused_alone():
    b = example()
    good = b.profile({"service.name": "other"})
    good.samples.add(stack_index=b.stack("other", "main"), values=[4])
    _break("stack", b)
    converted, refused = convert(b.request)
    assert [c.where for c in converted] == ["resource_profiles[1].scope_profiles[0].profiles[0]"]
    assert [r.where for r in refused] == [WHERE]
    assert stacks(decode(converted[0].pprof)) == [(["other", "main"], 4)]


def test_json_takes_hex_ids_as_otlp_writes_them_and_base64_as_protobuf_json_does():
    request = example().request
    as_dict = json_format.MessageToDict(request)
    assert as_dict["dictionary"]["linkTable"][1]["spanId"] == base64.b64encode(SPAN).decode()
    assert parse_json(json.dumps(as_dict).encode()) == request
    as_dict["dictionary"]["linkTable"][1].update(traceId=TRACE.hex(), spanId=SPAN.hex())
    as_dict["somethingNew"] = {"unknown": True}  # OTLP receivers ignore unknown fields
    assert parse_json(json.dumps(as_dict).encode()) == request


@pytest.mark.parametrize(("body", "message"), [
    (b"[1, 2]", "not an OTLP ExportProfilesServiceRequest: the JSON body is not an object"),
    (b'{"resourceProfiles": [[], []]}',
     "not an OTLP ExportProfilesServiceRequest: resourceProfiles must be an array of objects"),
    (b'{"resource_profiles": null}',
     "not an OTLP ExportProfilesServiceRequest: resourceProfiles must be an array of objects"),
    (b'{"dictionary": []}', "not an OTLP ExportProfilesServiceRequest: dictionary must be an object"),
    (b'{"resourceProfiles": ', "not an OTLP ExportProfilesServiceRequest: invalid JSON (Expecting value: "
                               "line 1 column 22 (char 21))"),
    (b'{"dictionary": {"stringTable": 5}}', "not an OTLP ExportProfilesServiceRequest: invalid JSON (Failed to "
                                            "parse dictionary field: Failed to parse stringTable field: repeated "
                                            "field stringTable must be in [] which is 5 at "
                                            "ExportProfilesServiceRequest.dictionary..)"),
    (b"\xff", "not an OTLP ExportProfilesServiceRequest: invalid JSON ('utf-8' codec can't decode byte 0xff "
              "in position 0: invalid start byte)"),
])
def test_bad_json_is_named(body: bytes, message: str):
    with pytest.raises(OtlpDecodeError) as info:
        parse_json(body)
    assert str(info.value) == message


@pytest.mark.parametrize(("field", "message"), [
    ("unit_strindex", "attribute_table unit_strindex 40 is outside the dictionary's string_table (16 strings)"),
    ("key_strindex", "attribute_table key_strindex 40 is outside the dictionary's string_table (16 strings)"),
])
def test_an_attribute_outside_the_string_table_refuses_the_request(field: str, message: str):
    b = example()
    setattr(b.request.dictionary.attribute_table[1], field, 40)
    with pytest.raises(OtlpInvalidProfile) as info:
        convert(b.request)
    assert str(info.value) == message


def test_bad_protobuf_is_named():
    with pytest.raises(OtlpDecodeError, match="^not an OTLP ExportProfilesServiceRequest: invalid protobuf "):
        parse_protobuf(b"\x0a\x05ab")


FUZZ_INPUTS = Path(__file__).parent / "testdata" / "fuzz"  # inputs the fuzz campaign found (fuzz/README.md)


def test_a_duration_past_int64_refuses_its_profile_alone():
    """Found by fuzzing: OTLP's duration_nano is uint64, and one past int64 failed the whole request with
    protobuf's "Value out of range" while the pprof was written."""
    request = parse_protobuf((FUZZ_INPUTS / "otlp-duration-past-int64.pb").read_bytes())
    converted, refused = convert(request)
    assert [r.reason for r in refused] == [
        f"{WHERE}: duration_nano 15912994314852181580 is longer than int64 nanoseconds (292 years)"]
    b = example()
    b.request.resource_profiles[0].scope_profiles[0].profiles[0].duration_nano = (1 << 63) - 1
    [ok], [] = convert(b.request)
    assert decode(ok.pprof).duration_nanos == (1 << 63) - 1
