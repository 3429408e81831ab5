"""The collector's own cost: CPU and memory of `flamewatch collector` scraping N targets every 10 s.

    .venv/bin/python bench/collector.py [--targets 200] [--seconds 60]

Targets are one Go program replaying real pprof responses (captured from tests/targets/workload) on
N ports; CPU profiles answer after `seconds` as live ones do. The collector runs as its own process,
sending to a real `flamewatch ingester` (embedded Postgres, filesystem blocks). Figures are read from
the collector process with psutil over the measured window, after one warm-up interval.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from infra import gotargets  # noqa: E402
from infra.ports import free_port  # noqa: E402
from infra.waiting import answers, wait_for  # noqa: E402

FLAMEWATCH = ROOT / ".venv" / "bin" / "flamewatch"


def build_replay() -> Path:
    binary = ROOT / ".cache" / "targets" / "replay"
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=ROOT / "tests" / "targets" / "replay", check=True)
    return binary


def capture(workdir: Path) -> Path:
    folder = workdir / "profiles"
    folder.mkdir()
    with gotargets.GoTarget(gotargets.build("workload"), workdir / "workload.log") as target:
        profiles = gotargets.capture_profiles(target.addr, cpu_seconds=2)
    names = {"cpu": "profile", "allocs": "allocs", "goroutine": "goroutine", "mutex": "mutex", "block": "block"}
    for name, path in names.items():
        (folder / f"{path}.pb.gz").write_bytes(profiles[name])
    return folder


def free_range(count: int, start: int = 30000) -> int:
    """The first port of `count` consecutive ports that can all be bound now."""
    for first in range(start, 60000 - count, count):
        if all(_bindable(p) for p in range(first, first + count)):
            return first
    raise SystemExit(f"no {count} consecutive free ports")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def measure(pid: int, seconds: float) -> tuple[float, float]:
    proc = psutil.Process(pid)
    start_cpu = sum(proc.cpu_times()[:2])
    peak_rss, started = 0, time.monotonic()
    while time.monotonic() - started < seconds:
        peak_rss = max(peak_rss, proc.memory_info().rss)
        time.sleep(0.5)
    cpu = sum(proc.cpu_times()[:2]) - start_cpu
    return cpu / (time.monotonic() - started), peak_rss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window after a warm-up interval")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        profiles, replay = capture(work), build_replay()
        first = free_range(args.targets)
        targets = subprocess.Popen([str(replay), "-dir", str(profiles), "-first-port", str(first), "-ports",
                                    str(args.targets)], stdout=subprocess.DEVNULL)
        time.sleep(1)
        if targets.poll() is not None:
            raise SystemExit("the replay server could not start (see its message above)")
        addresses = ", ".join(f'"127.0.0.1:{p}"' for p in range(first, first + args.targets))
        config = work / "collector.yaml"
        config.write_text(f"scrape_configs:\n  - job_name: fleet\n    scrape_interval: 10s\n"
                          f"    static_configs: [{{targets: [{addresses}]}}]\n")
        ports = [free_port() for _ in range(3)]
        ingester = subprocess.Popen([str(FLAMEWATCH), "ingester", "--data-dir", str(work / "data"), "--http-address",
                                     f"127.0.0.1:{ports[0]}", "--grpc-address", f"127.0.0.1:{ports[1]}",
                                     "--log.level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        collector = None
        try:
            wait_for(lambda: answers(f"http://127.0.0.1:{ports[0]}/readyz"), 60, "the ingester to be ready")
            collector = subprocess.Popen([str(FLAMEWATCH), "collector", "--config.file", str(config),
                                          "--ingester.address", f"127.0.0.1:{ports[1]}", "--http-address",
                                          f"127.0.0.1:{ports[2]}", "--no-self-profiling.heap", "--log.level",
                                          "warning"])
            wait_for(lambda: answers(f"http://127.0.0.1:{ports[2]}/readyz"), 60, "the collector to be ready")
            time.sleep(12)  # one interval: every loop has started and set its delta base
            cpu, rss = measure(collector.pid, args.seconds)
            status = httpx.get(f"http://127.0.0.1:{ports[2]}/api/v1/targets").json()["data"]["activeTargets"]
            up = sum(t["health"] == "up" for t in status)
            print(f"collector: {args.targets} targets x 5 profiles every 10 s ({up}/{len(status)} endpoints up): "
                  f"CPU {100 * cpu:.1f}% of one core, peak RSS {rss:.0f} MiB over {args.seconds:.0f} s")
        finally:
            for proc in (collector, ingester, targets):
                if proc:
                    proc.terminate()
                    proc.wait(30)


if __name__ == "__main__":
    main()
