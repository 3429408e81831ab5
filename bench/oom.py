"""How old the last heap profile is when the kernel OOM-kills a program, and what scraping the heap costs.

    nice .venv/bin/python bench/oom.py [--kills 5] [--modes 15,10,5,10+5] [--rate 4M] [--limit 96M]

Needs root (memory cgroups). For each mode, a heap scrape interval with the collector's fast heap pace
off (15, 10, 5) or on ("10+5": every 10 s, every 5 s while the heap grows; the default), a fresh
`flamewatch all` (embedded Postgres, filesystem objects) scrapes only the heap (`/debug/pprof/heap`) of
tests/targets/leaky, which runs under the supervisor of `examples/oom-supervisor/` in a memory cgroup of
`--limit`, leaking `--rate` bytes a second; the kernel kills it and the supervisor records the kill with
`flamewatch event`, `--kills` times, each run started after a random pause (so that kills fall anywhere
in the scrape interval). A first mode scrapes nothing, for the cost of Flamewatch with the same kills.

Read off `/api/v1/incidents` for each kill: the age of the last heap at the kill (median, max), and how
much in-use heap that profile showed (Go's heap profile shows the heap as of the last garbage collection,
so it lags the memory the kernel counted). Read off /proc over the mode: CPU seconds per minute of the
Flamewatch process and of its embedded Postgres; after a stop (which flushes): bytes of objects stored per
minute, and heap profiles stored per minute. Writes `bench/results/<UTC time>-oom.md` (and `.json`).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

import allinone  # noqa: E402
from demo_cost import children, cpu_seconds, postmaster_pid  # noqa: E402
from infra import cgroups, leaky  # noqa: E402
from infra.ports import free_port  # noqa: E402
from report import RESULTS_DIR, environment, stamp  # noqa: E402

HEAP = "memory:inuse_space:bytes:space:bytes"
MiB = 1 << 20
S = 10**9


@dataclass
class Mode:
    interval_s: int  # 0: nothing scraped
    fast_s: int = 0  # the fast heap pace while the heap grows (0: off)
    kills: int = 0
    minutes: float = 0.0
    ages_s: list[float] = field(default_factory=list)
    last_heap_mib: list[float] = field(default_factory=list)
    flamewatch_cpu_s: float = 0.0
    postgres_cpu_s: float = 0.0
    object_bytes: int = 0
    heap_profiles: int = 0

    @property
    def name(self) -> str:
        if not self.interval_s:
            return "nothing scraped"
        return f"heap every {self.interval_s} s" + (f", {self.fast_s} s while it grows" if self.fast_s else "")


def postgres_cpu(data: Path) -> float:
    """The embedded Postgres: the postmaster, its live backends, and the backends it has reaped."""
    postmaster = postmaster_pid(data / "postgres")
    if postmaster is None:
        return 0.0
    return cpu_seconds(postmaster, reaped=True) + sum(cpu_seconds(p) for p in children(postmaster))


def run_mode(mode: Mode, args: argparse.Namespace, workdir: Path) -> None:
    addr = f"127.0.0.1:{free_port()}"
    config = workdir / "flamewatch.yaml"
    scraped = leaky.heap_config(addr, mode.interval_s, mode.fast_s) if mode.interval_s else "scrape_configs: []\n"
    config.write_text(scraped)
    data = workdir / "data"
    data.mkdir()
    node, _ = allinone.start(data, ["--config.file", str(config)])
    try:
        fw0, pg0, t0 = cpu_seconds(node.process.pid), postgres_cpu(data), time.time()
        supervise(mode, args, addr, node.url, workdir)
        fw1, pg1, t1 = cpu_seconds(node.process.pid), postgres_cpu(data), time.time()
        mode.minutes, mode.flamewatch_cpu_s, mode.postgres_cpu_s = (t1 - t0) / 60, fw1 - fw0, pg1 - pg0
        read_incidents(mode, node.url, int(t0 * S))
    finally:
        allinone.stop(node)
    mode.object_bytes = sum(f.stat().st_size for f in (data / "objects").rglob("*") if f.is_file())


def supervise(mode: Mode, args: argparse.Namespace, addr: str, url: str, workdir: Path) -> None:
    """`args.kills` runs, each under a supervisor of its own after a random pause, so that the kills fall at
    random points of the scrape interval: restarted at once, the program is killed every limit/rate + 1 s,
    in step with an interval that divides that (25 s and 5 s), and every kill would see the same age."""
    name = f"flamewatch-bench-oom-{mode.interval_s}-{mode.fast_s}"
    pause = random.Random(mode.interval_s)  # the same pauses for modes of the same interval
    with (workdir / "supervisor.log").open("w") as log:
        for _ in range(args.kills):
            time.sleep(pause.uniform(0, mode.interval_s or 1))
            try:
                subprocess.run(leaky.supervised(name, args.limit, url, allinone.FLAMEWATCH, addr, args.rate, 0),
                               stdout=log, stderr=subprocess.STDOUT, check=True, timeout=args.limit / args.rate + 60)
            finally:
                cgroups.remove(cgroups.memory_cgroup(name))


def read_incidents(mode: Mode, url: str, since_ns: int) -> None:
    incidents = httpx.get(url + "/api/v1/incidents", params={"from": str(since_ns), "kind": "oom_kill"},
                          timeout=60).json()["incidents"]
    mode.kills = len(incidents)
    for incident in incidents:
        last = incident["evidence"]["last_heap"]
        if last is None:
            continue
        mode.ages_s.append(incident["evidence"]["last_heap_age_ns"] / S)
        top = httpx.get(url + "/api/v1/query", timeout=60, params={
            "query": last["query"], "from": str(last["time"]), "until": str(last["time"]), "format": "top"}).json()
        mode.last_heap_mib.append(top["top"]["total"] / MiB)
    if mode.interval_s:
        stored = httpx.get(url + "/api/v1/query", timeout=60, params={
            "query": HEAP + '{service_name="leaky"}', "from": str(since_ns), "until": "now", "format": "top",
            "max_nodes": "1"}).json()
        mode.heap_profiles = stored["profiles"]


def row(m: Mode, limit: int) -> str:
    ages = (f"{statistics.median(m.ages_s):.1f} s | {max(m.ages_s):.1f} s" if m.ages_s else "- | -")
    shown = f"{statistics.median(m.last_heap_mib):.0f} of {limit / MiB:.0f} MiB" if m.last_heap_mib else "-"
    return (f"| {m.name} | {m.kills} | {ages} | {shown} | {m.flamewatch_cpu_s / m.minutes:.2f} s | "
            f"{m.postgres_cpu_s / m.minutes:.2f} s | {m.object_bytes / m.minutes / 1024:.0f} KiB | "
            f"{m.heap_profiles / m.minutes:.1f} |")


def report(name: str, modes: list[Mode], args: argparse.Namespace, env_start: dict, env_end: dict) -> str:
    lines = [f"# OOM-kill benchmark, {name}", "",
             f"Commit {env_start['commit']}, {env_start['cores']} cores, shared with other work: load average "
             f"(1, 5, 15 min) {env_start['load_average']} at the start, {env_end['load_average']} at the end.", "",
             f"tests/targets/leaky under examples/oom-supervisor/supervise.py in a memory cgroup of "
             f"{args.limit / MiB:.0f} MiB (cgroup {'v2' if cgroups.unified() else 'v1'}), leaking "
             f"{args.rate / MiB:g} MiB/s: killed by the kernel about {args.limit / args.rate:.0f} s after it "
             f"starts, {args.kills} kills per mode, each run started after a random pause of up to one scrape "
             "interval; `flamewatch all` scraping only its heap. Per minute of the mode:", "",
             "| mode | kills recorded | last heap age at kill, median | max | in-use the last heap showed, "
             "median | Flamewatch CPU / min | Postgres CPU / min | objects stored / min | heap profiles / min |",
             "|---|---|---|---|---|---|---|---|---|",
             *[row(m, args.limit) for m in modes], "",
             "The age is from the last stored heap profile to the kill as the supervisor saw it end. The heap it "
             "shows is older still: Go's heap profile is the heap as of a recent garbage collection (up to two "
             "cycles back), and a leaking heap is collected each time it doubles, so the last profile before the "
             "kill shows a fraction of the limit the kernel enforced, whatever the scrape interval.", ""]
    return "\n".join(lines)


def size(text: str) -> int:
    units = {"K": 1 << 10, "M": MiB, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=5, help="OOM kills per mode")
    parser.add_argument("--modes", default="15,10,5,10+5", help="heap scrape intervals in seconds, fast pace off; "
                        "INTERVAL+FAST: with the fast pace (10+5: the default)")
    parser.add_argument("--rate", type=size, default=4 * MiB, help="bytes leaked a second (e.g. 4M)")
    parser.add_argument("--limit", type=size, default=96 * MiB, help="the cgroup's memory limit (e.g. 96M)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the mode that scrapes nothing")
    args = parser.parse_args()
    problem = cgroups.can_create()
    if problem:
        raise SystemExit(f"bench/oom.py needs memory cgroups: {problem}")
    name, env_start = stamp(), environment()
    allinone.become_subreaper()
    modes = [Mode(0)] * (not args.no_baseline) + [Mode(*map(int, m.split("+"))) for m in args.modes.split(",")]
    for mode in modes:
        with tempfile.TemporaryDirectory(prefix="flamewatch-oom-") as tmp:
            Path(tmp).chmod(0o755)  # the embedded Postgres runs as its own user
            run_mode(mode, args, Path(tmp))
        print(row(mode, args.limit), flush=True)
    text = report(name, modes, args, env_start, environment())
    print(text)
    md = RESULTS_DIR / f"{name}-oom.md"
    md.write_text(text)
    md.with_suffix(".json").write_text(json.dumps([asdict(m) for m in modes], indent=2) + "\n")
    print(f"written: {md}")


if __name__ == "__main__":
    main()
