"""Waiting for a condition a server will come to meet, and for a server to stop; shared by the tests and
the benchmarks."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import httpx

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout_s: float, what: str, log: Path | None = None,
             process: subprocess.Popen | None = None, interval_s: float = 0.5) -> T:
    """`check()`'s first truthy result; an HTTP error counts as "not yet". Fails with `what` (and the tail
    of `log`) after `timeout_s`, or at once when `process` exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"exited with {process.returncode} while waiting for {what}{_tail(log)}")
        try:
            result = check()
        except httpx.HTTPError:
            result = None
        if result:
            return result
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}{_tail(log)}")


def answers(url: str) -> bool:
    """Whether `url` answers 200."""
    return httpx.get(url, timeout=1).status_code == 200


def _tail(log: Path | None) -> str:
    return f"\n{log.read_text(errors='replace')[-4000:]}" if log else ""


def terminate(process: subprocess.Popen, timeout_s: float) -> None:
    """SIGTERM the process and wait for it to exit; SIGKILL it if it is still there after `timeout_s`."""
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
