"""Scrape loops against real Go targets: what is delivered, with which labels, and target health."""

import asyncio
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from flamewatch.collector.scrape import ScrapeLoop, ScrapeTarget
from flamewatch.pprof import decode, split

LABELS = {"job": "demo", "instance": "x", "service_name": "demo"}


def target(addr: str, name: str, path: str, *, delta: bool = False, seconds: int | None = None,
           timeout_s: float = 5.0) -> ScrapeTarget:
    return ScrapeTarget(job="demo", profile_name=name, url=f"http://{addr}{path}", params={}, labels=LABELS,
                        discovered={"__address__": addr}, interval_s=10.0, timeout_s=timeout_s, delta=delta,
                        seconds=seconds)


async def scrape(loop_target: ScrapeTarget, times: int, pause_s: float = 0.0):
    delivered = []
    async with httpx.AsyncClient() as client:
        loop = ScrapeLoop(loop_target, client, lambda labels, raw: delivered.append((labels, raw)))
        for i in range(times):
            await loop.scrape_once()
            if i + 1 < times:
                await asyncio.sleep(pause_s)
    return loop, delivered


@pytest.mark.go
def test_cumulative_profiles_are_sent_as_increases_from_the_second_scrape(go_target):
    loop, delivered = asyncio.run(scrape(target(go_target, "memory", "/debug/pprof/allocs"), 3, pause_s=1.0))
    assert loop.health.health == "up"
    assert len(delivered) == 2  # the first scrape only sets the base
    for labels, raw in delivered:
        assert labels == {**LABELS, "__name__": "memory"}
        types = {t.profile_type.sample_type: t.total for t in split(decode(raw), "memory")}
        assert types["alloc_space"] > 0
        assert types["inuse_space"] > 0  # a gauge: sent as scraped, not as a difference


@pytest.mark.go
def test_delta_and_gauge_endpoints_are_sent_as_scraped(go_target):
    _, cpu = asyncio.run(scrape(target(go_target, "process_cpu", "/debug/pprof/profile", delta=True, seconds=1), 1))
    _, goroutines = asyncio.run(scrape(target(go_target, "goroutine", "/debug/pprof/goroutine"), 1))
    assert len(cpu) == len(goroutines) == 1
    cpu_profile = decode(cpu[0][1])
    assert 0.5e9 < cpu_profile.duration_nanos < 3e9
    assert split(decode(goroutines[0][1]))[0].total > 5


def test_a_down_target_is_marked_down_quickly():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket closes
    started = time.perf_counter()
    loop, delivered = asyncio.run(scrape(target(f"127.0.0.1:{port}", "goroutine", "/debug/pprof/goroutine"), 1))
    assert time.perf_counter() - started < 2
    assert (loop.health.health, delivered) == ("down", [])
    assert "connect" in loop.health.last_error.lower()


class _Slow(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the handler protocol's name
        time.sleep(3)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.mark.go
def test_a_slow_target_times_out_without_delaying_the_others(go_target):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    slow = target(f"127.0.0.1:{server.server_address[1]}", "goroutine", "/debug/pprof/goroutine", timeout_s=1.0)
    fast = target(go_target, "goroutine", "/debug/pprof/goroutine")

    async def both():
        async with httpx.AsyncClient() as client:
            done = {}

            async def one(name, t):
                loop = ScrapeLoop(t, client, lambda labels, raw: None)
                await loop.scrape_once()
                done[name] = (time.perf_counter(), loop.health)

            started = time.perf_counter()
            await asyncio.gather(one("slow", slow), one("fast", fast))
            return started, done

    try:
        started, done = asyncio.run(both())
    finally:
        server.shutdown()
        server.server_close()
    assert done["fast"][1].health == "up"
    assert done["fast"][0] - started < 0.8
    assert (done["slow"][1].health, done["slow"][1].last_error) == ("down", "timed out: ReadTimeout")


def test_an_answer_that_is_not_a_profile_is_an_error():
    class NotFound(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(404)
            self.end_headers()
            self.wfile.write(b"404 page not found\n")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        addr = f"127.0.0.1:{server.server_address[1]}"
        loop, delivered = asyncio.run(scrape(target(addr, "goroutine", "/debug/pprof/goroutine"), 1))
    finally:
        server.shutdown()
        server.server_close()
    assert delivered == []
    assert loop.health.last_error == f"HTTP 404 from http://{addr}/debug/pprof/goroutine: 404 page not found"
