"""Properties of what the ingester accepts, on `prepare` (no I/O): any label string, any time and any number
of sample types is either refused with a 4xx-class error or turned into exactly what was sent."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from infra.tinypprof import tiny_pprof

from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.rpc.errors import status_of

NOW = 1_780_000_000 * 10**9
MINUTE = 60 * 10**9
LIMITS = IngestLimits()
ANY_INT64 = st.integers(-(2**63), 2**63 - 1)
# Any character, with the ones Postgres cannot store (NUL, lone surrogates) often enough to be found
LABEL_TEXT = st.text(st.one_of(st.characters(), st.sampled_from(["\x00", "\ud800", "\udcff"])), max_size=60)


def _refused_as_bad_input(exc: Exception) -> None:
    status = status_of(exc)
    assert 400 <= status.http_status < 500, (exc, status)


@settings(max_examples=300)
@given(name=st.one_of(LABEL_TEXT, st.from_regex(r"[a-z_]{1,20}", fullmatch=True)), value=LABEL_TEXT)
def test_any_label_is_refused_4xx_or_kept_exactly(name: str, value: str):
    try:
        [entry] = prepare({"service_name": "prop", name: value}, tiny_pprof(NOW), LIMITS, NOW).entries
    except Exception as exc:  # noqa: BLE001 - the property is about every error
        _refused_as_bad_input(exc)
        return
    assert entry.labels[name] == value
    assert "\x00" not in value
    value.encode("utf-8")  # what Postgres stores: no lone surrogate got through


@settings(max_examples=300)
@given(time_ns=st.one_of(ANY_INT64, st.integers(-2 * MINUTE, 20 * MINUTE).map(lambda d: NOW + d)),
       duration_ns=st.one_of(st.just(10**9), ANY_INT64))
def test_any_time_is_refused_4xx_or_kept_exactly(time_ns: int, duration_ns: int):
    try:
        [entry] = prepare({"service_name": "prop"}, tiny_pprof(time_ns, duration_nanos=duration_ns), LIMITS,
                          NOW).entries
    except Exception as exc:  # noqa: BLE001
        _refused_as_bad_input(exc)
        assert time_ns and not 0 < time_ns <= NOW + 10 * MINUTE or not 0 <= duration_ns < 2**63 - time_ns
        return
    assert entry.time_ns == (time_ns or NOW)
    assert 0 < entry.time_ns <= NOW + 10 * MINUTE
    assert entry.duration_ns == duration_ns


@settings(max_examples=60)
@given(sample_types=st.integers(1, 300))
def test_any_number_of_sample_types_is_refused_4xx_or_becomes_as_many_series(sample_types: int):
    try:
        entries = prepare({"service_name": "prop"}, tiny_pprof(NOW, sample_types=sample_types), LIMITS, NOW).entries
    except Exception as exc:  # noqa: BLE001
        _refused_as_bad_input(exc)
        assert sample_types > LIMITS.max_sample_types
        return
    assert sample_types <= LIMITS.max_sample_types
    assert len({e.fingerprint for e in entries}) == len(entries) == sample_types


@pytest.mark.parametrize("time_ns", [-(2**63), -1, 2**63 - 1])
def test_the_ends_of_int64_are_refused(time_ns: int):
    with pytest.raises(ValueError, match="profile time"):
        prepare({"service_name": "prop"}, tiny_pprof(time_ns), LIMITS, NOW)
