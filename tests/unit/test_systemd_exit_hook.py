"""examples/oom-supervisor/record-exit.sh, the ExecStopPost= of the systemd example, with stand-ins for
`systemctl` (answering as systemd 248+ does) and `flamewatch` (writing down its arguments): what it records
for each $SERVICE_RESULT systemd sets."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[2] / "examples" / "oom-supervisor" / "record-exit.sh"
SYSTEMCTL = """#!/bin/sh
case "$3" in
  ExecMainStartTimestamp) echo @1764134400 ;;
  MemoryMax) echo 100663296 ;;
  NRestarts) echo 2 ;;
  ExecMainStatus) echo "$STATUS" ;;
esac
"""


def run_hook(tmp_path: Path, result: str, how: str, status: int) -> str:
    for name, text in {"systemctl": SYSTEMCTL, "flamewatch": f'#!/bin/sh\necho "$*" > {tmp_path}/args\n'}.items():
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "SERVICE_RESULT": result,
           "EXIT_CODE": how, "STATUS": str(status)}
    subprocess.run(["sh", str(HOOK), "leaky.service", "service_name=leaky", "instance=127.0.0.1:6060"],
                   env=env, check=True, timeout=30)
    return (tmp_path / "args").read_text().strip() if (tmp_path / "args").exists() else ""


@pytest.mark.parametrize(("result", "how", "status", "kind", "code"), [
    ("oom-kill", "killed", 9, "oom_kill", 137),
    ("exit-code", "exited", 3, "restart", 3),
    ("signal", "dumped", 11, "restart", 139),
])
def test_a_failed_run_is_recorded_with_its_kind_and_exit_code(tmp_path: Path, result, how, status, kind, code):
    assert run_hook(tmp_path, result, how, status) == (
        f"event --url http://127.0.0.1:8080 --kind {kind} --exit-code {code} --started 1764134400 "
        "--memory-limit 100663296 --restart-count 2 --key leaky.service/1764134400 "
        "--label service_name=leaky --label instance=127.0.0.1:6060")


def test_a_clean_exit_or_a_stop_records_nothing(tmp_path: Path):
    assert run_hook(tmp_path, "success", "exited", 0) == ""
