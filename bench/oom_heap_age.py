"""How old the last heap profile is when a leaking program is killed, with and without the collector's
fast heap pace, and what the fast pace costs.

    .venv/bin/python bench/oom_heap_age.py [--minutes 4] [--rate-mib 0.5] [--interval 15] [--fast 5]

Starts `tests/targets/leaky` (leaking `--rate-mib` MiB a second into main.leakIntoCache, with Go's
default GOGC, so its heap profile changes only at each collection) and runs two of the collector's own
scrape loops (`flamewatch.collector.scrape.ScrapeLoop`) against its `/debug/pprof/allocs` in one
process: one at the job's interval only, one with the fast pace (`heappace.py`). Every scrape is timed.
A kill may come at any moment of the second half of the run, when the heap holds more than half of
what it reaches: for every 0.1 s of that window, the age of each loop's last scrape before it. Prints
the median, 95th percentile and maximum age, the scrapes each loop made (the extra cost), and the
collector's CPU for one heap reading (decoding the profile, which it does anyway for the allocation
deltas, and summing `inuse_space`). Writes `bench/results/<UTC time>-oom-heap-age.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from infra import gotargets  # noqa: E402

from flamewatch.collector.heappace import inuse_bytes  # noqa: E402
from flamewatch.collector.scrape import ScrapeLoop, ScrapeTarget  # noqa: E402
from flamewatch.pprof import decode  # noqa: E402

LOOPS = ("job interval only", "fast pace")


def _loop(name: str, url: str, client: httpx.AsyncClient, args, times: list[float]) -> ScrapeLoop:
    target = ScrapeTarget(job=name, profile_name="memory", url=url, params={}, labels={}, discovered={},
                          interval_s=args.interval, timeout_s=10.0, delta=False,
                          fast_interval_s=args.fast if name == "fast pace" else None)
    loop = ScrapeLoop(target, client, lambda labels, raw: None)
    scrape = loop.scrape_once

    async def timed() -> None:
        await scrape()
        times.append(time.monotonic())

    loop.scrape_once = timed  # type: ignore[method-assign]
    return loop


async def _measure(url: str, args) -> tuple[dict[str, list[float]], float, float]:
    times: dict[str, list[float]] = {name: [] for name in LOOPS}
    async with httpx.AsyncClient() as client:
        started = time.monotonic()
        tasks = [asyncio.create_task(_loop(name, url, client, args, times[name]).run()) for name in LOOPS]
        await asyncio.sleep(args.minutes * 60)
        ended = time.monotonic()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return times, started, ended


def _ages(scrapes: list[float], start: float, end: float) -> np.ndarray:
    kills = np.arange(start, end, 0.1)
    done = np.asarray(sorted(scrapes))
    before = np.searchsorted(done, kills, side="right") - 1
    kills, before = kills[before >= 0], before[before >= 0]
    return kills - done[before]


def _reading_cost(url: str) -> tuple[float, int, int]:
    raw = httpx.get(url, timeout=10).content
    n = 50
    t0 = time.perf_counter()
    for _ in range(n):
        inuse = inuse_bytes(decode(raw))
    return (time.perf_counter() - t0) / n, len(raw), inuse or 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=4.0)
    parser.add_argument("--rate-mib", type=float, default=0.5)
    parser.add_argument("--interval", type=float, default=15.0)
    parser.add_argument("--fast", type=float, default=5.0)
    args = parser.parse_args()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, gotargets.GoTarget(
            gotargets.build("leaky"), Path(tmp) / "leaky.log", ("-rate", str(int(args.rate_mib * 2**20)))) as leaky:
        url = f"http://{leaky.addr}/debug/pprof/allocs"
        times, started, ended = asyncio.run(_measure(url, args))
        reading_s, size, inuse = _reading_cost(url)
    window = (started + ended) / 2, ended
    rows = []
    for name in LOOPS:
        ages = _ages(times[name], *window)
        rows.append(f"| {name} | {len(times[name])} | {np.median(ages):.1f} s | {np.percentile(ages, 95):.1f} s | "
                    f"{ages.max():.1f} s | {'yes' if ages.max() <= 10 else 'NO'} |")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    report = "\n".join([
        f"# Heap age at an OOM kill, {time.strftime('%Y-%m-%dT%H%M%SZ', time.gmtime())}", "",
        f"Commit {commit.stdout.strip()}, {os.cpu_count()} cores, shared with other work: load average "
        f"{[round(x, 2) for x in load_start]} at the start, {[round(x, 2) for x in os.getloadavg()]} at the end.", "",
        f"tests/targets/leaky leaking {args.rate_mib} MiB/s for {args.minutes} minutes (Go's default GOGC; "
        f"{inuse / 2**20:.0f} MiB in use at the end); job interval {args.interval:g} s, fast pace "
        f"{args.fast:g} s; a kill at any 0.1 s of the second half of the run.", "",
        "| scrape loop | heap scrapes | age of the last heap at a kill: median | 95th percentile | max | "
        "goal <= 10 s |",
        "|---|---|---|---|---|---|", *rows, "",
        f"Collector CPU per heap reading (decode of a {size}-byte allocs profile and the `inuse_space` sum): "
        f"{reading_s * 1e3:.2f} ms. Extra heap scrapes of the fast pace over the run: "
        f"{len(times[LOOPS[1]]) / max(1, len(times[LOOPS[0]])):.1f}x.", ""])
    print(report)
    out = ROOT / "bench" / "results" / f"{time.strftime('%Y-%m-%dT%H%M%SZ', time.gmtime())}-oom-heap-age.md"
    out.write_text(report)
    print(f"written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
