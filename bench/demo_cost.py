"""What `make run` costs: Flamewatch's own CPU and memory while it profiles the demo program.

    .venv/bin/python bench/demo_cost.py [--minutes 10] [--every 5] [--variant make-run]

Starts what `make run` starts: the demo Go program (tests/targets/workload) and
`flamewatch all --config.file examples/flamewatch.yaml`, in a temporary data directory (embedded
Postgres, filesystem objects). The configuration is the example's, scrape intervals and profile types
unchanged; only its addresses move to free ports (`--make-run-ports` keeps 6060/8080/8081).

Every `--every` seconds it reads from /proc: CPU time (utime + stime) of the Flamewatch process, of
the embedded Postgres server (the postmaster, its live children, and the children it has reaped), and
of the demo program; and RSS of Flamewatch and Postgres (Postgres also as PSS, which counts shared
buffers once). It prints CPU seconds per minute (= % of one core x 0.6) over the window after
`--warmup` seconds, and median and peak memory.

Where the CPU goes: the stored CPU profiles Flamewatch took of itself over the window are split by
the innermost Flamewatch service module on each stack (collector = scraping, ingester and storage =
storing, selfprofile = answering its own profile requests, querier, other). Costs the sampler cannot
see (its own thread, tracemalloc's per-allocation bookkeeping) show as the difference between
variants:

    make-run         examples/flamewatch.yaml as it is
    no-self-scrape   the same without the `flamewatch` job: only the demo is scraped and stored
    no-self-heap     no-self-scrape, with --no-self-profiling.heap (the same once heap tracking is off
                     by default)
    self-heap        make-run with --self-profiling.heap, and Flamewatch's own heap scraped too
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from infra.ports import free_port  # noqa: E402
from infra.waiting import answers, wait_for  # noqa: E402

from flamewatch.pprof import decode, decompress  # noqa: E402

FLAMEWATCH = ROOT / ".venv" / "bin" / "flamewatch"
WORKLOAD = ROOT / ".cache" / "targets" / "workload"
EXAMPLE = ROOT / "examples" / "flamewatch.yaml"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1 << 20
VARIANTS = ("make-run", "no-self-scrape", "no-self-heap", "self-heap")
SELF_CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="flamewatch"}'
# The innermost Flamewatch module on a stack names what the CPU was spent on; first match wins.
COMPONENTS = (("answering own profile requests", ("flamewatch.selfprofile.",)),
              ("scraping (collector)", ("flamewatch.collector.",)),
              ("storing (ingester, storage)", ("flamewatch.ingester.", "flamewatch.storage.")),
              ("querying", ("flamewatch.querier.",)))


# ------------------------------------------------------------------------------------- /proc


def cpu_seconds(pid: int, reaped: bool = False) -> float:
    """utime + stime of `pid` (all its threads); with `reaped`, plus its waited-for children's."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    if reaped:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE


def pss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (read from every /proc/*/stat: /proc/PID/task/*/children is not
    always compiled in)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent == pid:
                found.append(int(entry.name))
    return found


def postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None


# ------------------------------------------------------------------------------------- sampling


@dataclass
class Sample:
    at: float
    flamewatch_cpu: float
    postgres_cpu: float
    demo_cpu: float
    flamewatch_rss: int
    postgres_rss: int
    postgres_pss: int


def take_sample(flamewatch: int, demo: int, postmaster: int) -> Sample:
    """One reading of every process; a Postgres backend that exits meanwhile is counted when reaped."""
    pg_cpu = cpu_seconds(postmaster, reaped=True)
    pg_rss, pg_pss = rss_bytes(postmaster), pss_bytes(postmaster)
    for child in children(postmaster):
        try:
            pg_cpu += cpu_seconds(child)
            pg_rss += rss_bytes(child)
            pg_pss += pss_bytes(child)
        except (OSError, ValueError):  # gone between listing and reading: its time moves to the postmaster
            continue
    return Sample(time.monotonic(), cpu_seconds(flamewatch), pg_cpu, cpu_seconds(demo), rss_bytes(flamewatch),
                  pg_rss, pg_pss)


@dataclass
class Run:
    variant: str
    samples: list[Sample] = field(default_factory=list)
    components: Counter = field(default_factory=Counter)

    def per_minute(self, attr: str) -> float:
        first, last = self.samples[0], self.samples[-1]
        return 60 * (getattr(last, attr) - getattr(first, attr)) / (last.at - first.at)

    def memory(self, attr: str) -> tuple[float, float]:
        values = [getattr(s, attr) / MiB for s in self.samples]
        return statistics.median(values), max(values)

    def report(self) -> str:
        minutes = (self.samples[-1].at - self.samples[0].at) / 60
        fw, pg, demo = (self.per_minute(a) for a in ("flamewatch_cpu", "postgres_cpu", "demo_cpu"))
        lines = [f"{self.variant}: {minutes:.1f} min measured, {len(self.samples)} samples",
                 f"  CPU s/min (% of one core)  flamewatch {fw:5.2f} ({fw / 0.6:4.1f} %)   postgres {pg:5.2f} "
                 f"({pg / 0.6:4.1f} %)   together {fw + pg:5.2f} ({(fw + pg) / 0.6:4.1f} %)   demo {demo:5.2f} "
                 f"({demo / 0.6:4.1f} %)"]
        for label, attr in (("flamewatch RSS", "flamewatch_rss"), ("postgres RSS (sum)", "postgres_rss"),
                            ("postgres PSS (sum)", "postgres_pss")):
            median, peak = self.memory(attr)
            lines.append(f"  {label:<19} median {median:6.0f} MiB   peak {peak:6.0f} MiB")
        total = sum(self.components.values())
        if total:
            lines.append("  flamewatch CPU by component (its own CPU profiles over the window):")
            for name, ns in self.components.most_common():
                lines.append(f"    {name:<32} {100 * ns / total:5.1f} %   {fw * ns / total:5.2f} s/min")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------- processes


def config_for(variant: str, demo: str, http: str) -> str:
    config = yaml.safe_load(EXAMPLE.read_text())
    if variant.startswith("no-self"):
        config["scrape_configs"] = [j for j in config["scrape_configs"] if j["job_name"] != "flamewatch"]
    if variant == "self-heap":
        job = next(j for j in config["scrape_configs"] if j["job_name"] == "flamewatch")
        job["profiling_config"]["pprof_config"]["memory"]["enabled"] = True
    for job in config["scrape_configs"]:
        for group in job.get("static_configs", []):
            group["targets"] = [{"127.0.0.1:6060": demo, "127.0.0.1:8080": http}.get(t, t) for t in group["targets"]]
    return yaml.safe_dump(config, sort_keys=False)


def measure(variant: str, seconds: float, every: float, warmup: float, fixed_ports: bool, workdir: Path) -> Run:
    demo_addr, http, grpc = (("127.0.0.1:6060", "127.0.0.1:8080", "127.0.0.1:8081") if fixed_ports else
                             tuple(f"127.0.0.1:{free_port()}" for _ in range(3)))
    data = workdir / variant
    data.mkdir()
    (data / "flamewatch.yaml").write_text(config_for(variant, demo_addr, http))
    flags = {"no-self-heap": ["--no-self-profiling.heap"], "self-heap": ["--self-profiling.heap"]}.get(variant, [])
    demo = subprocess.Popen([str(WORKLOAD), "-addr", demo_addr, "-exit-on-stdin-close"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL)
    flamewatch = subprocess.Popen([str(FLAMEWATCH), "all", "--config.file", str(data / "flamewatch.yaml"),
                                   "--data-dir", str(data), "--http-address", http, "--grpc-address", grpc,
                                   "--log.level", "warning", *flags], stderr=(data / "flamewatch.log").open("w"))
    run = Run(variant)
    try:
        wait_for(lambda: answers(f"http://{http}/readyz"), 120, "flamewatch to be ready", process=flamewatch,
                 interval_s=0.3)
        time.sleep(warmup)
        postmaster = postmaster_pid(data / "postgres")
        if postmaster is None:
            raise SystemExit(f"no embedded Postgres running under {data / 'postgres'}")
        wall_start = time.time()
        started = time.monotonic()
        while True:
            run.samples.append(take_sample(flamewatch.pid, demo.pid, postmaster))
            if flamewatch.poll() is not None:
                raise SystemExit(f"flamewatch exited with {flamewatch.returncode} during the run")
            if run.samples[-1].at - started >= seconds:
                break
            time.sleep(min(every, max(0.0, started + seconds - time.monotonic())))
        if variant in ("make-run", "self-heap"):
            run.components = cpu_by_component(http, wall_start, time.time())
    finally:
        stop(flamewatch, demo)
    return run


def stop(flamewatch: subprocess.Popen, demo: subprocess.Popen) -> None:
    flamewatch.send_signal(signal.SIGINT)  # as Ctrl-C on `make run`: it stops the embedded Postgres
    try:
        flamewatch.wait(60)
    except subprocess.TimeoutExpired:
        flamewatch.kill()
        flamewatch.wait()
    demo.stdin.close()
    demo.wait(10)


# ------------------------------------------------------------------------------------- attribution


def cpu_by_component(http: str, start: float, end: float) -> Counter:
    """CPU nanoseconds of Flamewatch's own stored CPU profiles in [start, end], by component."""
    answer = httpx.get(f"http://{http}/api/v1/query", timeout=120,
                       params={"query": SELF_CPU, "from": str(int(start)), "until": str(int(end)), "format": "pprof",
                               "max_nodes": "100000"})
    answer.raise_for_status()
    profile = decode(decompress(answer.content, 1 << 30))
    names = profile.strings[profile.functions.name]
    function_name = dict(zip(profile.functions.id.tolist(), names.tolist()))
    loc = profile.locations
    location_name = {}  # location id -> its innermost function's name
    for i, lid in enumerate(loc.id.tolist()):
        lines = loc.line_function_id[loc.line_offsets[i]:loc.line_offsets[i + 1]]
        location_name[lid] = function_name.get(int(lines[0]), "") if len(lines) else ""
    column = 1 if profile.sample_types.shape[0] > 1 else 0
    totals: Counter = Counter()
    offsets, locations, values = profile.samples.offsets, profile.samples.locations, profile.samples.values
    for i in range(len(profile.samples)):
        stack = [location_name[int(x)] for x in locations[offsets[i]:offsets[i + 1]]]
        totals[component_of(stack)] += int(values[i, column])
    return totals


def component_of(stack: list[str]) -> str:
    """The component of the innermost (leaf-most) frame that belongs to one."""
    for name in stack:
        for component, prefixes in COMPONENTS:
            if name.startswith(prefixes):
                return component
    return "other (HTTP/gRPC serving, event loop, idle wakeups)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="measured window per variant")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between readings")
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds after start-up before measuring")
    parser.add_argument("--variant", action="append", choices=VARIANTS,
                        help="what to run (repeat for several); default make-run")
    parser.add_argument("--make-run-ports", action="store_true", help="use 6060/8080/8081 as `make run` does")
    args = parser.parse_args()
    for binary, how in ((FLAMEWATCH, "make deps"), (WORKLOAD, "make .cache/targets/workload")):
        if not binary.exists():
            raise SystemExit(f"{binary} is missing: run `{how}`")
    with tempfile.TemporaryDirectory(prefix="flamewatch-demo-cost-") as tmp:
        for variant in args.variant or ["make-run"]:
            run = measure(variant, 60 * args.minutes, args.every, args.warmup, args.make_run_ports, Path(tmp))
            print(run.report(), flush=True)


if __name__ == "__main__":
    main()
