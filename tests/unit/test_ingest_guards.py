"""What a push may carry before it reaches a batch: labels Postgres can store, a time inside the tenant's
window, a bounded number of sample types; each refused with a 4xx-class error naming the limit."""

from __future__ import annotations

import argparse

import pytest
from infra.tinypprof import tiny_pprof

from flamewatch.cli.limits import ingest_limits, limit_flags
from flamewatch.ingester.config import IngesterConfig, IngestLimits, MaintenanceConfig
from flamewatch.ingester.prepare import prepare
from flamewatch.labels.errors import InvalidLabelError
from flamewatch.labels.labelset import validate_labels
from flamewatch.pprof import InvalidProfile, LimitExceeded
from flamewatch.rpc.errors import status_of
from flamewatch.rpc.tenant import resolve_tenant
from flamewatch.storage.retention import RetentionPolicy

NOW = 1_780_000_000 * 10**9
MINUTE = 60 * 10**9
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _validate(labels: dict[str, str]) -> None:
    validate_labels(labels, max_labels=32, max_name_length=128, max_value_length=2048)


def test_a_nul_in_a_label_value_is_refused_naming_the_label():
    with pytest.raises(InvalidLabelError) as refused:
        _validate({"service_name": "x", "foo": "a\x00b"})
    assert str(refused.value) == ('label "foo": value contains a NUL character (\\x00 at position 1), which cannot '
                                  'be stored; remove it')
    assert status_of(refused.value).http_status == 400


def test_a_push_with_a_nul_label_is_refused_before_anything_is_batched():
    with pytest.raises(InvalidLabelError, match='label "foo": value contains a NUL'):
        prepare({"service_name": "x", "foo": "a\x00b"}, tiny_pprof(NOW), IngestLimits(), NOW)


@pytest.mark.parametrize("tenant", ["a\x00b", "\x00", "a\udcffb"])
def test_a_tenant_postgres_cannot_store_is_refused(tenant):
    with pytest.raises(ValueError, match="invalid tenant"):
        resolve_tenant(tenant)


@pytest.mark.parametrize("time_ns", [INT64_MIN, -1, INT64_MAX, NOW + 11 * MINUTE])
def test_times_outside_the_window_are_refused(time_ns):
    with pytest.raises(InvalidProfile, match=r"profile time .* is too (old|far in the future)") as refused:
        prepare({"service_name": "x"}, tiny_pprof(time_ns), IngestLimits(), NOW)
    assert status_of(refused.value).http_status == 400


def test_the_newer_than_message_names_the_window_and_the_flag():
    with pytest.raises(InvalidProfile) as refused:
        prepare({"service_name": "x"}, tiny_pprof(NOW + 11 * MINUTE), IngestLimits(), NOW)
    assert str(refused.value) == ("profile time 2026-05-28T20:37:40Z is too far in the future: accepted are times "
                                  "up to 2026-05-28T20:36:40Z, 10 min after the server's clock "
                                  "(--limits.reject-newer-than); check the client's clock")


def test_the_older_than_bound_is_the_flag_or_the_tenants_retention():
    config = IngesterConfig(limits=IngestLimits(reject_older_than_ns=60 * MINUTE),
                            maintenance=MaintenanceConfig(retention=RetentionPolicy(None, {"kept": 30 * MINUTE})),
                            tenant_limits={"old": {"reject_older_than_ns": 600 * MINUTE}})
    old = tiny_pprof(NOW - 120 * MINUTE)
    with pytest.raises(InvalidProfile) as refused:
        prepare({"service_name": "x"}, old, config.limits_for("anyone"), NOW)
    assert str(refused.value) == ("profile time 2026-05-28T18:26:40Z is too old: accepted are times from "
                                  "2026-05-28T19:26:40Z to 2026-05-28T20:36:40Z (--limits.reject-older-than (by "
                                  "default the tenant's retention)); send the profile with its real time")
    assert prepare({"service_name": "x"}, old, config.limits_for("old"), NOW).entries[0].time_ns == NOW - 120 * MINUTE
    retention_only = IngesterConfig(maintenance=MaintenanceConfig(retention=RetentionPolicy(None, {"kept": MINUTE})))
    assert retention_only.limits_for("kept").reject_older_than_ns == MINUTE
    assert retention_only.limits_for("other").reject_older_than_ns == 0
    with pytest.raises(InvalidProfile, match="too old"):
        prepare({"service_name": "x"}, tiny_pprof(NOW - 2 * MINUTE), retention_only.limits_for("kept"), NOW)


def test_times_inside_the_window_and_timeless_profiles_pass():
    for time_ns in (NOW - 10 * 365 * 24 * 60 * MINUTE, NOW, NOW + 10 * MINUTE):
        assert prepare({"service_name": "x"}, tiny_pprof(time_ns), IngestLimits(), NOW).entries[0].time_ns == time_ns
    timeless = prepare({"service_name": "x"}, tiny_pprof(0), IngestLimits(), NOW)
    assert (timeless.entries[0].time_ns, timeless.dated_by_server) == (NOW, True)
    assert prepare({"service_name": "x"}, tiny_pprof(NOW), IngestLimits(), NOW).dated_by_server is False


def test_a_negative_duration_is_refused():
    with pytest.raises(InvalidProfile, match="profile duration -5 ns is out of range"):
        prepare({"service_name": "x"}, tiny_pprof(NOW, duration_nanos=-5), IngestLimits(), NOW)


def test_a_pprof_with_1000_sample_types_is_refused_before_it_becomes_1000_series():
    raw = tiny_pprof(NOW, sample_types=1000)
    assert len(raw) < 8192
    with pytest.raises(LimitExceeded) as refused:
        prepare({"service_name": "x"}, raw, IngestLimits(), NOW)
    assert str(refused.value) == ("profile has 1000 sample types, the limit is 64 (each becomes a series; "
                                  "--limits.max-sample-types raises it)")
    assert status_of(refused.value).http_status == 413
    assert len(prepare({"service_name": "x"}, tiny_pprof(NOW, sample_types=64), IngestLimits(), NOW).entries) == 64


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add = parser.add_argument  # the flags' helper only needs add(flag, help, **kwargs)
    limit_flags(_Flags(parser))
    return parser.parse_args(argv)


class _Flags:
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self._parser = parser

    def add(self, flag: str, help: str, **kwargs) -> None:
        self._parser.add_argument(flag, help=help, **kwargs)


def test_limit_flags_and_per_tenant_values():
    limits, per_tenant = ingest_limits(_parse("--limits.max-series", "100", "--limits.reject-older-than", "6h",
                                              "--limits.tenant", "acme:max-series=5000",
                                              "--limits.tenant", "acme:reject-newer-than=1h",
                                              "--limits.tenant", "b.c-d:max-sample-types=8"))
    assert (limits.max_series, limits.reject_older_than_ns, limits.reject_newer_than_ns) == (100, 6 * 60 * MINUTE,
                                                                                          10 * MINUTE)
    assert per_tenant == {"acme": {"max_series": 5000, "reject_newer_than_ns": 60 * MINUTE},
                          "b.c-d": {"max_sample_types": 8}}
    config = IngesterConfig(limits=limits, tenant_limits=per_tenant)
    assert config.limits_for("acme").max_series == 5000
    assert config.limits_for("other").max_series == 100


@pytest.mark.parametrize("bad", ["acme", "acme:max-series", "acme:nope=3", ":max-series=3", "acme:max-series=x"])
def test_a_bad_tenant_limit_is_refused_with_the_expected_form(bad, capsys):
    with pytest.raises(SystemExit):
        _parse("--limits.tenant", bad)
    err = capsys.readouterr().err
    assert "TENANT:LIMIT=VALUE" in err or "max-series: expected a whole number" in err


def test_rate_limits_are_numbers_and_can_be_a_tenants_own():
    limits, per_tenant = ingest_limits(_parse("--limits.ingestion-rate-mb", "4", "--limits.tenant",
                                              "acme:ingestion-rate-mb=20.5", "--limits.tenant",
                                              "acme:ingestion-burst-mb=100"))
    config = IngesterConfig(limits=limits, tenant_limits=per_tenant)
    assert config.limits_for("acme").ingestion_rate() == (20.5e6, 100e6)
    assert config.limits_for("other").ingestion_rate() == (4e6, 256 * 2**20)  # the burst: a push of any size
    assert IngesterConfig().limits_for("other").ingestion_rate() is None


@pytest.mark.parametrize("bad", [("--limits.ingestion-rate-mb", "-1"), ("--limits.max-series", "x"),
                                 ("--limits.tenant", "acme:ingestion-burst-mb=lots")])
def test_a_limit_must_be_a_number_of_zero_or_more(bad, capsys):
    with pytest.raises(SystemExit):
        _parse(*bad)
    err = capsys.readouterr().err
    assert "expected 0 or more" in err or "expected a number" in err or "expected a whole number" in err
