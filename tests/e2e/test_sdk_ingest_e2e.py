"""The Pyroscope SDKs' `/ingest` on a running ingester and querier (real Postgres and MinIO).

The Go SDK (`github.com/grafana/pyroscope-go`, built into `tests/targets/gosdk`) pushes its own CPU and
memory profiles; the program's hot functions must then be in the merged flamegraphs that `/api/v1/query`
answers, under the labels its `name=` carried. Bad requests get the status the SDKs expect and a message
naming the problem, and leave nothing in the index or the bucket.
"""

from __future__ import annotations

import gzip
import subprocess
import time
from collections.abc import Iterator

import pytest
from e2e.answers import flamegraph_paths
from e2e.calls import rest
from e2e.cluster import Cluster, Storage, running
from infra import gotargets
from infra.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

LIMIT = 256 * 1024  # the ingester's --limits.max-compressed-bytes here
APP = "flamewatch-gosdk"
TENANT = "sdk"
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
ALLOC = "memory:alloc_space:bytes:space:bytes"
HOT, ALLOCATOR = "main.flamewatchSDKHotLoop", "main.flamewatchSDKAllocate"
# The SDK's uploads of contention profiles differ only in their sample_type_config display names.
CONTENTION = {"mutex:delay:nanoseconds:contentions:count": "main.flamewatchSDKContend",
              "mutex:contentions:count:contentions:count": "main.flamewatchSDKContend",
              "block:delay:nanoseconds:contentions:count": "main.flamewatchSDKWait",
              "block:contentions:count:contentions:count": "main.flamewatchSDKWait"}
GOROUTINE = "goroutine:goroutine:count:goroutine:count"
SDK_RUN_S = 4


@pytest.fixture(scope="module")
def sdk_cluster(e2e_storage: Storage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(e2e_storage, tmp_path_factory.mktemp("sdk-cluster"),
                ingester_flags=("--limits.max-compressed-bytes", str(LIMIT)))
    with running(c):
        yield c


@pytest.fixture(scope="module")
def go_sdk_run(sdk_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Run the Go SDK program against the ingester once; its output."""
    binary = gotargets.build("gosdk")
    log = tmp_path_factory.mktemp("gosdk") / "gosdk.log"
    command = [str(binary), "-server", sdk_cluster.ingester_url, "-app", APP, "-tenant", TENANT,
               "-tags", "env=e2e,team.name=profiling", "-run", f"{SDK_RUN_S}s", "-upload-rate", "1s"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=SDK_RUN_S + 60)
    log.write_text(result.stdout + result.stderr)
    assert result.returncode == 0, f"the SDK program failed ({result.returncode}):\n{result.stdout}{result.stderr}"
    assert "sdk errors: 0" in result.stdout, result.stdout
    return result.stdout


def query(cluster: Cluster, selector: str, fmt: str) -> dict:
    return rest(cluster, "/query", TENANT, {"query": selector, "from": "now-10m", "format": fmt,
                                            "max_nodes": "100000"})


def test_go_sdk_profiles_reach_the_flamegraph(sdk_cluster: Cluster, go_sdk_run: str):
    def stored_types():
        types = {t["id"] for t in rest(sdk_cluster, "/profile_types", TENANT, {"from": "now-10m"})["data"]}
        return types if {CPU, ALLOC} <= types else None

    types = wait_for(stored_types, 20, "the SDK's CPU and memory profiles")
    assert {"memory:inuse_space:bytes:space:bytes", "memory:alloc_objects:count:space:bytes"} <= types

    flamegraph = query(sdk_cluster, f'{CPU}{{service_name="{APP}"}}', "flamegraph")["flamegraph"]
    paths, _ = flamegraph_paths(flamegraph)
    hot = sum(value for path, value in paths.items() if path and path[-1] == HOT)
    assert hot > 0.5 * flamegraph["total"], f"{HOT} has {hot} of {flamegraph['total']} ns of CPU"

    memory = query(sdk_cluster, f'{ALLOC}{{service_name="{APP}"}}', "top")["top"]["entries"]
    assert ALLOCATOR in {e["name"] for e in memory}


def test_go_sdk_goroutine_mutex_and_block_profiles_are_named_apart(sdk_cluster: Cluster, go_sdk_run: str):
    def stored_types():
        types = {t["id"] for t in rest(sdk_cluster, "/profile_types", TENANT, {"from": "now-10m"})["data"]}
        return types if {GOROUTINE, *CONTENTION} <= types else None

    wait_for(stored_types, 20, "the SDK's goroutine, mutex and block profiles")
    for type_id, function in CONTENTION.items():
        entries = query(sdk_cluster, f'{type_id}{{service_name="{APP}"}}', "top")["top"]["entries"]
        assert function in {e["name"] for e in entries}, f"{function} not in {type_id}: {entries[:10]}"
    entries = query(sdk_cluster, f'{GOROUTINE}{{service_name="{APP}"}}', "top")["top"]["entries"]
    assert "main.flamewatchSDKWait" in {e["name"] for e in entries}


def test_go_sdk_name_becomes_labels(sdk_cluster: Cluster, go_sdk_run: str):
    def cpu_series():
        match = f'{{__profile_type__="{CPU}",service_name="{APP}"}}'
        return rest(sdk_cluster, "/series", TENANT, {"match[]": match, "from": "now-10m"})["data"]

    series = wait_for(cpu_series, 20, "the CPU series")
    assert len(series) == 1, series
    labels = series[0]
    assert labels["__profile_type__"] == CPU
    assert labels["env"] == "e2e"
    assert labels["team_name"] == "profiling"  # "." in tag names becomes "_"
    assert labels["pyroscope_spy"] == "gospy"
    assert labels["process_runtime_name"] == "go"
    assert labels["otel_scope_name"] == "com.grafana.pyroscope/go"
    assert labels["__session_id__"]


# ---------------------------------------------------------------------------- bad input

BAD_TENANT = "sdk-bad"
GOOD_NAME = "app.cpu{env=test}"


def _multipart(*parts: tuple[str, bytes], boundary: str = "XyZ") -> tuple[str, bytes]:
    body = b"".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{name}"\r\n'
                    f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n"
                    for name, data in parts)
    return f"multipart/form-data; boundary={boundary}", body + f"--{boundary}--\r\n".encode()


def _cases(go_cpu: bytes) -> list[tuple[str, dict, str | None, bytes, int, str]]:
    form_type, good_form = _multipart(("profile", go_cpu))
    cut_form = good_form[:len(good_form) // 2]
    _, no_profile = _multipart(("sample_type_config", b"{}"))
    _, bad_config = _multipart(("profile", go_cpu), ("sample_type_config", b'{"cpu": {"cumulative": "yes"}}'))
    _, with_prev = _multipart(("profile", go_cpu), ("prev_profile", go_cpu))
    return [
        ("empty name", {"name": "{env=x}", "format": "pprof"}, None, go_cpu, 400, "application name is empty"),
        ("bad app name", {"name": "my app{}", "format": "pprof"}, None, go_cpu, 400, 'application name "my app"'),
        ("unclosed tags", {"name": "app{env=x", "format": "pprof"}, None, go_cpu, 400, 'no closing "}"'),
        ("bad tag", {"name": "app{env}", "format": "pprof"}, None, go_cpu, 400, 'bad tag "env"'),
        ("bad from", {"name": GOOD_NAME, "from": "yesterday", "until": "now", "format": "pprof"}, None, go_cpu,
         400, "from:"),
        ("bad sampleRate", {"name": GOOD_NAME, "sampleRate": "fast", "format": "pprof"}, None, go_cpu, 400,
         'sampleRate="fast"'),
        ("unknown format", {"name": GOOD_NAME, "format": "pdf"}, None, go_cpu, 400, 'unknown format "pdf"'),
        ("jfr", {"name": GOOD_NAME, "format": "jfr"}, None, b"FLR\0", 415, "Java Flight Recorder"),
        ("no format, no form", {"name": GOOD_NAME}, None, b"foo;bar 1\n", 415, "format=pprof"),
        ("malformed pprof", {"name": GOOD_NAME, "format": "pprof"}, None, b"\x0a\xff\xff not a pprof", 400,
         "not a pprof profile:"),
        ("malformed gzip", {"name": GOOD_NAME, "format": "pprof"}, None, b"\x1f\x8b\x08\x00 broken", 400,
         "invalid gzip data:"),
        ("cut multipart", {"name": GOOD_NAME}, form_type, cut_form, 422, "no closing boundary"),
        ("multipart without boundary", {"name": GOOD_NAME}, "multipart/form-data", good_form, 400,
         "without a boundary"),
        ("multipart without profile", {"name": GOOD_NAME}, form_type, no_profile, 422, "no profile field"),
        ("bad sample_type_config", {"name": GOOD_NAME}, form_type, bad_config, 400,
         'sample_type_config["cpu"].cumulative: expected a boolean'),
        ("prev_profile", {"name": GOOD_NAME}, form_type, with_prev, 422, "prev_profile"),
        ("oversize", {"name": GOOD_NAME, "format": "pprof"}, None, b"\0" * (LIMIT + 1), 413,
         f"larger than {LIMIT} bytes"),
    ]


def test_bad_requests_get_the_status_the_sdks_expect_and_write_nothing(sdk_cluster: Cluster, go_profiles):
    failures = []
    for what, params, content_type, body, status, message in _cases(go_profiles["cpu"]):
        headers = {"X-Scope-OrgID": BAD_TENANT, **({"Content-Type": content_type} if content_type else {})}
        r = sdk_cluster.http.post(f"{sdk_cluster.ingester_url}/ingest", params=params, content=body, headers=headers)
        if r.status_code != status or message not in r.json().get("error", ""):
            failures.append(f"{what}: {r.status_code} {r.text!r}, expected {status} with {message!r}")
    assert not failures, "\n".join(failures)
    time.sleep(0.5)  # longer than a flush: anything accepted by mistake would be written by now
    assert sdk_cluster.counts(BAD_TENANT) == {"profiles": 0, "series": 0, "blocks": 0}
    assert sdk_cluster.objects(f"{BAD_TENANT}/") == []


@pytest.mark.parametrize("body", [b"\x0a\xff\xff not a pprof", b"\x1f\x8b\x08\x00 broken", b"<html>404</html>"])
def test_a_body_that_is_not_a_pprof_gets_the_same_400_in_both_forms(sdk_cluster: Cluster, body: bytes):
    """It was 422 in the SDK form (raw or as the form's profile) and 400 in ours."""
    url, headers = f"{sdk_cluster.ingester_url}/ingest", {"X-Scope-OrgID": BAD_TENANT}
    ours = sdk_cluster.http.post(url, params={"service_name": "x"}, content=body, headers=headers)
    raw = sdk_cluster.http.post(url, params={"name": GOOD_NAME, "format": "pprof"}, content=body, headers=headers)
    form = sdk_cluster.http.post(url, params={"name": GOOD_NAME}, files={"profile": ("profile.pprof", body)},
                                 headers=headers)
    assert [r.status_code for r in (ours, raw, form)] == [400, 400, 400], [ours.text, raw.text, form.text]
    assert ours.json()["error"] == raw.json()["error"] == form.json()["error"]
    assert ours.json()["error"].startswith(("not a pprof profile:", "invalid gzip data:"))
    assert sdk_cluster.counts(BAD_TENANT) == {"profiles": 0, "series": 0, "blocks": 0}


def test_raw_body_and_multipart_from_a_plain_client_are_stored(sdk_cluster: Cluster, go_profiles):
    """Both body forms, sent by httpx rather than by hand, with from/until in seconds."""
    tenant = "sdk-plain"
    now_s = int(time.time())
    params = {"name": "plain.cpu{region=eu}", "from": str(now_s - 10), "until": str(now_s), "spyName": "gospy",
              "sampleRate": "100"}
    raw = sdk_cluster.http.post(f"{sdk_cluster.ingester_url}/ingest", params={**params, "format": "pprof"},
                                content=go_profiles["cpu"], headers={"X-Scope-OrgID": tenant})
    assert raw.status_code == 200, raw.text
    form = sdk_cluster.http.post(f"{sdk_cluster.ingester_url}/ingest", params={**params, "name": "form{region=us}"},
                                 files={"profile": ("profile.pprof", gzip.decompress(go_profiles["cpu"])),
                                        "sample_type_config": ("sample_type_config.json",
                                                               b'{"samples": {"units": "samples", "sampled": true}}')},
                                 headers={"X-Scope-OrgID": tenant})
    assert form.status_code == 200, form.text
    assert raw.json()["profiles"] == form.json()["profiles"] == 2  # samples and cpu
    match = f'{{__profile_type__="{CPU}"}}'
    # The pprof's own time dates it (from/until only date a pprof without one), and `go_profiles` were
    # captured when the session began: the range reaches back a day.
    series = rest(sdk_cluster, "/series", tenant, {"match[]": match, "from": "now-24h"})["data"]
    assert sorted((s["service_name"], s["region"]) for s in series) == [("form", "us"), ("plain", "eu")]
