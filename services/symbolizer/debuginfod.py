"""A debuginfod client: servers tried in order, answers of "not found" remembered for a while.

debuginfod serves `GET /buildid/<hex>/debuginfo` (the file with DWARF) and `/executable` (the file
as loaded, whose program headers a `.debug` file lacks). A build ID no server has is cached as absent
for `negative_cache_s`, so every query over an old profile does not ask all servers again; a server
that fails (not a 404) is not cached as absent, and the failure is reported.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import httpx

from flamewatch.symbolizer.errors import DebuginfodError


@dataclass(frozen=True)
class Fetched:
    url: str  # the server that had it
    data: bytes


class DebuginfodClient:
    def __init__(self, urls: tuple[str, ...], timeout_s: float, negative_cache_s: float):
        self._urls = [u.rstrip("/") for u in urls]
        self._client = httpx.Client(timeout=timeout_s, follow_redirects=True)
        self._negative_s = negative_cache_s
        self._absent: dict[tuple[str, str], float] = {}  # (build id, kind) -> when to ask again
        self._lock = threading.Lock()
        self.requests = 0  # HTTP requests made, for tests and metrics

    @property
    def configured(self) -> bool:
        return bool(self._urls)

    def fetch(self, build_id: str, kind: str = "debuginfo") -> Fetched | None:
        """The file from the first server that has it; None when none has (cached as absent)."""
        if not self._urls or self._known_absent(build_id, kind):
            return None
        failures = []
        for url in self._urls:
            try:
                found = self._get(url, build_id, kind)
            except httpx.HTTPError as exc:
                failures.append(f"{url}: {exc}")
                continue
            if found is not None:
                return Fetched(url, found)
        if failures:
            raise DebuginfodError(f"debuginfod failed for build ID {build_id}: {'; '.join(failures)}")
        with self._lock:
            self._absent[(build_id, kind)] = time.monotonic() + self._negative_s
        return None

    def _known_absent(self, build_id: str, kind: str) -> bool:
        with self._lock:
            until = self._absent.get((build_id, kind))
            if until is not None and until < time.monotonic():
                del self._absent[(build_id, kind)]
                return False
            return until is not None

    def _get(self, url: str, build_id: str, kind: str) -> bytes | None:
        self.requests += 1
        response = self._client.get(f"{url}/buildid/{build_id}/{kind}")
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.content

    def close(self) -> None:
        self._client.close()
