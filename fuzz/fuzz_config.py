"""Fuzz target: the YAML configuration loader (`flamewatch.collector.config.load_config`).

An input is the file's bytes, written to a temporary file and loaded as the CLI loads it. Expected:
`ConfigError` (its message names the YAML path, or the YAML syntax problem).

Checks on a configuration that loads: every job's timeout is positive and within its interval, and
every enabled delta endpoint profiles for at least one second.
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

import atheris
from harness import check, main

with atheris.instrument_imports(include=["flamewatch", "yaml"]):
    from flamewatch.collector.config import ConfigError, load_config

EXPECTED = (ConfigError,)
PATH = Path(tempfile.mkdtemp(prefix="flamewatch-fuzz-")) / "flamewatch.yaml"


def target(data: bytes) -> None:
    PATH.write_bytes(data)
    config = load_config(PATH)
    for job in config.scrape_configs:
        check(math.isfinite(job.scrape_interval_s) and job.scrape_interval_s > 0, f"interval {job.scrape_interval_s}")
        check(0 < job.scrape_timeout_s <= job.scrape_interval_s, f"timeout {job.scrape_timeout_s}")
        for name, endpoint in job.profiling_config.endpoints().items():
            check(not endpoint.delta or (endpoint.seconds or 0) >= 1, f"{name}: delta without seconds")


if __name__ == "__main__":
    main("config", target, EXPECTED)
    sys.exit(0)
