"""What the split services refuse, and how they fail when MinIO goes away.

Every refused push must name its problem (HTTP 400/413, gRPC INVALID_ARGUMENT/RESOURCE_EXHAUSTED) and
leave no rows and no objects behind, whether it comes in over HTTP or gRPC and whether the bad
profile travels alone or next to good ones. The querier names what is wrong with a request (HTTP
400/404, gRPC INVALID_ARGUMENT/NOT_FOUND). A push while MinIO is down fails with UNAVAILABLE / 503
within seconds, stores nothing, and the same push succeeds once MinIO is back.
"""

from __future__ import annotations

import gzip
import re
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
import psycopg
import pytest
from e2e import answers
from e2e.calls import (
    CPU,
    TIMEOUT_S,
    Window,
    grpc_error,
    ingest,
    metadata,
    raw_series,
    rest,
    settled,
    stored_state,
    tenant_header,
    unpacked_size,
)
from e2e.cluster import FLAMEWATCH, FLUSH_INTERVAL_S, Cluster
from e2e.pushes import GO_PROFILES, profile_time_ns, rewritten, with_stackless_sample
from infra import gotool
from infra.otlp import otlp_export_request
from psycopg.types.json import Jsonb

from flamewatch.api.flamewatch.v1 import ingest_pb2, query_pb2, types_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

HTTP = "e2e-http"


@dataclass(frozen=True)
class Seeded:
    type_ids: list[str]  # stored in tenant HTTP
    window: Window
    workdir: Path


@pytest.fixture(scope="module")
def seeded(cluster: Cluster, go_profiles: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """The Go CPU and heap profiles in tenant HTTP, so the querier has types to list and to merge."""
    for name in ("cpu", "heap"):
        go = GO_PROFILES[name]
        r = ingest(cluster, HTTP, {"service_name": "workload", "source": name, "__name__": go.name}, go_profiles[name])
        assert (r.status_code, r.json()["profiles"]) == (200, len(go.sample_types))
    return Seeded(sorted(GO_PROFILES["cpu"].type_ids() + GO_PROFILES["heap"].type_ids()),
                  Window.around(*(profile_time_ns(go_profiles[n]) for n in ("cpu", "heap"))),
                  tmp_path_factory.mktemp("errors"))


# ------------------------------------------------------------------------------------------ ingester


def truncated(p: dict[str, bytes]) -> bytes:
    return p["cpu"][: len(p["cpu"]) // 2]


def truncated_raw(p: dict[str, bytes]) -> bytes:
    """The uncompressed CPU profile cut off about half way, inside a length-delimited field (a cut
    between two fields would leave a shorter but well-formed message)."""
    raw = gzip.decompress(p["cpu"])
    pos = 0
    while pos < len(raw):
        tag, pos = read_varint(raw, pos)
        if tag & 7 == 2:
            length, pos = read_varint(raw, pos)
            if pos + length > len(raw) // 2 and length >= 2:
                return raw[: pos + length // 2]
            pos += length
        elif tag & 7 == 0:
            pos = read_varint(raw, pos)[1]
        else:
            raise AssertionError(f"unexpected wire type {tag & 7} in a Go profile")
    raise AssertionError("no length-delimited field in the second half of the profile")


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while data[pos] & 0x80:
        value |= (data[pos] & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
    return value | data[pos] << shift, pos + 1


NOT_PPROF = "not a pprof profile: the data is neither gzip-compressed nor a valid protobuf message"
LABEL_RULE = "[a-zA-Z_][a-zA-Z0-9_]*"
MANY_LABELS = {f"l{i:02d}": "v" for i in range(40)}
INVALID = "INVALID_ARGUMENT"
NAME_RULE = ('invalid profile name "{}": use only letters, digits, "_", "." and "-" (for example process_cpu '
             "or memory)")
BAD_PUSHES = [  # case (also the gRPC sample id), profile, labels, gRPC code, message
    ("truncated-gzip", truncated, {}, INVALID, "invalid gzip data: the compressed stream is truncated"),
    ("truncated-protobuf", truncated_raw, {}, INVALID, NOT_PPROF),
    ("garbage", lambda p: b"this is not a profile, just text", {}, INVALID, NOT_PPROF),
    # gzip of something else: the message is only checked up to what is true of it (it says "neither
    # gzip-compressed nor ...", which is wrong for gzip data)
    ("gzipped-garbage", lambda p: gzip.compress(b"\xff" * 100), {}, INVALID, "not a pprof profile: ..."),
    ("otlp-profiles", lambda p: otlp_export_request(), {}, INVALID,
     "not a pprof profile: a valid protobuf message, but without the string table every pprof profile has "
     "(OTLP profiles and other protobuf messages are not pprof)"),
    ("too-many-labels", lambda p: p["cpu"], MANY_LABELS, INVALID, "series has 43 labels, the limit is 32"),
    ("label-value-too-long", lambda p: p["cpu"], {"team": "x" * 3000}, INVALID,
     'label "team": value is 3000 bytes long, the limit is 2048'),
    ("bad-label-name", lambda p: p["cpu"], {"bad-name": "x"}, INVALID,
     f'invalid label name "bad-name": must match {LABEL_RULE}'),
    ("empty-label-value", lambda p: p["cpu"], {"team": ""}, INVALID, 'label "team" has an empty value'),
    # profile names follow the rule profile type ids are parsed with, so a stored name always lists
    ("bad-profile-name", lambda p: p["cpu"], {"__name__": "bad name!"}, INVALID, NAME_RULE.format("bad name!")),
    ("name-with-colon", lambda p: p["cpu"], {"__name__": "my:type"}, INVALID, NAME_RULE.format("my:type")),
    ("name-against-content", lambda p: p["heap"], {"__name__": "process_cpu"}, INVALID,
     'profile name "process_cpu" contradicts the profile: its period type "space" makes it memory; leave the '
     "name out to have it taken from the profile"),
]


def matches(message: str, expected: str) -> bool:
    """Equal, or for an expectation ending in "..." starting with the rest."""
    return message.startswith(expected[:-3]) if expected.endswith("...") else message == expected


@pytest.mark.parametrize(("case", "make", "labels", "code", "message"), [pytest.param(*c, id=c[0]) for c in BAD_PUSHES])
def test_bad_push_is_refused_and_leaves_nothing(cluster: Cluster, go_profiles, case, make, labels, code, message):
    body = make(go_profiles)
    before = stored_state(cluster)
    r = ingest(cluster, "e2e-bad", {"__name__": "process_cpu", **labels}, body)
    assert (r.status_code, r.json().keys()) == (400, {"error"}), r.text
    assert matches(r.json()["error"], message), r.text
    request = ingest_pb2.PushRequest(series=[raw_series({"__name__": "process_cpu", **labels}, (case, body))])
    error = grpc_error(cluster.ingest.Push, request, "e2e-bad")
    assert error.code() == getattr(grpc.StatusCode, code), error.details()
    assert matches(error.details(), f"{case}: {message}"), error.details()
    assert settled(cluster) == before


def test_upload_of_a_refused_file_exits_non_zero_with_the_servers_message(cluster: Cluster, tmp_path: Path):
    bad = tmp_path / "garbage.pb.gz"
    bad.write_bytes(b"not a profile at all")
    before = stored_state(cluster)
    result = subprocess.run([str(FLAMEWATCH), "upload", str(bad), "--url", cluster.ingester_url,
                             "--tenant", "e2e-bad"], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"flamewatch upload: {bad}: refused (400): not a pprof profile: the data is neither "
                             "gzip-compressed nor a valid protobuf message\n")
    assert settled(cluster) == before


def test_upload_with_a_bad_name_is_refused_and_leaves_nothing(cluster: Cluster, go_profile_files):
    before = stored_state(cluster)
    result = subprocess.run([str(FLAMEWATCH), "upload", str(go_profile_files["cpu"]), "--url", cluster.ingester_url,
                             "--tenant", "e2e-bad", "--name", "bad name!"], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (1, "")
    refused = NAME_RULE.format("bad name!")
    assert result.stderr == f"flamewatch upload: {go_profile_files['cpu']}: refused (400): {refused}\n"
    assert settled(cluster) == before


def test_cli_and_http_name_a_file_from_its_content(cluster: Cluster, go_profiles, tmp_path: Path):
    """An allocation profile saved under a name that says "cpu" is memory through the CLI and through
    POST /ingest alike; a mutex profile saved as block.pb.gz is still mutex."""
    misnamed = {"allocs": tmp_path / "cpu-allocs.pb.gz", "mutex": tmp_path / "block.pb.gz"}
    for name, path in misnamed.items():
        path.write_bytes(go_profiles[name])
    result = subprocess.run([str(FLAMEWATCH), "upload", *map(str, misnamed.values()), "--url", cluster.ingester_url,
                             "--tenant", "e2e-naming-cli", "--label", "service_name=naming"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for name in misnamed:
        assert ingest(cluster, "e2e-naming-http", {"service_name": "naming"}, go_profiles[name]).status_code == 200
    window = Window.around(*(profile_time_ns(go_profiles[n]) for n in misnamed))
    names = {tenant: {t["name"] for t in rest(cluster, "/profile_types", tenant, window.rest())["data"]}
             for tenant in ("e2e-naming-cli", "e2e-naming-http")}
    assert names == {"e2e-naming-cli": {"memory", "mutex"}, "e2e-naming-http": {"memory", "mutex"}}


def test_a_bad_profile_type_stored_earlier_does_not_break_listing(cluster: Cluster, seeded: Seeded):
    """Rows written before names were checked at ingest are skipped when types are listed."""
    bad_type = "my:type:samples:count:cpu:nanoseconds"
    with psycopg.connect(cluster.storage.dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO series (tenant, fingerprint, profile_type, labels, first_seen, last_seen) "
                     "VALUES (%s, 1, %s, %s, %s, %s)",
                     [HTTP, bad_type, Jsonb({"__profile_type__": bad_type}), seeded.window.start_ns,
                      seeded.window.end_ns])
    try:
        for _ in range(2):  # logged once, not on every listing
            listed = rest(cluster, "/profile_types", HTTP, seeded.window.rest())
            assert sorted(t["id"] for t in listed["data"]) == seeded.type_ids
        grpc_listed = cluster.query.ProfileTypes(query_pb2.ProfileTypesRequest(range=seeded.window.grpc()),
                                                 metadata=metadata(HTTP), timeout=TIMEOUT_S)
        assert sorted(t.id for t in grpc_listed.profile_types) == seeded.type_ids
        assert cluster.querier.log_text().count("skipping a stored profile type that cannot be parsed") == 1
    finally:
        with psycopg.connect(cluster.storage.dsn, autocommit=True) as conn:
            conn.execute("DELETE FROM series WHERE profile_type = %s", [bad_type])


def test_empty_push_and_bad_tenant_are_refused(cluster: Cluster, go_profiles):
    before = stored_state(cluster)
    r = ingest(cluster, "e2e-bad", {}, b"")
    assert (r.status_code, r.json()) == (400, {
        "error": "empty request body: send a pprof profile, e.g. curl --data-binary @cpu.pb.gz"})
    error = grpc_error(cluster.ingest.Push, ingest_pb2.PushRequest(series=[raw_series({}, ("", b""))]), "e2e-bad")
    assert (error.code(), error.details()) == (grpc.StatusCode.INVALID_ARGUMENT, "empty profile")
    bad_tenant = 'invalid tenant "bad/tenant": use 1-64 characters of letters, digits, "_", "." or "-"'
    r = ingest(cluster, "bad/tenant", {}, go_profiles["cpu"])
    assert (r.status_code, r.json()) == (400, {"error": bad_tenant})
    request = ingest_pb2.PushRequest(series=[raw_series({}, ("", go_profiles["cpu"]))])
    error = grpc_error(cluster.ingest.Push, request, "bad/tenant")
    assert (error.code(), error.details()) == (grpc.StatusCode.INVALID_ARGUMENT, bad_tenant)
    assert settled(cluster) == before


def test_push_with_one_good_and_one_bad_profile_stores_nothing(cluster: Cluster, go_profiles):
    good = raw_series({"service_name": "mixed"}, ("good", go_profiles["cpu"]))
    before = stored_state(cluster)
    bad_profile = raw_series({"service_name": "mixed"}, ("good-too", go_profiles["heap"]),
                             ("broken", truncated(go_profiles)))
    error = grpc_error(cluster.ingest.Push, ingest_pb2.PushRequest(series=[good, bad_profile]), "e2e-mixed")
    assert (error.code(), error.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT, "broken: invalid gzip data: the compressed stream is truncated")
    bad_labels = raw_series({"service_name": "mixed", "team": "x" * 3000}, ("long-label", go_profiles["mutex"]))
    error = grpc_error(cluster.ingest.Push, ingest_pb2.PushRequest(series=[good, bad_labels]), "e2e-mixed")
    assert (error.code(), error.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT, 'long-label: label "team": value is 3000 bytes long, the limit is 2048')
    assert settled(cluster) == before
    # the good part alone is fine
    response = cluster.ingest.Push(ingest_pb2.PushRequest(series=[good]), metadata=metadata("e2e-mixed"),
                                   timeout=TIMEOUT_S)
    assert response.profiles == 2
    assert cluster.counts("e2e-mixed")["profiles"] == 2


LIMIT_COMPRESSED = 64 * 1024
LIMIT_DECOMPRESSED = 1 << 20


@pytest.fixture(scope="module")
def limited(cluster: Cluster):
    return cluster.add_ingester("limited-ingester", "--limits.max-compressed-bytes", str(LIMIT_COMPRESSED),
                                "--limits.max-decompressed-bytes", str(LIMIT_DECOMPRESSED))


def test_size_limits_refuse_big_profiles_and_gzip_bombs(cluster: Cluster, seeded: Seeded, limited, go_profiles,
                                                        go_profile_files):
    big = rewritten(go_profiles["cpu"], time_ns=profile_time_ns(go_profiles["cpu"]), padding=300_000)
    bomb = gzip.compress(b"\0" * (16 << 20), compresslevel=9)
    assert len(big) > LIMIT_COMPRESSED and unpacked_size(big) < LIMIT_DECOMPRESSED
    assert len(bomb) < LIMIT_COMPRESSED
    before = stored_state(cluster)
    r = ingest(cluster, "e2e-limited", {}, big, url=limited.url)
    assert (r.status_code, r.json()) == (413, {"error": f"request body is larger than {LIMIT_COMPRESSED} bytes, "
                                                        "the limit"})
    stub = cluster.ingest_stub(limited)
    error = grpc_error(stub.Push, ingest_pb2.PushRequest(series=[raw_series({}, ("big", big))]), "e2e-limited")
    assert (error.code(), error.details()) == (
        grpc.StatusCode.RESOURCE_EXHAUSTED, f"big: profile is {len(big)} bytes, the limit is {LIMIT_COMPRESSED}")
    bomb_message = f"profile decompresses to more than {LIMIT_DECOMPRESSED} bytes, the limit"
    r = ingest(cluster, "e2e-limited", {}, bomb, url=limited.url)
    assert (r.status_code, r.json()) == (413, {"error": bomb_message})
    error = grpc_error(stub.Push, ingest_pb2.PushRequest(series=[raw_series({}, ("bomb", bomb))]), "e2e-limited")
    assert (error.code(), error.details()) == (grpc.StatusCode.RESOURCE_EXHAUSTED, f"bomb: {bomb_message}")
    assert settled(cluster) == before

    # under the limits the same ingester stores; the big profile is valid and the default limits take it
    r = ingest(cluster, "e2e-limited", {"__name__": "goroutine"}, go_profiles["goroutine"], url=limited.url)
    assert (r.status_code, r.json()["profiles"]) == (200, 1)
    r = ingest(cluster, "e2e-limited", {}, big)
    assert (r.status_code, r.json()["profiles"]) == (200, 2)
    body = rest(cluster, "/query", "e2e-limited", {"query": CPU, **seeded.window.rest()})
    assert body["flamegraph"]["total"] == answers.total(go_profile_files["cpu"], "cpu")


# ------------------------------------------------------------------------------------------ querier


def querier_errors(seeded: Seeded) -> list:
    stored_types = ", ".join(seeded.type_ids)
    unknown = "nope:cpu:nanoseconds:cpu:nanoseconds"
    r = seeded.window.rest()
    return [  # path, params, status, message (exact, or a prefix when it ends with "...")
        ("/query", {"query": unknown, **r}, 404, f'unknown profile type "{unknown}"; stored types are: {stored_types}'),
        ("/query_range", {"query": unknown, **r}, 404,
         f'unknown profile type "{unknown}"; stored types are: {stored_types}'),
        ("/diff", {"left_query": unknown, "right_query": CPU}, 404,
         f'unknown profile type "{unknown}"; stored types are: {stored_types}'),
        ("/query", {"query": CPU + '{service_name="workload"', **r}, 400,
         "invalid selector at position 67: expected ',' or '}' after a matcher"),
        ("/query", {"query": "process_cpu:cpu{}", **r}, 400, 'invalid selector at position 0: invalid profile type '
         'id "process_cpu:cpu": must be 5 non-empty colon-separated parts of [A-Za-z0-9_.-] '
         "(name:sample_type:sample_unit:period_type:period_unit)"),
        ("/query", {"query": '{service_name="workload"}', **r}, 400, "the query names no profile type: write it "
         'before the selector, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="demo"}'),
        ("/series", {"match[]": "{service_name=}", **r}, 400,
         "invalid selector at position 14: expected a quoted string after '='"),
        ("/labels", {"match[]": '{source=~"("}', **r}, 400, 'invalid selector at position 9: label "source": '
         'invalid regular expression "(": missing ): ('),
        ("/labels", {"from": "1700000000000", "until": "1690000000000"}, 400,
         "from (2023-11-14T22:13:20.000Z) is after until (2023-07-22T04:26:40.000Z)"),
        ("/query", {"query": CPU, "from": "yesterday"}, 400,
         'invalid time "yesterday": expected now, now-<duration> (e.g. now-1h, now-1d2h), epoch seconds, '
         "milliseconds or nanoseconds (e.g. 1700000000, 1700000000000), or RFC 3339 (e.g. 2026-11-20T14:02:00Z)"),
        ("/query", {"query": CPU, "time": "2026-11-20T14:02:00"}, 400,
         'invalid time "2026-11-20T14:02:00": RFC 3339 needs a UTC offset such as Z or +02:00'),
        ("/query_range", {"query": CPU, "step": "fast", **r}, 400, 'invalid duration "fast": expected ...'),
        ("/query_range", {"query": CPU, "step": "-1m", **r}, 400, 'invalid duration "-1m": must be greater than zero'),
        ("/query", {"query": CPU, "max_nodes": "-1", **r}, 400, "max_nodes must be between 1 and 100000, got -1"),
        ("/query", {"query": CPU, "max_nodes": "100001", **r}, 400,
         "max_nodes must be between 1 and 100000, got 100001"),
        ("/query", {"query": CPU, "max_nodes": "lots", **r}, 400,
         "invalid request: query.max_nodes: Input should be a valid integer..."),
        ("/query", {"query": CPU, "format": "svg", **r}, 400,
         "unknown format 'svg'; known formats: flamegraph, top, tree, pprof"),
        ("/query", dict(r), 400, "invalid request: query.query: Field required"),
        ("/diff", {"left_query": CPU, "right_query": "memory:alloc_space:bytes:space:bytes", "left_from": r["from"],
                   "right_from": r["from"]}, 400,
         f"cannot compare {CPU} with memory:alloc_space:bytes:space:bytes: both sides need the same profile type"),
    ]


def test_querier_rest_refuses_bad_requests(cluster: Cluster, seeded: Seeded):
    for path, params, status, message in querier_errors(seeded):
        r = cluster.http.get(f"{cluster.querier_url}/api/v1{path}", params=params, headers=tenant_header(HTTP))
        assert (r.status_code, r.json().keys()) == (status, {"error"}), (path, params, r.text)
        assert matches(r.json()["error"], message), (path, params, r.text)
    r = cluster.http.get(f"{cluster.querier_url}/api/v1/labels", headers=tenant_header("no tenant"))
    assert (r.status_code, r.json()) == (400, {
        "error": 'invalid tenant "no tenant": use 1-64 characters of letters, digits, "_", "." or "-"'})


def test_pprof_format_keeps_samples_without_a_stack(cluster: Cluster, seeded: Seeded, go_profiles):
    data = with_stackless_sample(go_profiles["cpu"], [7, 70_000_000])
    path = seeded.workdir / "stackless.pb.gz"
    path.write_bytes(data)
    r = ingest(cluster, "e2e-stackless", {}, data)
    assert (r.status_code, r.json()["profiles"]) == (200, 2)
    base = {"query": CPU, **seeded.window.rest()}
    flamegraph = rest(cluster, "/query", "e2e-stackless", base)["flamegraph"]
    assert flamegraph["total"] == answers.total(path, "cpu")
    assert answers.flamegraph_paths(flamegraph)[0][()] == 70_000_000
    r = cluster.http.get(f"{cluster.querier_url}/api/v1/query", params={**base, "format": "pprof"},
                         headers=tenant_header("e2e-stackless"))
    downloaded, saved = answers.pprof_paths(r.content, seeded.workdir, "stackless-download")
    assert gotool.pprof_total(saved) == answers.total(path, "cpu")


def keeps_connection_open(url: str, method: str, path: str, body: bytes = b"") -> tuple[int, bool]:
    """Send one keep-alive HTTP/1.1 request on a raw socket; returns the status and whether the
    server still holds the connection open a moment after answering."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nX-Scope-OrgID: {HTTP}\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(65536)
        length = int(re.search(rb"(?i)content-length: *(\d+)", head)[1])
        rest = head.split(b"\r\n\r\n", 1)[1]
        while len(rest) < length:
            rest += sock.recv(65536)
        sock.settimeout(1.0)
        try:
            open_after = sock.recv(1) != b""
        except TimeoutError:
            open_after = True
        except ConnectionResetError:
            open_after = False
    return int(head.split()[1]), open_after


def test_successful_answers_keep_the_connection_open(cluster: Cluster, seeded: Seeded):
    assert keeps_connection_open(cluster.querier_url, "GET", "/api/v1/profile_types") == (200, True)


def test_error_answers_keep_the_connection_open(cluster: Cluster, seeded: Seeded):
    marks = cluster.log_marks()
    assert keeps_connection_open(cluster.querier_url, "GET", "/api/v1/query?query=nope:a:b:c:d") == (404, True)
    assert keeps_connection_open(cluster.ingester_url, "POST", "/ingest", b"garbage") == (400, True)
    assert "Exception in ASGI application" not in cluster.logs_since(marks)


def test_querier_grpc_refuses_bad_requests(cluster: Cluster, seeded: Seeded):
    q, rng = cluster.query, seeded.window.grpc()
    stored_types = ", ".join(seeded.type_ids)
    unknown = "nope:cpu:nanoseconds:cpu:nanoseconds"
    backwards = types_pb2.TimeRange(start_ns=seeded.window.end_ns, end_ns=seeded.window.start_ns)
    not_found = f'unknown profile type "{unknown}"; stored types are: {stored_types}'
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    cases = [
        (q.Query, query_pb2.QueryRequest(query=unknown, range=rng), grpc.StatusCode.NOT_FOUND, not_found),
        (q.QueryRange, query_pb2.QueryRangeRequest(query=unknown, range=rng), grpc.StatusCode.NOT_FOUND, not_found),
        (q.Diff, query_pb2.DiffRequest(left_query=CPU, right_query=unknown, left_range=rng, right_range=rng),
         grpc.StatusCode.NOT_FOUND, not_found),
        (q.Query, query_pb2.QueryRequest(query=CPU + '{service_name="workload"', range=rng), invalid,
         "invalid selector at position 67: expected ',' or '}' after a matcher"),
        (q.Series, query_pb2.SeriesRequest(matchers=["{service_name=}"], range=rng), invalid,
         "invalid selector at position 14: expected a quoted string after '='"),
        (q.LabelNames, query_pb2.LabelNamesRequest(range=backwards), invalid,
         f"range start {seeded.window.end_ns} is after its end {seeded.window.start_ns}"),
        (q.LabelValues, query_pb2.LabelValuesRequest(name="source", range=backwards), invalid,
         f"range start {seeded.window.end_ns} is after its end {seeded.window.start_ns}"),
        (q.Query, query_pb2.QueryRequest(query=CPU, range=backwards), invalid,
         f"range start {seeded.window.end_ns} is after its end {seeded.window.start_ns}"),
        (q.Query, query_pb2.QueryRequest(query=CPU, range=rng, max_nodes=-1), invalid,
         "max_nodes must be between 1 and 100000, got -1"),
        (q.Diff, query_pb2.DiffRequest(left_query=CPU, right_query=CPU, left_range=rng, right_range=rng,
                                       max_nodes=100_001), invalid,
         "max_nodes must be between 1 and 100000, got 100001"),
        (q.Query, query_pb2.QueryRequest(query=CPU, range=rng, format=42), invalid, "unknown format 42"),
        (q.Diff, query_pb2.DiffRequest(left_query=CPU, right_query="memory:alloc_space:bytes:space:bytes",
                                       left_range=rng, right_range=rng), invalid,
         f"cannot compare {CPU} with memory:alloc_space:bytes:space:bytes: both sides need the same profile type"),
    ]
    for method, request, code, message in cases:
        error = grpc_error(method, request, HTTP)
        assert (error.code(), error.details()) == (code, message), request
    error = grpc_error(q.ProfileTypes, query_pb2.ProfileTypesRequest(range=rng), "no tenant")
    assert (error.code(), error.details()) == (
        invalid, 'invalid tenant "no tenant": use 1-64 characters of letters, digits, "_", "." or "-"')


def test_querier_grpc_refuses_a_negative_step(cluster: Cluster, seeded: Seeded):
    request = query_pb2.QueryRangeRequest(query=CPU, range=seeded.window.grpc(), step_ns=-60 * 10**9)
    error = grpc_error(cluster.query.QueryRange, request, HTTP)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "step" in error.details()


# ------------------------------------------------------------------------------------------ outage


def test_push_while_minio_is_down_fails_then_succeeds(cluster: Cluster, seeded: Seeded, e2e_storage, go_profiles,
                                                      go_profile_files):
    minio, tenant = e2e_storage.minio, "e2e-outage"
    unreachable = f"S3 endpoint {minio.endpoint} bucket {e2e_storage.bucket} unreachable: "
    grpc_push = ingest_pb2.PushRequest(series=[raw_series({"service_name": "outage", "via": "grpc"},
                                                          ("cpu", go_profiles["cpu"]))])
    http_labels = {"service_name": "outage", "via": "http"}
    counts, objects = stored_state(cluster)
    minio.stop()
    try:
        started = time.monotonic()
        error = grpc_error(cluster.ingest.Push, grpc_push, tenant, timeout=60)
        assert time.monotonic() - started < 15
        assert error.code() == grpc.StatusCode.UNAVAILABLE, error.details()
        assert error.details().startswith(unreachable), error.details()
        started = time.monotonic()
        r = ingest(cluster, tenant, http_labels, go_profiles["cpu"])
        assert time.monotonic() - started < 15
        assert r.status_code == 503, r.text
        assert r.json()["error"].startswith(unreachable), r.text
        time.sleep(3 * FLUSH_INTERVAL_S)
        assert cluster.counts() == counts
    finally:
        minio.start()
    assert cluster.objects() == objects

    response = cluster.ingest.Push(grpc_push, metadata=metadata(tenant), timeout=TIMEOUT_S)
    assert (response.profiles, response.bytes) == (2, unpacked_size(go_profiles["cpu"]))
    r = ingest(cluster, tenant, http_labels, go_profiles["cpu"])
    assert (r.status_code, r.json()["profiles"]) == (200, 2)
    assert cluster.counts(tenant)["profiles"] == 4
    cpu_total = answers.total(go_profile_files["cpu"], "cpu")
    for via in ("grpc", "http"):
        body = rest(cluster, "/query", tenant, {"query": CPU + f'{{via="{via}"}}', **seeded.window.rest()})
        assert (body["profiles"], body["flamegraph"]["total"]) == (1, cpu_total)
