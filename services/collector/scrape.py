"""Scrape one profile of one target on a schedule, and remember how it went.

Each (target, profile) pair has its own loop. Loops start at an offset derived from the target, so the
scrapes of many targets spread over the interval instead of arriving together. A profile endpoint with
`delta: true` (CPU with `?seconds=N`) already returns the interval's data; any other endpoint whose
profile has cumulative values (Go's allocs, mutex, block) is stored as the difference from the previous
scrape of the same target: the first scrape only sets the base, and a counter reset starts over.
A heap endpoint with a fast interval changes pace as `heappace.py` decides from each scrape's in-use heap.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from prometheus_client import Counter, Histogram

from flamewatch.collector.heappace import HeapPace, inuse_bytes
from flamewatch.configreader import format_seconds
from flamewatch.labels.names import NAME_LABEL
from flamewatch.pprof import PprofError, Profile, decode, encode, split
from flamewatch.pprof.delta import subtract

log = logging.getLogger(__name__)

SCRAPES = Counter("flamewatch_collector_scrapes", "Profile scrapes", ["job", "result"])
SCRAPE_SECONDS = Histogram("flamewatch_collector_scrape_seconds", "Time a scrape took", ["job"])

Deliver = Callable[[dict[str, str], bytes], None]
MemoryLimit = Callable[[dict[str, str]], int]  # a target's discovered labels -> its container's limit (0: none)


@dataclass(frozen=True)
class ScrapeTarget:
    """One profile endpoint of one target, with the labels its profiles get."""

    job: str
    profile_name: str  # process_cpu, memory, goroutine, mutex, block, ...
    url: str
    params: dict[str, list[str]]
    labels: dict[str, str]  # after relabeling; become the series labels
    discovered: dict[str, str]  # before relabeling, for the status page
    interval_s: float
    timeout_s: float  # for the request, beyond `seconds` of a delta profile
    delta: bool
    seconds: int | None = None
    fast_interval_s: float | None = None  # the heap's pace while it grows (`heappace.py`); None: never faster

    @property
    def key(self) -> str:
        return f"{self.job}|{self.url}|{sorted(self.params.items())}"


@dataclass
class ScrapeHealth:
    health: str = "unknown"  # up | down | unknown
    last_scrape_ns: int = 0
    last_duration_s: float = 0.0
    last_error: str = ""
    interval_s: float = 0.0  # the interval the loop scrapes at now (the job's, or the heap's fast one)


@dataclass
class ScrapeLoop:
    target: ScrapeTarget
    client: httpx.AsyncClient
    deliver: Deliver
    limit: asyncio.Semaphore | None = None  # shared bound on concurrent scrapes
    memory_limit: MemoryLimit | None = None  # of the target's container, for the heap's pace
    health: ScrapeHealth = field(default_factory=ScrapeHealth)
    _previous: Profile | None = None
    _cumulative: list[int] | None = None  # value columns to difference; learnt from the first scrape
    _pace: HeapPace | None = None

    def __post_init__(self) -> None:
        t = self.target
        self.health.interval_s = t.interval_s
        if t.fast_interval_s:
            self._pace = HeapPace(t.interval_s, t.fast_interval_s)

    def offset_s(self) -> float:
        """A stable position within the interval for this target, so targets spread out."""
        digest = hashlib.blake2b(self.target.key.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2**64 * self.target.interval_s

    async def run(self) -> None:
        await asyncio.sleep(self.offset_s())
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            await self.scrape_once()
            next_at += self.health.interval_s
            await asyncio.sleep(max(0.0, next_at - loop.time()))

    async def scrape_once(self) -> None:
        started, wall = time.perf_counter(), time.time_ns()
        try:
            raw = await self._fetch()
            profile = decode(raw) if self._decodes() else None
            stored = self._to_store(raw, profile)
            if stored is not None:
                self.deliver({**self.target.labels, NAME_LABEL: self.target.profile_name}, stored)
            if self._pace is not None:
                self._pace_after(profile if profile is not None else decode(raw))
            self._record(wall, started, "")
        except (httpx.HTTPError, PprofError, ScrapeError) as exc:
            self._record(wall, started, _describe(exc))

    async def _fetch(self) -> bytes:
        t = self.target
        params = {**t.params, **({"seconds": str(t.seconds)} if t.seconds else {})}
        timeout = t.timeout_s + (t.seconds or 0)
        if self.limit is None:
            response = await self.client.get(t.url, params=params, timeout=timeout)
        else:
            async with self.limit:
                response = await self.client.get(t.url, params=params, timeout=timeout)
        if response.status_code != 200:
            raise ScrapeError(f"HTTP {response.status_code} from {response.url}: {response.text[:200].strip()}")
        return response.content

    def _decodes(self) -> bool:
        """Whether the scrape must be decoded to be stored: a gauge-only endpoint stays one, and a delta
        endpoint's profile is already the interval's."""
        return not self.target.delta and self._cumulative != []

    def _to_store(self, raw: bytes, profile: Profile | None) -> bytes | None:
        """The bytes to send: as scraped, or the increase since the previous scrape (None at first)."""
        if profile is None:
            return raw
        columns = [i for i, t in enumerate(split(profile)) if not t.profile_type.is_gauge]
        self._cumulative = columns
        if not columns:
            return raw
        previous, self._previous = self._previous, profile
        if previous is None:
            return None
        increase, reset = subtract(profile, previous, columns)
        if reset:
            log.info("%s %s: counters went down (the process restarted); storing this scrape as it is",
                     self.target.job, self.target.url)
        return raw if reset else encode(increase)

    def _pace_after(self, profile: Profile) -> None:
        inuse = inuse_bytes(profile)
        if inuse is None or self._pace is None:
            return
        limit = self.memory_limit(self.target.discovered) if self.memory_limit else 0
        change = self._pace.observe(time.monotonic(), inuse, limit)
        self.health.interval_s = self._pace.interval_s
        if change:
            log.info("%s %s: %s; scraping it every %s", self.target.job, self.target.url, change,
                     format_seconds(self.health.interval_s))

    def _record(self, wall_ns: int, started: float, error: str) -> None:
        h = self.health
        h.last_scrape_ns, h.last_duration_s = wall_ns, time.perf_counter() - started
        h.health, h.last_error = ("down", error) if error else ("up", "")
        SCRAPES.labels(self.target.job, "error" if error else "ok").inc()
        SCRAPE_SECONDS.labels(self.target.job).observe(h.last_duration_s)
        if error:
            log.debug("scrape of %s failed: %s", self.target.url, error)


class ScrapeError(Exception):
    """The target answered, but not with a profile."""


def _describe(exc: Exception) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out: {type(exc).__name__}"
    return str(exc) or type(exc).__name__
