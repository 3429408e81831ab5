"""The web UI's figures, measured in headless chromium (Debian's, through Playwright): print, assert nothing.

    .venv/bin/python bench/ui.py --url http://localhost:8080      # against `make run` (or any Flamewatch)

1. bundle: the built UI's files, raw and gzipped (services/frontend/ui/dist).
2. open: from navigating to --url until the flamegraph of the last hour of --selector is drawn and its
   table filled (a fresh browser, so nothing is cached): median of --runs.
3. hover: synthetic CPU profiles (bench/profiles.py) are uploaded under service_name=ui-bench and shown
   with max_nodes=--nodes, and the pointer is moved across the flamegraph once per animation frame for
   --seconds. Two figures: the frame time, the main thread's work per frame (from the start of the
   frame's animation callback, where the pointer moves, to the first task after that frame was
   rendered: event handlers, React, style, layout and paint), median and 95th percentile; and the
   interval between frames, which a 60 Hz display caps at 16.7 ms however little a frame costs.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

from profiles import make_profile, make_program  # noqa: E402

DIST = ROOT / "services" / "frontend" / "ui" / "dist"
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Moves the pointer over the canvas once per frame; records each frame's work (until a task posted from
# the animation callback runs, which is after that frame's style, layout and paint) and the intervals.
HOVER_SCRIPT = """async (seconds) => {
  const canvas = document.querySelector('[data-testid=flamegraph-canvas]');
  const box = canvas.getBoundingClientRect();
  const gaps = [], work = [];
  const channel = new MessageChannel();
  let last = performance.now(), i = 0, started = 0;
  channel.port1.onmessage = () => work.push(performance.now() - started);
  const end = last + seconds * 1000;
  await new Promise((done) => {
    const frame = (now) => {
      gaps.push(now - last); last = now; i++;
      started = performance.now();
      const x = box.left + 5 + ((i * 37) % Math.max(1, box.width - 10));
      const y = box.top + 10 + ((i * 13) % Math.max(1, Math.min(box.height, 600) - 20));
      canvas.dispatchEvent(new MouseEvent('mousemove', {clientX: x, clientY: y, bubbles: true}));
      channel.port2.postMessage(0);
      if (now < end) requestAnimationFrame(frame); else setTimeout(done, 50);
    };
    requestAnimationFrame(frame);
  });
  return {gaps: gaps.slice(1), work: work.slice(1)};
}"""


# Time spent waiting for the API on the way to the flamegraph: the requests before the merge (profile
# types, services) run one after another, then the merge itself.
API_WAIT_SCRIPT = """() => {
  const entries = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/v1/'));
  const merge = entries.find((e) => e.name.includes('/api/v1/query?'));
  const before = entries.filter((e) => !e.name.includes('/api/v1/query') && e.responseEnd <= merge.startTime);
  return merge.responseEnd - merge.startTime + before.reduce((s, e) => s + e.responseEnd - e.startTime, 0);
}"""


def bundle() -> None:
    files = sorted(p for p in DIST.rglob("*") if p.is_file())
    raw = sum(p.stat().st_size for p in files)
    gz = sum(len(gzip.compress(p.read_bytes(), 9)) for p in files)
    print(f"bundle: {len(files)} files, {raw / 1024:.0f} KiB raw, {gz / 1024:.0f} KiB gzipped")
    for p in files:
        print(f"  {p.relative_to(DIST)}: {p.stat().st_size / 1024:.0f} KiB, "
              f"{len(gzip.compress(p.read_bytes(), 9)) / 1024:.0f} KiB gzipped")


def launch(playwright):
    return playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)


def wait_drawn(page, timeout_ms: int = 600_000) -> None:
    page.locator("[data-testid=flamegraph-canvas]").wait_for(timeout=timeout_ms)
    page.locator("[data-testid=top-table] tbody tr").first.wait_for(timeout=timeout_ms)


def open_time(playwright, url: str, selector: str, runs: int) -> None:
    times, api = [], []
    for _ in range(runs):
        browser = launch(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        start = time.monotonic()
        page.goto(url + "/?" + urlencode({"type": CPU, "query": selector, "from": "now-1h"}))
        wait_drawn(page)
        times.append(time.monotonic() - start)
        api.append(page.evaluate(API_WAIT_SCRIPT) / 1000)
        browser.close()
    print(f"open: page to drawn 1-hour flamegraph of {selector}: median {statistics.median(times):.2f} s "
          f"over {runs} runs ({', '.join(f'{t:.2f}' for t in times)}); of which waiting for the API's "
          f"answers (profile types, then the merge): median {statistics.median(api):.2f} s")


def upload_big(url: str, nodes: int) -> None:
    program = make_program(n_functions=6000, n_stacks=nodes, seed=11)
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for seed in range(4):
            path = Path(tmp) / f"cpu{seed}.pb.gz"
            path.write_bytes(make_profile(program, seed, n_samples=nodes, time_ns=time.time_ns()))
            files.append(str(path))
        subprocess.run([str(Path(sys.executable).with_name("flamewatch")), "upload", "--url", url, "--label",
                        "service_name=ui-bench", "--name", "process_cpu", *files], check=True)


def hover(playwright, url: str, nodes: int, seconds: float) -> None:
    upload_big(url, nodes)
    browser = launch(playwright)
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url + "/?" + urlencode({"type": CPU, "query": '{service_name="ui-bench"}', "from": "now-15m",
                                      "max_nodes": str(nodes)}))
    wait_drawn(page)
    shown = int(page.get_by_test_id("flamegraph-panel").get_attribute("data-nodes"))
    measured = page.evaluate(HOVER_SCRIPT, seconds)
    work, gaps = sorted(measured["work"]), sorted(measured["gaps"])
    print(f"hover: {shown} nodes drawn; frame time (work per frame) while hovering: median "
          f"{statistics.median(work):.1f} ms, p95 {percentile(work, 0.95):.1f} ms, max {work[-1]:.1f} ms; "
          f"interval between frames: median {statistics.median(gaps):.1f} ms, p95 {percentile(gaps, 0.95):.1f} ms "
          f"over {len(gaps)} frames")
    browser.close()


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://localhost:8080")
    parser.add_argument("--selector", default='{service_name="demo"}')
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=20_000, help="flamegraph nodes for the hover test (max_nodes)")
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    bundle()
    httpx.get(args.url + "/readyz", timeout=10).raise_for_status()
    with sync_playwright() as p:
        open_time(p, args.url, args.selector, args.runs)
        hover(p, args.url, args.nodes, args.seconds)


if __name__ == "__main__":
    main()
