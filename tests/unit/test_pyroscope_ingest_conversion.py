"""The conversion of the Pyroscope SDKs' /ingest requests: `name=`, sample_type_config, the body forms."""

from __future__ import annotations

import json

import pytest
from infra.stringtable import interner

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.ingester.pyroscope_ingest import (
    AppName,
    SampleTypeConfig,
    convert,
    name_hint,
    parse_app_name,
    parse_form,
    parse_sample_rate,
    parse_sample_type_config,
    parse_span,
    series_labels,
)
from flamewatch.rpc.errors import UnprocessableError, UnsupportedFormatError, status_of

# The name pyroscope-go v1.4.3 sends (its tags, the session id and the runtime and scope labels).
GO_SDK_NAME = ("myapp{__session_id__=0123456789abcdef,env=prod,otel.scope.name=com.grafana.pyroscope/go,"
               "otel.scope.version=v1.4.3,process.runtime.name=go,process.runtime.version=go1.26.8}")


@pytest.mark.parametrize(("text", "expected"), [
    ("app", AppName("app", None, {})),
    ("app{}", AppName("app", None, {})),
    ("app.cpu{}", AppName("app", "cpu", {})),
    ("backend.purchases.inuse_space{env=prod}", AppName("backend.purchases", "inuse_space", {"env": "prod"})),
    ("backend.purchases{env=prod}", AppName("backend.purchases", None, {"env": "prod"})),  # not a type suffix
    (".cpu{}", AppName(".cpu", None, {})),  # no application before the suffix: the whole is the name
    (" my-app/x.mutex_count { a = 1 , b=2,}", AppName("my-app/x", "mutex_count", {"a": "1", "b": "2"})),
    ("app{a=,b=x}", AppName("app", None, {"b": "x"})),  # an empty tag is no tag
    ("app{a=1,a=2}", AppName("app", None, {"a": "2"})),
    ("app{url=http://x/y?z}", AppName("app", None, {"url": "http://x/y?z"})),
])
def test_app_names_parse(text, expected):
    assert parse_app_name(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("", 'name="": the application name is empty'),
    ("{env=x}", "the application name is empty"),
    ("my app{}", 'application name "my app" may hold only letters, digits and _ . / -'),
    ("app:1{}", 'application name "app:1"'),
    ("app{env=x", 'name="app{env=x": the tags have no closing "}"'),
    ("app{env=x}junk", 'unexpected "junk" after the tags'),
    ("app{env}", 'bad tag "env": expected key=value'),
    ("app{bad-key=1}", 'bad tag "bad-key=1"'),
    ("app{=1}", 'bad tag "=1"'),
])
def test_bad_app_names_are_refused_with_the_reason(text, message):
    with pytest.raises(ValueError) as info:
        parse_app_name(text)
    assert message in str(info.value)
    assert status_of(info.value).http_status == 400


def test_the_go_sdk_name_becomes_prometheus_labels():
    labels = series_labels(parse_app_name(GO_SDK_NAME), "gospy")
    assert labels == {
        "service_name": "myapp", "__session_id__": "0123456789abcdef", "env": "prod",
        "otel_scope_name": "com.grafana.pyroscope/go", "otel_scope_version": "v1.4.3",
        "process_runtime_name": "go", "process_runtime_version": "go1.26.8", "pyroscope_spy": "gospy",
    }


def test_a_service_name_tag_wins_and_the_app_is_kept_as_app_name():
    assert series_labels(parse_app_name("app.cpu{service_name=svc,__name__=x,__other__=y}"), None) == {
        "service_name": "svc", "app_name": "app"}


def test_a_tag_that_starts_with_a_digit_gets_a_leading_underscore_as_on_the_other_push_paths():
    """It was kept as it was, and then refused as an invalid label name."""
    assert series_labels(parse_app_name("app{2xx=1,x.2=2}"), None) == {"_2xx": "1", "x_2": "2", "service_name": "app"}


def test_a_tag_that_becomes_an_internal_name_is_dropped():
    assert series_labels(parse_app_name("app{_.x=1,__.y=2}"), None) == {"service_name": "app"}


def test_tags_that_meet_after_renaming_are_refused():
    with pytest.raises(ValueError, match='both become the label "a_b"'):
        series_labels(parse_app_name("app{a.b=1,a_b=2}"), None)


@pytest.mark.parametrize(("name", "config", "hint"), [
    ("app.cpu", {}, "process_cpu"),
    ("app.itimer", {}, "process_cpu"),
    ("app.wall", {}, "wall"),
    ("app.alloc_space", {}, "memory"),
    ("app.goroutines", {}, "goroutine"),
    ("app.mutex_duration", {}, "mutex"),
    ("app.block_count", {}, "block"),
    ("app.lock_count", {}, "block"),
    ("app", {}, None),
    # pyroscope-go's mutex and block uploads differ only in the display names of their config
    ("app", {"contentions": SampleTypeConfig(display_name="mutex_count")}, "mutex"),
    ("app", {"delay": SampleTypeConfig(display_name="block_duration")}, "block"),
    ("app", {"alloc_objects": SampleTypeConfig(units="objects")}, "memory"),
    ("app", {"goroutine": SampleTypeConfig(display_name="goroutines")}, "goroutine"),
    ("app", {"samples": SampleTypeConfig()}, None),
    ("app.cpu", {"contentions": SampleTypeConfig(display_name="mutex_count")}, "process_cpu"),  # suffix first
])
def test_the_name_hint_comes_from_the_suffix_or_the_sample_type_config(name, config, hint):
    assert name_hint(parse_app_name(name), config) == hint


def test_sample_type_config_as_pyroscope_go_sends_it():
    # pyroscope-go's heap upload, as its json.Marshal writes it
    raw = json.dumps({"alloc_objects": {"units": "objects"}, "alloc_space": {"units": "bytes"},
                      "inuse_space": {"units": "bytes", "aggregation": "average"},
                      "inuse_objects": {"units": "objects", "aggregation": "average"}}).encode()
    assert parse_sample_type_config(raw) == {
        "alloc_objects": SampleTypeConfig(units="objects"), "alloc_space": SampleTypeConfig(units="bytes"),
        "inuse_space": SampleTypeConfig(units="bytes", aggregation="average"),
        "inuse_objects": SampleTypeConfig(units="objects", aggregation="average")}


def test_sample_type_config_reads_every_known_key_and_ignores_new_ones():
    raw = (b'{"delay": {"units": "lock_nanoseconds", "aggregation": "sum", "display-name": "mutex_duration", '
           b'"sampled": true, "cumulative": false, "added-later": 1}}')
    assert parse_sample_type_config(raw) == {"delay": SampleTypeConfig(
        units="lock_nanoseconds", aggregation="sum", display_name="mutex_duration", sampled=True, cumulative=False)}
    assert parse_sample_type_config(None) == {}


@pytest.mark.parametrize(("raw", "message"), [
    (b"{", "sample_type_config: not JSON"),
    (b"\xff", "sample_type_config: not JSON"),
    (b"[]", "expected a JSON object of sample type -> settings"),
    (b'{"cpu": 1}', 'sample_type_config["cpu"]: expected an object'),
    (b'{"cpu": {"units": 5}}', 'sample_type_config["cpu"].units: expected a string'),
    (b'{"cpu": {"cumulative": "yes"}}', 'sample_type_config["cpu"].cumulative: expected a boolean'),
    (b'{"cpu": {"aggregation": "max"}}', '"max" is not "sum" or "average"'),
])
def test_bad_sample_type_config_is_refused_naming_the_entry(raw, message):
    with pytest.raises(ValueError) as info:
        parse_sample_type_config(raw)
    assert message in str(info.value)
    assert status_of(info.value).http_status == 400


@pytest.mark.parametrize(("start", "end", "span"), [
    ("1700000000", "1700000010", (1700000000 * 10**9, 1700000010 * 10**9)),  # seconds, as older SDKs send
    ("1700000000000000000", "1700000010000000000", (1700000000 * 10**9, 1700000010 * 10**9)),  # ns (pyroscope-go)
    ("1700000000000", "1700000010000", (1700000000 * 10**9, 1700000010 * 10**9)),  # ms
    # pyroscope-go's last upload can end (whole seconds) before it starts: no duration, not an error
    ("1700000000541739783", "1700000000000000000", (1700000000541739783, 1700000000541739783)),
    (None, "1700000010", None),
    ("1700000000", "", None),
])
def test_from_and_until(start, end, span):
    assert parse_span(start, end) == span


def test_bad_times_and_sample_rates_name_the_parameter():
    with pytest.raises(ValueError, match="^from: "):
        parse_span("yesterday", "now")
    with pytest.raises(ValueError, match="^until: "):
        parse_span("now", "later")
    for text in ("fast", "-1", "1.5", "１"):
        with pytest.raises(ValueError, match=f'sampleRate="{text}"'):
            parse_sample_rate(text)
    assert parse_sample_rate("100") == 100
    assert parse_sample_rate("0") is None  # pyroscope-go's mutex, block and goroutine uploads
    assert parse_sample_rate(None) is None


def _form(*parts: tuple[str, bytes], boundary: str = "b0undary") -> tuple[str, bytes]:
    body = b"preamble\r\n" + b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{name}.bin"\r\n\r\n'.encode()
        + data + b"\r\n" for name, data in parts)
    return f'multipart/form-data; boundary="{boundary}"', body + f"--{boundary}--\r\nepilogue".encode()


def test_multipart_fields_keep_their_bytes():
    binary = bytes(range(256)) + b"\r\n--b0undar\r\n" * 3  # line breaks and near-boundaries inside the content
    content_type, body = _form(("profile", binary), ("sample_type_config", b"{}"))
    assert parse_form(content_type, body) == {"profile": binary, "sample_type_config": b"{}"}


@pytest.mark.parametrize(("mangle", "message"), [
    (lambda b: b.replace(b"--b0undary", b"--other"), 'the boundary "b0undary" is not in the body'),
    (lambda b: b[: b.rindex(b"--b0undary--")], "no closing boundary"),
    (lambda b: b.replace(b'.bin"\r\n\r\n', b'.bin"\r\n'), "no blank line after its headers"),
    (lambda b: b.replace(b"Content-Disposition", b"X-Other"), "no Content-Disposition name"),
    (lambda b: b.replace(b'name="profile"', b'name="other"'), "no profile field"),
])
def test_malformed_multipart_is_unprocessable(mangle, message):
    content_type, body = _form(("profile", b"\x1f\x8b pprof"))
    with pytest.raises(UnprocessableError, match=message) as info:
        parse_form(content_type, mangle(body))
    assert status_of(info.value).http_status == 422


def test_the_format_decides_how_the_body_is_read():
    query = {"name": "app.cpu{}", "from": "1700000000", "until": "1700000010", "spyName": "gospy"}
    raw = convert({**query, "format": "pprof"}, "application/octet-stream", b"PPROF")
    assert (raw.labels, raw.profile, raw.name_hint, raw.span) == (
        {"service_name": "app", "pyroscope_spy": "gospy"}, b"PPROF", "process_cpu",
        (1700000000 * 10**9, 1700000010 * 10**9))
    content_type, body = _form(("profile", b"PPROF"),
                               ("sample_type_config", b'{"contentions": {"display-name": "mutex_count"}}'))
    form = convert({"name": "app{}"}, content_type, body)
    assert (form.profile, form.name_hint, form.span) == (b"PPROF", "mutex", None)


@pytest.mark.parametrize(("fmt", "content_type", "error", "status", "message"), [
    ("jfr", None, UnsupportedFormatError, 415, "Java Flight Recorder (format=jfr) profiles are not supported"),
    ("JFR", None, UnsupportedFormatError, 415, "Java Flight Recorder"),
    ("speedscope", None, UnsupportedFormatError, 415, "speedscope"),
    (None, "text/plain", UnsupportedFormatError, 415, "push pprof with format=pprof"),
    ("pdf", None, ValueError, 400, 'unknown format "pdf"'),
    ("pprof", "multipart/form-data", ValueError, 400, "multipart/form-data without a boundary parameter"),
])
def test_formats_we_do_not_read_are_refused(fmt, content_type, error, status, message):
    query = {"name": "app{}", **({"format": fmt} if fmt else {})}
    with pytest.raises(error) as info:
        convert(query, content_type, b"body")
    assert message in str(info.value)
    assert status_of(info.value).http_status == status


def test_prev_profile_is_refused_with_what_to_do():
    content_type, body = _form(("profile", b"PPROF"), ("prev_profile", b"OLD"))
    with pytest.raises(UnprocessableError, match="update the SDK"):
        convert({"name": "app{}"}, content_type, body)


def _cpu_pprof(time_nanos: int, duration_nanos: int) -> bytes:
    profile = pb.Profile(time_nanos=time_nanos, duration_nanos=duration_nanos, period=10_000_000)
    string = interner(profile)
    profile.string_table.append("")
    profile.sample_type.add(type=string("cpu"), unit=string("nanoseconds"))
    profile.period_type.type, profile.period_type.unit = string("cpu"), string("nanoseconds")
    profile.function.add(id=1, name=string("main.hot"))
    profile.location.add(id=1, line=[pb.Line(function_id=1)])
    profile.sample.add(location_id=[1], value=[10_000_000])
    return profile.SerializeToString()


@pytest.mark.parametrize(("time_nanos", "duration_nanos", "expected"), [
    (0, 0, (1700000000 * 10**9, 10 * 10**9)),  # no time of its own: from and until date it
    (1600000000 * 10**9, 5 * 10**9, (1600000000 * 10**9, 5 * 10**9)),  # its own time wins
])
def test_from_and_until_date_a_pprof_without_time(time_nanos, duration_nanos, expected):
    request = convert({"name": "app.cpu{}", "from": "1700000000", "until": "1700000010", "format": "pprof"},
                      None, _cpu_pprof(time_nanos, duration_nanos))
    prepared = prepare(request.labels, request.profile, IngestLimits(), 1700000600 * 10**9,  # the server clock
                       request.name_hint, request.span)
    [entry] = prepared.entries
    assert (entry.time_ns, entry.duration_ns) == expected
    assert entry.labels["__profile_type__"] == "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
