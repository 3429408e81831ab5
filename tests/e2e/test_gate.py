"""`flamewatch gate` on real CPU profiles: two builds of tests/targets/regress, the second spending 20 %
more in main.hash, each writing CPU profiles as `go test -cpuprofile` would; the gate fails the slower
build with main.hash ranked first, passes two runs of one build, and refuses bad input with exit 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from e2e.conftest import REGRESS_PROFILES
from e2e.test_cli_auth import flamewatch

pytestmark = [pytest.mark.e2e, pytest.mark.go]


@pytest.fixture
def runs(regress_profiles: dict[str, list[Path]]) -> dict[str, list[Path]]:
    """Real CPU profiles of the base build (twice) and of the 20 % slower one (tests/e2e/conftest.py)."""
    return regress_profiles


def gate(*args: str | Path) -> subprocess.CompletedProcess:
    return flamewatch("gate", *map(str, args))


def test_the_slower_build_fails_the_gate_with_the_slower_function_first(runs):
    done = gate("--baseline", *runs["base"], "--candidate", *runs["slower"], "--threshold", "1%")
    assert done.returncode == 1, done.stdout + done.stderr
    table = done.stdout.splitlines()
    assert table[1].startswith("main.hash") and table[1].endswith("REGRESSION"), done.stdout
    assert "FAIL: 1 function(s) grew significantly by 1.00% of the total or more: main.hash" in done.stdout


def test_two_runs_of_one_build_pass(runs):
    done = gate("--baseline", *runs["base"], "--candidate", *runs["again"], "--threshold", "1%")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (f"OK: no function's self share grew significantly by 1.00% or more ({REGRESS_PROFILES} baseline"
            in done.stdout)


def test_total_order_and_the_sample_type_can_be_chosen(runs):
    done = gate("--baseline", *runs["base"], "--candidate", *runs["slower"], "--order", "total",
                "--sample-type", "samples", "--top", "3")
    assert done.returncode == 1 and len(done.stdout.splitlines()) >= 4, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].split()[1:3] == ["total", "a"]


@pytest.mark.parametrize(("args", "problem"), [
    (["--candidate", "{slower}"], "give files on both sides"),
    (["--baseline", "{base}", "--candidate", "{missing}"], "cannot read it: No such file or directory"),
    (["--baseline", "{base}", "--candidate", "{not_pprof}"], "not a pprof profile"),
    (["--baseline", "{base}", "--candidate", "{slower}", "--sample-type", "alloc_space"],
     "no sample type 'alloc_space'; it has samples, cpu"),
    (["--baseline-query", "x"], "give both sides"),
])
def test_bad_input_exits_2_with_the_reason(runs, tmp_path: Path, args: list[str], problem: str):
    (tmp_path / "notes.txt").write_text("not a profile")
    files = {"base": runs["base"][0], "slower": runs["slower"][0], "missing": tmp_path / "nope.pb.gz",
             "not_pprof": tmp_path / "notes.txt"}
    done = gate(*[a.format(**files) for a in args])
    assert done.returncode == 2 and problem in done.stderr, done.stdout + done.stderr


def test_a_threshold_that_is_no_share_is_refused():
    done = gate("--baseline", "a", "--candidate", "b", "--threshold", "150%")
    assert done.returncode == 2 and "a share is between 0% and 100%" in done.stderr
