"""tests/targets/leaky under the OOM supervisor (`examples/oom-supervisor/supervise.py`), as the OOM-kill
test and benchmark run it: the supervisor's command, and a `flamewatch all` configuration that scrapes only
the program's heap."""

from __future__ import annotations

import sys
from pathlib import Path

from . import gotargets
from .cgroups import SUPERVISOR

SERVICE = "leaky"
CONFIG = """
scrape_configs:
  - job_name: leaky
    scrape_interval: {interval}s
    static_configs: [{{targets: ["{addr}"], labels: {{service_name: leaky}}}}]
    profiling_config:
      pprof_config:
        memory: {{path: /debug/pprof/heap, fast_scrape_interval: {fast}s}}
        process_cpu: {{enabled: false}}
        goroutine: {{enabled: false}}
        mutex: {{enabled: false}}
        block: {{enabled: false}}
"""


def heap_config(addr: str, interval_s: float, fast_s: float = 0) -> str:
    """Scrape the heap of the program at `addr` every `interval_s`, and nothing else; every `fast_s` while
    it grows (the collector's fast heap pace; 0: never faster)."""
    return CONFIG.format(addr=addr, interval=interval_s, fast=fast_s)


def labels(addr: str) -> dict[str, str]:
    """The labels its profiles carry under `heap_config`, which the supervisor posts with each event."""
    return {"service_name": SERVICE, "instance": addr}


def supervised(cgroup: str, limit: int, url: str, flamewatch: Path, addr: str, rate: int, max_restarts: int,
               ) -> list[str]:
    """The supervisor running the program on `addr` (fixed: a restarted program stays the same target),
    leaking `rate` bytes a second in the memory cgroup `cgroup` of `limit` bytes, `max_restarts` times.

    The program's file is read here first. The kernel charges a file's pages to the memory cgroup that first
    reads them: a program started cold in a small cgroup has its own code charged there, and near the limit
    the kernel reclaims that code and the program faults it back in, page after page, stalling for 10-30 s
    before the kill (measured after dropping the page cache: the last heap 28.6 s before the kill). A warm
    binary is what a restarted program has, and the stall is the kernel's, not what the test measures."""
    program = gotargets.build("leaky")
    program.read_bytes()
    return [sys.executable, str(SUPERVISOR), "--name", cgroup, "--memory-limit", str(limit), "--url", url,
            "--flamewatch", str(flamewatch), "--max-restarts", str(max_restarts),
            *[a for k, v in labels(addr).items() for a in ("--label", f"{k}={v}")], "--",
            str(program), "-addr", addr, "-rate", str(rate)]
