"""Where a query's time goes: the querier's own CPU profile (`/debug/pprof/profile?seconds=N`, a
sampler over its Python threads) taken while the query repeats, kept next to the results and summed
up by `go tool pprof -top`."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

TOP_LINES = 14


def profile_while(url: str, seconds: int, work: Callable[[], object], out: Path) -> str:
    """Repeat `work()` for `seconds` while the service at `url` profiles itself; write the profile to
    `out` and return the head of its `-top` table (by cumulative time)."""
    result: dict[str, bytes] = {}

    def fetch() -> None:
        response = httpx.get(f"{url}/debug/pprof/profile", params={"seconds": str(seconds)}, timeout=seconds + 120)
        response.raise_for_status()
        result["profile"] = response.content

    thread = threading.Thread(target=fetch)
    thread.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        work()
    thread.join()
    out.write_bytes(result["profile"])
    return top(out)


def top(path: Path) -> str:
    go = shutil.which("go")
    if go is None:
        return "(no `go` on PATH for go tool pprof -top)"
    done = subprocess.run([go, "tool", "pprof", "-symbolize=none", "-top", "-cum", f"-nodecount={TOP_LINES}",
                           str(path)], capture_output=True, text=True, timeout=300)
    return done.stdout if done.returncode == 0 else done.stderr
