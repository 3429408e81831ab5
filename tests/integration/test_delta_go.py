"""Deltas of real cumulative Go profiles equal the difference computed independently from the raw scrapes."""

import time

import httpx
import pytest
from infra.gotool import pprof_raw, pprof_top, pprof_total

from flamewatch.pprof import decode, encode, split
from flamewatch.pprof.delta import subtract


def cumulative_columns(raw: bytes) -> list[int]:
    return [i for i, t in enumerate(split(decode(raw))) if not t.profile_type.is_gauge]


@pytest.mark.go
@pytest.mark.parametrize("endpoint", ["allocs", "mutex", "block"])
def test_delta_of_two_scrapes_matches_the_raw_difference(go_target, tmp_path, endpoint):
    url = f"http://{go_target}/debug/pprof/{endpoint}"
    first = httpx.get(url, timeout=30).content
    time.sleep(1.5)  # the workload keeps allocating and contending in between
    second = httpx.get(url, timeout=30).content
    columns = cumulative_columns(second)
    delta, reset = subtract(decode(second), decode(first), columns)
    assert not reset
    paths = {}
    for name, data in {"first": first, "second": second, "delta": encode(delta)}.items():
        paths[name] = tmp_path / f"{name}.pb.gz"
        paths[name].write_bytes(data)
    sample_types = pprof_raw(paths["second"]).sample_types
    for column in columns:
        kind = sample_types[column]
        before, after, got = (pprof_top(paths[n], kind) for n in ("first", "second", "delta"))
        expected = {f: after[f][0] - before.get(f, (0, 0))[0] for f in after}
        assert {f: v for f, v in expected.items() if v} == {f: v[0] for f, v in got.items() if v[0]}, kind
        assert pprof_total(paths["delta"], kind) == pprof_total(paths["second"], kind) - pprof_total(
            paths["first"], kind)
        assert pprof_total(paths["delta"], kind) > 0, f"the workload produced no new {kind} in 1.5 s"


@pytest.mark.go
def test_a_restarted_process_is_a_reset(go_profiles):
    """A later scrape with less than the earlier one is a new process: it is stored as it is."""
    allocs = decode(go_profiles["allocs"])
    doubled = decode(go_profiles["allocs"])
    doubled.samples.values[:, :2] *= 2
    delta, reset = subtract(allocs, doubled, [0, 1])
    assert reset
    assert delta is allocs
