"""Where a query's time goes: the querier's own CPU profile (`/debug/pprof/profile?seconds=N`, a
sampler over its Python threads) taken while the query repeats, kept next to the results and summed
up by `go tool pprof -top`: by self time, and by cumulative time over Flamewatch's own frames (the
event loop and thread frames above them would head a plain cumulative list)."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

TOP_LINES = 12
OWN_FRAMES = r"flamewatch\.(querier|storage|pprof|labels)"


def profile_while(url: str, seconds: int, work: Callable[[], object], out: Path) -> str:
    """Repeat `work()` for `seconds` while the service at `url` profiles itself; write the profile to
    `out` and return the heads of its `-top` tables."""
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
    by_self = _pprof(path, ["-top"])
    by_cum = _pprof(path, ["-top", "-cum", f"-show={OWN_FRAMES}"])
    return f"{by_self.strip()}\n\n{by_cum.strip()}"


def _pprof(path: Path, flags: list[str]) -> str:
    go = shutil.which("go")
    if go is None:
        return "(no `go` on PATH for go tool pprof)"
    done = subprocess.run([go, "tool", "pprof", "-symbolize=none", *flags, f"-nodecount={TOP_LINES}", str(path)],
                          capture_output=True, text=True, timeout=300)
    return done.stdout if done.returncode == 0 else done.stderr
