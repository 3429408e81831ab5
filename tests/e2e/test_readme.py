"""The README's shell blocks, run as a user pastes them.

A block preceded by `<!-- readme-test: NAME -->` is run by bash with `set -euo pipefail`, so any command
that fails (curl is written with `-f`) fails the test. Each block runs in a network namespace of its own,
so the README's fixed ports (8080, 6060, 4100, ...) are free whatever else runs on this machine, from a
fresh directory holding links to the checkout's `.venv`, `.cache` and `examples`; `make` runs in the
checkout. The `make-run` block runs against `make run`, started first and given the minute the README
asks for; the `split` block starts its own services.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from infra import readme

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.go, pytest.mark.root]  # unshare --net

ROOT = Path(__file__).resolve().parents[2]
RUN_S = 300

# What runs before a block: for `make-run`, `make run` in the background, and the wait a reader does.
SETUP = {
    "make-run": """
make -C {root} run > make-run.log 2>&1 &
curl -fsS --retry 60 --retry-connrefused --retry-delay 1 -o /dev/null localhost:8080/readyz
grep -q "Flamewatch is ready: open http://localhost:8080" make-run.log
for _ in $(seq 60); do  # the README's "within a minute": the demo's first CPU profile
  curl -fsSG localhost:8080/api/v1/query -d from=now-5m -d format=top \\
    --data-urlencode 'query=process_cpu:cpu:nanoseconds:cpu:nanoseconds{{service_name="demo"}}' \\
    2>/dev/null | grep -q main.cpuFibonacci && break
  sleep 2
done
""",
    "split": "",
}
# What a block's output must show: that the answers carried data, not just that the commands succeeded.
EXPECTED = {
    "make-run": ['"health":"up"', "main.cpuFibonacci", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"],
    "split": ['"uploaded"', '"posted"', '"demo"', "main.allocChurn", "flat%", "main.cpuFibonacci",
              '"scrapePool":"demo"'],
}


def test_the_readme_names_its_tested_blocks():
    assert sorted(readme.blocks()) == sorted([*SETUP, *readme.ELSEWHERE])


def script(name: str, block: str, workdir: Path) -> str:
    block = re.sub(r"^make ", f"make -C {ROOT} ", block, flags=re.M)
    return "\n".join([
        "set -euo pipefail",
        "ip link set lo up",
        f"cd {workdir}",
        SETUP[name].format(root=ROOT),
        "set -x",
        block,
    ])


def run_in_namespace(text: str, workdir: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """bash in a new network namespace and session; whatever it leaves running is stopped after."""
    path = workdir / "block.sh"
    path.write_text(text)
    with (workdir / "out.log").open("wb") as out:
        process = subprocess.Popen(["unshare", "--net", "bash", str(path)], cwd=workdir, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = process.wait(RUN_S)
        finally:
            _stop_group(process.pid)
    return subprocess.CompletedProcess(process.args, code, (workdir / "out.log").read_text(), "")


def _stop_group(pgid: int) -> None:
    """SIGTERM first, so Flamewatch stops its embedded Postgres; SIGKILL what is left."""
    for sig, wait_s in ((signal.SIGTERM, 30), (signal.SIGKILL, 5)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


@pytest.mark.parametrize("name", sorted(SETUP))
def test_readme_block_runs_as_written(name: str, tmp_path: Path):
    block = readme.blocks()[name]
    for link in (".venv", ".cache", "examples"):
        (tmp_path / link).symlink_to(ROOT / link)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLAMEWATCH_")}
    env["FLAMEWATCH_DATA_DIR"] = str(tmp_path / "data")  # make run's data, kept out of the checkout
    result = run_in_namespace(script(name, block, tmp_path), tmp_path, env)
    logs = "\n".join(f"---- {p.name}\n{p.read_text(errors='replace')[-5000:]}" for p in tmp_path.glob("*.log")
                     if p.name != "out.log")
    assert result.returncode == 0, f"{result.stdout[-8000:]}\n{logs}"
    missing = [text for text in EXPECTED[name] if text not in result.stdout]
    assert not missing, f"the output lacks {missing}:\n{result.stdout[-8000:]}\n{logs}"
    assert (tmp_path / "data" / "postgres").is_dir(), "the data did not go where it was asked to"
