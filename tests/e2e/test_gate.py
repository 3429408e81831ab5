"""`flamewatch gate` on real CPU profiles: two builds of tests/targets/regress, the second spending 20 %
more in main.hash, each writing CPU profiles as `go test -cpuprofile` would; the gate fails the slower
build with main.hash ranked first, passes two runs of one build, and refuses bad input with exit 2."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.test_cli_auth import flamewatch
from infra import gotargets

pytestmark = [pytest.mark.e2e, pytest.mark.go]

# Each profile covers 4000 requests, about a second of CPU (a thousand samples at the target's 1000 Hz)
# however busy the machine is, so the test's power does not depend on the load. Asynchronous preemption
# is off: on a loaded machine the runtime's preemption signal would land in a varying share of samples.
PROFILES, REQUESTS = 12, 4000
ENV = {**os.environ, "GODEBUG": "asyncpreemptoff=1"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Path]]]:
    """CPU profiles of the base build (twice) and of the 20 % slower one, taken side by side."""
    builds = {"base": gotargets.build("regress"), "again": gotargets.build("regress"),
              "slower": gotargets.build("regress", "-X main.extraPercent=20", "20")}
    out = {name: tmp_path_factory.mktemp(name) for name in builds}
    running = [subprocess.Popen([str(binary), "-dir", str(out[name]), "-count", str(PROFILES), "-requests",
                                 str(REQUESTS)], stderr=subprocess.DEVNULL, env=ENV) for name, binary in builds.items()]
    for process in running:
        assert process.wait(600) == 0
    yield {name: sorted(directory.glob("*.pb.gz")) for name, directory in out.items()}


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
    assert f"OK: no function's self share grew significantly by 1.00% or more ({PROFILES} baseline" in done.stdout


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
