"""`flamewatch all` whose object directory fills up leaves rotation (`/readyz` 503 naming the full
directory) while staying live, and comes back once space is freed."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest
from e2e.test_startup import start_all, stop
from infra import tmpfs
from infra.ports import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

WITHIN_S = 10  # readiness is checked at most every 2 s


def readyz(port: int, wanted: int, within_s: float = WITHIN_S) -> httpx.Response:
    """/readyz once it answers `wanted`, or its last answer after `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        response = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
        if response.status_code == wanted or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


def fill_until_not_ready(objects: Path, port: int) -> tuple[Path, str]:
    """Fill the disk until /readyz says so. A flush (of this process scraping itself) that raced the
    filling may fail after it and free its temporary file, giving the disk room again: then fill again."""
    for _ in range(5):
        filler = tmpfs.fill(objects)
        if (response := readyz(port, 503)).status_code == 503:
            return filler, response.text
    raise AssertionError(f"still ready on a full disk: {response.text}")


def test_all_is_not_ready_while_its_object_directory_is_full(embedded_workdir: Path) -> None:
    http_port = free_port()
    with tmpfs.mounted(embedded_workdir / "data" / "objects", "4m") as objects:
        process = start_all(embedded_workdir, http_port, free_port())
        try:
            filler, reasons = fill_until_not_ready(objects, http_port)
            assert re.fullmatch(rf"not ready: data disk: {re.escape(str(objects))} is full: \d+(\.\d)? (B|KiB) free "
                                r"of 4\.0 MiB \(under 41\.0 KiB\); free some space on it", reasons), reasons
            assert httpx.get(f"http://127.0.0.1:{http_port}/healthz", timeout=10).status_code == 200
            filler.unlink()
            assert readyz(http_port, 200).status_code == 200
        finally:
            assert stop(process) == 0, (embedded_workdir / "all.log").read_text()
