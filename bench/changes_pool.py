"""The pool of real CPU profiles the "what changed" benchmark draws from, captured once and kept under
`.cache/bench/changes/` (reruns reuse it, and add only what is missing).

Each build of `tests/targets/regress` (the base, and builds spending N % more in main.hash) runs as a few
processes side by side, each writing `chunk` CPU profiles into `<build>/run-<k>/`; a run is complete when
its `done.json` (the settings it was taken with) exists, and a run taken with other settings is not used.
Every profile covers a fixed number of requests, so it holds the same CPU however loaded the machine is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from infra import gotargets  # noqa: E402

POOL_DIR = ROOT / ".cache" / "bench" / "changes"
# Asynchronous preemption off: on a loaded machine its signal lands in a varying share of samples
# (runtime.asyncPreempt), which is the machine's noise, not the program's.
ENV = {**os.environ, "GODEBUG": "asyncpreemptoff=1"}


@dataclass(frozen=True)
class Shape:
    """What one profile is: `requests` requests (about 1.1 ms of CPU each) sampled at `hz`."""

    requests: int
    hz: int


def build_dir(extra: int) -> Path:
    return POOL_DIR / ("base" if extra == 0 else f"slower-{extra}")


def profiles(extra: int, shape: Shape) -> list[Path]:
    """The pool's profiles of one build, runs in order (the run is a process: kept for per-run checks)."""
    return [p for run in complete_runs(extra, shape) for p in sorted(run.glob("cpu-*.pb.gz"),
                                                                     key=lambda p: int(p.stem[4:-3]))]


def complete_runs(extra: int, shape: Shape) -> list[Path]:
    runs = sorted(build_dir(extra).glob("run-*"), key=lambda p: int(p.name[4:]))
    return [r for r in runs if (r / "done.json").is_file()
            and json.loads((r / "done.json").read_text()) == asdict(shape)]


def capture(wanted: dict[int, int], shape: Shape, chunk: int, minutes: float) -> None:
    """Bring every build's pool (extra % -> profiles) up to its size, all missing runs side by side; after
    `minutes`, stop and keep the profiles finished by then (a rerun adds what is still missing)."""
    jobs = []
    for extra, count in wanted.items():
        have = len(profiles(extra, shape))
        binary = gotargets.build("regress", f"-X main.extraPercent={extra}", str(extra)) if extra else \
            gotargets.build("regress")
        taken = {int(p.name[4:]) for p in build_dir(extra).glob("run-*")}
        k = max(taken, default=-1) + 1
        while have < count:
            n = min(chunk, count - have)
            run = build_dir(extra) / f"run-{k}"
            run.mkdir(parents=True)
            jobs.append((run, n, subprocess.Popen(
                [str(binary), "-dir", str(run), "-count", str(n), "-requests", str(shape.requests),
                 "-hz", str(shape.hz)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)))
            have, k = have + n, k + 1
    if not jobs:
        return
    total, started = sum(n for _, n, _ in jobs), time.monotonic()
    deadline = started + minutes * 60
    print(f"capturing {total} profiles in {len(jobs)} processes ({shape.requests} requests each at "
          f"{shape.hz} Hz) into {POOL_DIR.relative_to(ROOT)}/", flush=True)
    try:
        while any(p.poll() is None for _, _, p in jobs) and time.monotonic() < deadline:
            time.sleep(15)
            # A file exists from its profile's start: a running process's newest one is not done yet.
            done = sum(len(list(run.glob("cpu-*.pb.gz"))) - (p.poll() is None) for run, _, p in jobs)
            print(f"  {done}/{total} profiles after {time.monotonic() - started:.0f} s "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for run, _, process in jobs:
            if process.poll() is None:
                process.kill()
                process.wait()
                stop(run, shape)
    for run, _, process in jobs:
        if process.returncode != 0 and not (run / "done.json").is_file():
            raise RuntimeError(f"{run}: the program exited with {process.returncode}")
        (run / "done.json").write_text(json.dumps(asdict(shape)))
    print(f"captured {sum(len(profiles(e, shape)) for e in wanted)} profiles in all", flush=True)


def stop(run: Path, shape: Shape) -> None:
    """Keep what a stopped run finished: its newest file was being written (Go writes it when it ends)."""
    files = sorted(run.glob("cpu-*.pb.gz"), key=lambda p: int(p.stem[4:-3]))
    if files:
        files[-1].unlink()
    (run / "done.json").write_text(json.dumps(asdict(shape)))
