"""The REST APIs against their own OpenAPI documents, with schemathesis: no 5xx, every answer as documented;
and the edge cases of the same parameters that random generation is unlikely to hit.

The ingester and the querier run as separate processes on real Postgres and MinIO; the querier's
store holds real Go profiles first, so generated queries that name a stored profile type merge data.
schemathesis generates requests for every operation of each service's `/api/openapi.json` (valid and
invalid ones) and checks each answer: no server error, a status code, content type, headers and body
the document declares, and invalid requests refused with a 4xx. Not checked: that every schema-valid
request is accepted, since the schema cannot say what a valid selector, time or pprof body is.
"""

import time

import pytest
import schemathesis
from e2e.calls import ingest, rest
from e2e.pushes import profile_time_ns
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import positive_data_acceptance
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import FailureGroup
from schemathesis.generation import GenerationMode

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

EXAMPLES = 40  # per operation; with 8 operations the module runs in well under a minute
# Query parameters the document does not name are ignored, as HTTP APIs do, not refused.
CONFIG = SchemathesisConfig.from_dict({"generation": {"allow-extra-parameters": False}})
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
EARLIEST, LATEST = "1677-09-21T00:12:43.145224192Z", "2262-04-11T23:47:16.854775807Z"  # int64 ns
HOUR_NS = 3600 * 10**9


@pytest.fixture(scope="module")
def stored(cluster, go_profiles):
    for name in ("cpu", "heap", "goroutine"):
        answer = ingest(cluster, None, {"service_name": "workload", "job": "openapi"}, go_profiles[name])
        assert answer.status_code == 200, answer.text
    deadline = time.monotonic() + 10
    while cluster.counts()["profiles"] < 7 and time.monotonic() < deadline:
        time.sleep(0.1)
    return cluster


def failures_of(schema_url: str) -> list[str]:
    """Every operation of the document, in valid and invalid requests: what failed, one entry each.

    schemathesis' own pytest plugin (`from_fixture`, needed for a server started by a fixture) reads a
    private attribute pytest 9 no longer has, so each operation's strategy is run with hypothesis here.
    """
    schema = schemathesis.openapi.from_url(schema_url, config=CONFIG)
    failures = []
    for result in schema.get_all_operations():
        operation = result.ok()
        # An operation without parameters or body (GET /api/v1/tenants) has no invalid request to make.
        takes = any(True for _ in operation.iter_parameters()) or operation.get_request_payload_content_types()
        modes = GenerationMode if takes else [GenerationMode.POSITIVE]
        for mode in modes:
            @SETTINGS
            @given(case=operation.as_strategy(generation_mode=mode))
            def check(case):
                case.call_and_validate(excluded_checks=[positive_data_acceptance])

            try:
                check()
            except (Exception, FailureGroup) as exc:  # noqa: BLE001 - every operation is tried; all are reported
                failures.append(f"{operation.label} ({mode.value}): {exc}")
    return failures


def test_querier_answers_as_documented(stored):
    failures = failures_of(f"{stored.querier_url}/api/openapi.json")
    assert not failures, "\n\n".join(failures)


def test_ingester_answers_as_documented(stored):
    failures = failures_of(f"{stored.ingester_url}/api/openapi.json")
    assert not failures, "\n\n".join(failures)


# The int64 time range's ends, where the index and the bucket arithmetic used to overflow.


@pytest.mark.parametrize("at", [EARLIEST, LATEST])
def test_the_nearest_profile_to_either_end_of_time(stored, at):
    answer = rest(stored, "/query", None, {"query": CPU, "time": at, "format": "top"})
    assert answer["profiles"] == 1  # a bigint overflow in Postgres used to make this a 500


def test_steps_over_all_of_time_are_counted_from_the_start(stored, go_profiles):
    at = profile_time_ns(go_profiles["cpu"])
    for step, step_ns in (("1h", HOUR_NS), ("292y", 292 * 365 * 24 * HOUR_NS), ("7d", 7 * 24 * HOUR_NS)):
        answer = rest(stored, "/query_range", None, {"query": CPU, "from": EARLIEST, "until": LATEST, "step": step})
        [[start_ms, value]] = answer["series"][0]["points"]
        # time - start overflowed int64 and the steps were laid from another origin than `from`.
        assert start_ms == (-(2**63) + (at + 2**63) // step_ns * step_ns) // 10**6, step
        assert value > 0
