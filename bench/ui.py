"""The web UI's figures (issue 23), measured in Debian's headless chromium through Playwright and written to
bench/results/<stamp>-ui.md and .json. Figures only: the issue names no goals for them.

    make bench-ui                                                # starts what `make run` starts, on free ports
    .venv/bin/python bench/ui.py --url http://localhost:8080     # against a Flamewatch already running

Without --url it starts what `make run` starts: the demo Go program (tests/targets/workload, which make
builds into .cache/targets/) and `flamewatch all` on examples/flamewatch.yaml (the demo and Flamewatch
itself scraped every 10 s), on free ports with its data in a temporary directory. It waits until the
demo's CPU flamegraph of the last hour merges --scrapes profiles (3, about 40 s after the start), measures,
and stops both, on Ctrl-C and errors too. A few scrapes are enough for the page's 1-hour view: the page
asks for the same requests whatever the hour holds, and merging a full hour of the demo (360 profiles) on
a warm querier is tens of milliseconds of the open time (bench-connect: 23 ms for 240 of them).

1. bundle: the built UI's files (services/frontend/ui/dist), raw and each gzipped at level 9 (Flamewatch
   serves them uncompressed; gzipped is what a compressing proxy would send).
2. open: from the start of the navigation to the animation frame in which the flamegraph of the last
   hour of --selector has paint on its canvas and its top table has rows, read in the page (to within a
   frame); a fresh browser each run, so nothing is cached: median of --runs.
3. hover: synthetic CPU profiles (bench/profiles.py) are uploaded under service_name=ui-bench and shown
   with max_nodes=--nodes, and the pointer is moved across the flamegraph once per animation frame for
   --seconds. Two figures: the frame time, the main thread's work per frame (from the start of the
   frame's animation callback, where the pointer moves, to the first task after that frame was
   rendered: event handlers, React, style, layout and paint), median and 95th percentile; and the
   interval between frames, which a 60 Hz display caps at 16.7 ms however little a frame costs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

import allinone  # noqa: E402
import report  # noqa: E402
from demo_cost import config_for  # noqa: E402
from infra.gotargets import GoTarget  # noqa: E402
from infra.ports import free_port  # noqa: E402
from infra.waiting import wait_for  # noqa: E402
from profiles import make_profile, make_program  # noqa: E402
from report import Row  # noqa: E402

DIST = ROOT / "services" / "frontend" / "ui" / "dist"
WORKLOAD = ROOT / ".cache" / "targets" / "workload"
CHROMIUM = "/usr/bin/chromium"
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
DATA_TIMEOUT_S = 300
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Polled once per animation frame: the time since the navigation started once the flamegraph's canvas has
# paint on its root row (the draw happens in an animation frame after React renders the canvas element,
# which is blank until then) and the top table beside it has rows.
DRAWN_SCRIPT = """() => {
  const canvas = document.querySelector('[data-testid=flamegraph-canvas]');
  if (!canvas || !document.querySelector('[data-testid=top-table] tbody tr')) return false;
  const y = Math.min(canvas.height - 1, Math.round(10 * devicePixelRatio));
  const alpha = canvas.getContext('2d').getImageData(canvas.width >> 1, y, 1, 1).data[3];
  return alpha > 0 ? performance.now() : false;
}"""
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


@dataclasses.dataclass
class Bench:
    """One run's settings, its rows and details, and the raw numbers behind them for the JSON."""

    args: argparse.Namespace
    progress: report.Progress = dataclasses.field(default_factory=report.Progress)
    rows: list[Row] = dataclasses.field(default_factory=list)
    raw: dict[str, object] = dataclasses.field(default_factory=dict)
    chromium: str = ""

    def add(self, row: Row, detail: str) -> None:
        self.rows.append(row)
        self.progress.detail(detail)


# ------------------------------------------------------------------------------------ what it measures


def bundle(bench: Bench) -> None:
    files = sorted(p for p in DIST.rglob("*") if p.is_file())
    sizes = {str(p.relative_to(DIST)): (p.stat().st_size, len(gzip.compress(p.read_bytes(), 9))) for p in files}
    raw, gz = (sum(s[i] for s in sizes.values()) for i in (0, 1))
    per_file = ", ".join(f"{name} {r / 1024:.0f} KiB ({g / 1024:.0f} KiB gzipped)" for name, (r, g) in sizes.items())
    bench.raw["bundle_files"] = {name: {"raw_bytes": r, "gzip_bytes": g} for name, (r, g) in sizes.items()}
    bench.add(Row(f"built UI ({len(files)} files), raw / gzipped", "-", f"{raw / 1024:.0f} KiB / {gz / 1024:.0f} KiB",
                  None, {"raw_bytes": raw, "gzip_bytes": gz}),
              f"bundle: {raw / 1024:.0f} KiB raw, {gz / 1024:.0f} KiB gzipped: {per_file}")


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)


@contextlib.contextmanager
def fresh_page(playwright) -> Iterator[object]:
    """A page at 1280x800 in a browser of its own; an error thrown in the page fails the bench."""
    browser = launch(playwright)
    errors: list[str] = []
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield page
    finally:
        browser.close()
    if errors:
        raise SystemExit(f"errors in the page: {errors}")


def drawn_ms(page, timeout_ms: int = 600_000) -> float:
    """Milliseconds from the navigation's start to the frame in which the flamegraph was seen drawn."""
    return page.wait_for_function(DRAWN_SCRIPT, polling="raf", timeout=timeout_ms).json_value()


def explore_url(url: str, selector: str, since: str, **extra: str) -> str:
    return url + "/?" + urlencode({"type": CPU, "query": selector, "from": since, **extra})


def open_time(bench: Bench, playwright, url: str) -> None:
    selector, runs = bench.args.selector, bench.args.runs
    times, api, nodes = [], [], 0
    ticks = cpu_ticks()
    for _ in range(runs):
        with fresh_page(playwright) as page:
            page.goto(explore_url(url, selector, "now-1h"))
            times.append(drawn_ms(page) / 1000)
            api.append(page.evaluate(API_WAIT_SCRIPT) / 1000)
            nodes = int(page.get_by_test_id("flamegraph-panel").get_attribute("data-nodes"))
    busy, profiles = busy_cores(ticks), merged_profiles(url, selector)
    bench.raw.update(open_s=times, open_api_wait_s=api, open_busy_cores=busy)
    median, spread = statistics.median(times), f"{min(times):.2f}-{max(times):.2f} s"
    bench.add(Row(f"page to a drawn 1-hour CPU flamegraph of `{selector}` ({profiles} profiles, {nodes} nodes), "
                  "fresh browser", "-", f"{median:.2f} s ({spread}, median of {runs})", None,
                  {"median_s": median, "profiles": profiles, "nodes": nodes},
                  f"waiting for the API's answers: median {statistics.median(api):.2f} s; {busy:.1f} cores busy"),
              f"open: {', '.join(f'{t:.2f}' for t in times)} s; of which waiting for the API's answers "
              f"(profile types, then the merge): {', '.join(f'{t:.2f}' for t in api)} s; the machine's cores "
              f"busy meanwhile (browsers starting included): {busy:.2f} of {os.cpu_count()}")


def merged_profiles(url: str, selector: str) -> int:
    """How many profiles the flamegraph of the last hour of `selector` merges (0 while there are none)."""
    r = httpx.get(url + "/api/v1/query", params={"query": CPU + selector, "from": "now-1h", "format": "top",
                                                 "max_nodes": "100"}, timeout=30)
    return int(r.json().get("profiles", 0)) if r.status_code == 200 else 0


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


def hover(bench: Bench, playwright, url: str) -> None:
    upload_big(url, bench.args.nodes)
    with fresh_page(playwright) as page:
        page.goto(explore_url(url, '{service_name="ui-bench"}', "now-15m", max_nodes=str(bench.args.nodes)))
        drawn_ms(page)
        shown = int(page.get_by_test_id("flamegraph-panel").get_attribute("data-nodes"))
        ticks = cpu_ticks()
        measured = page.evaluate(HOVER_SCRIPT, bench.args.seconds)
        busy = busy_cores(ticks)
    work, gaps = sorted(measured["work"]), sorted(measured["gaps"])
    bench.raw.update(hover_work_ms=[round(w, 2) for w in measured["work"]],
                     hover_gaps_ms=[round(g, 2) for g in measured["gaps"]])
    over = f"{len(gaps)} frames in {bench.args.seconds:g} s, {busy:.1f} cores busy"
    bench.raw["hover_busy_cores"] = busy
    bench.add(Row(f"hovering a {shown:,}-node flamegraph: main-thread work per frame, median / p95", "-",
                  f"{statistics.median(work):.1f} ms / {percentile(work, 0.95):.1f} ms", None,
                  {"median_ms": statistics.median(work), "p95_ms": percentile(work, 0.95), "max_ms": work[-1],
                   "nodes": shown}, f"max {work[-1]:.1f} ms, {over}"),
              f"hover: {shown:,} nodes drawn; work per frame median {statistics.median(work):.1f} ms, p95 "
              f"{percentile(work, 0.95):.1f} ms, max {work[-1]:.1f} ms over {len(gaps)} frames; the machine's "
              f"cores busy meanwhile (this browser included): {busy:.2f} of {os.cpu_count()}")
    bench.add(Row("... interval between frames while hovering, median / p95", "-",
                  f"{statistics.median(gaps):.1f} ms / {percentile(gaps, 0.95):.1f} ms", None,
                  {"median_ms": statistics.median(gaps), "p95_ms": percentile(gaps, 0.95)},
                  "a 60 Hz display caps it at 16.7 ms"),
              f"hover: interval between frames median {statistics.median(gaps):.1f} ms, p95 "
              f"{percentile(gaps, 0.95):.1f} ms, max {gaps[-1]:.1f} ms")


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def cpu_ticks() -> tuple[int, int]:
    """The machine's busy and total CPU time since boot, in ticks (/proc/stat; idle and iowait not busy)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def busy_cores(since: tuple[int, int]) -> float:
    """How many of the machine's cores were busy on average since `since` (cpu_ticks()): every process's
    work, the browser's and Flamewatch's too, so a shared machine shows as more than those."""
    busy, total = cpu_ticks()
    return (os.cpu_count() or 1) * (busy - since[0]) / max(1, total - since[1])


# ------------------------------------------------------------------------------------ what `make run` starts


@contextlib.contextmanager
def demo_flamewatch(bench: Bench) -> Iterator[str]:
    """The demo program and `flamewatch all` on examples/flamewatch.yaml, on free ports, with data in a
    temporary directory; the URL once the demo's last hour holds --scrapes CPU profiles. Both are stopped
    when the block exits, however it exits."""
    if not WORKLOAD.exists():
        raise SystemExit(f"{WORKLOAD} is missing: run `make bench-ui` (or `make deps`)")
    allinone.become_subreaper()  # the embedded Postgres, daemonised by pg_ctl, is reaped here once stopped
    with tempfile.TemporaryDirectory(prefix="flamewatch-bench-ui-") as tmp:
        work = Path(tmp)
        with GoTarget(WORKLOAD, work / "demo.log") as demo:
            node = start_flamewatch(work, demo.addr)
            try:
                bench.progress.say(f"flamewatch all at {node.url} scraping the demo at {demo.addr}; waiting for "
                                   f"{bench.args.scrapes} CPU profiles of its last hour")
                wait_for(lambda: merged_profiles(node.url, bench.args.selector) >= bench.args.scrapes,
                         DATA_TIMEOUT_S, f"{bench.args.scrapes} CPU profiles of the demo", work / "flamewatch.log",
                         node.process, interval_s=2)
                bench.progress.say(f"{merged_profiles(node.url, bench.args.selector)} CPU profiles of the demo stored")
                yield node.url
            finally:
                allinone.stop(node)


def start_flamewatch(work: Path, demo: str) -> allinone.AllInOne:
    """`flamewatch all` as `make run` starts it, its addresses and the example's targets moved to free ports."""
    http, grpc = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    config, data = work / "flamewatch.yaml", work / "data"
    config.write_text(config_for("make-run", demo, http))
    with (work / "flamewatch.log").open("ab") as log:
        started = time.monotonic()
        process = subprocess.Popen([str(allinone.FLAMEWATCH), "all", "--config.file", str(config), "--data-dir",
                                    str(data), "--http-address", http, "--grpc-address", grpc],
                                   cwd=work, stdout=log, stderr=subprocess.STDOUT, env=allinone.environment())
    node = allinone.AllInOne(data, process, http, grpc)
    try:
        allinone.wait_ready(node, started, work / "flamewatch.log")
    except BaseException:
        allinone.stop(node)
        raise
    return node


@contextlib.contextmanager
def flamewatch(bench: Bench) -> Iterator[str]:
    """The Flamewatch to measure: --url as it is, or one started here."""
    if bench.args.url:
        httpx.get(bench.args.url + "/readyz", timeout=10).raise_for_status()
        yield bench.args.url.rstrip("/")
    else:
        with demo_flamewatch(bench) as url:
            yield url


# ------------------------------------------------------------------------------------ the results


def table(rows: list[Row]) -> str:
    lines = ["| measure | figure | note |", "|---|---|---|"]
    lines += [f"| {r.measure} | {r.figure} | {r.note} |" for r in rows]
    return "\n".join(lines)


def uncommitted() -> bool:
    """Whether the checkout measured differs from its commit (the tree may be shared with other work)."""
    return bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, cwd=ROOT).stdout.strip())


def machine() -> str:
    """The CPU's model name, as /proc/cpuinfo gives it."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return "unknown CPU"


def preamble(bench: Bench, env: dict) -> str:
    start, end = env["start"], env["end"]
    subject = (f"against {bench.args.url}" if bench.args.url else
               "against what `make run` starts, on free ports: `flamewatch all` on examples/flamewatch.yaml "
               f"scraping the demo Go program and itself every 10 s, measured once the demo's last hour held "
               f"{bench.args.scrapes} CPU profiles")
    commit = f"{end['commit']}{' with uncommitted changes' if env['uncommitted'] else ''}"
    return (f"Commit {commit}, {end['cores']} cores ({env['cpu']}), shared with other work: load average "
            f"(1, 5, 15 min) {start['load_average']} at the start, {end['load_average']} at the end. "
            f"Headless chromium {bench.chromium} (Debian's), 1280x800, {subject}. No goals: the issue names none.")


def write(bench: Bench, stamp: str, env: dict) -> Path:
    md = report.RESULTS_DIR / f"{stamp}-ui.md"
    md.write_text(f"# Web UI (issue 23), {stamp}\n\n{preamble(bench, env)}\n\n{table(bench.rows)}\n\n## Details\n\n"
                  + "\n".join(f"- {d}" for d in bench.progress.details) + "\n")
    md.with_suffix(".json").write_text(json.dumps({
        "settings": vars(bench.args), "environment": env, "chromium": bench.chromium,
        "rows": [dataclasses.asdict(r) for r in bench.rows], "raw": bench.raw}, indent=2) + "\n")
    return md


# ------------------------------------------------------------------------------------ running


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running Flamewatch to measure; without it one is started here")
    parser.add_argument("--selector", default='{service_name="demo"}')
    parser.add_argument("--runs", type=int, default=5, help="page opens (the median is given)")
    parser.add_argument("--scrapes", type=int, default=3,
                        help="CPU profiles of the demo's last hour to wait for (without --url)")
    parser.add_argument("--nodes", type=int, default=20_000, help="flamegraph nodes for the hover test (max_nodes)")
    parser.add_argument("--seconds", type=float, default=5.0, help="how long the pointer moves")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    report.stop_on_signals()
    from playwright.sync_api import sync_playwright

    bench, stamp = Bench(args), report.stamp()
    env = {"start": report.environment(), "cpu": machine(), "uncommitted": uncommitted()}
    bench.progress.say(f"UI bench: {env['start']['cores']} cores, load average {env['start']['load_average']}")
    bundle(bench)
    with flamewatch(bench) as url, sync_playwright() as playwright:
        bench.chromium = launch_version(playwright)
        open_time(bench, playwright, url)
        hover(bench, playwright, url)
    env["end"] = report.environment()
    md = write(bench, stamp, env)
    print("\n" + table(bench.rows) + f"\n\nwritten to {md.relative_to(ROOT)}", flush=True)


def launch_version(playwright) -> str:
    browser = launch(playwright)
    try:
        return browser.version
    finally:
        browser.close()


if __name__ == "__main__":
    main()
