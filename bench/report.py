"""The storage benchmark's table: each measure of issue 8 with its goal, the figure measured and whether
the goal is met, printed and written to `bench/results/<date>.md` and `.json`."""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Goal:
    text: str  # as the issue states it
    limit: float
    at_most: bool = True  # False: the figure must be at least `limit`

    def met(self, value: float) -> bool:
        return value <= self.limit if self.at_most else value >= self.limit


@dataclass
class Row:
    measure: str
    goal: str
    figure: str
    met: bool | None  # None: not measured
    values: dict[str, float] = field(default_factory=dict)  # the numbers behind `figure`, for the JSON
    note: str = ""


def row(measure: str, goals: list[Goal], values: list[float], figure: str, note: str = "",
        named: dict[str, float] | None = None) -> Row:
    """A row whose goals (one per value, e.g. warm and cold) are all met or not."""
    met = all(g.met(v) for g, v in zip(goals, values, strict=True))
    return Row(measure, " / ".join(g.text for g in goals), figure, met, named or {}, note)


@dataclass(kw_only=True)
class Progress:
    """A benchmark's running account: lines printed with the seconds since it started, and the ones kept
    as the details of its result."""

    details: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:6.0f} s] {text}", flush=True)

    def detail(self, text: str) -> None:
        self.details.append(text)
        self.say(text)


def table(rows: list[Row]) -> str:
    lines = ["| measure | goal | Flamewatch | met? |", "|---|---|---|---|"]
    for r in rows:
        met = "n/a" if r.met is None else ("yes" if r.met else "NO")
        lines.append(f"| {r.measure} | {r.goal} | {r.figure} | {met} |")
    return "\n".join(lines)


def environment() -> dict[str, object]:
    load = os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=RESULTS_DIR.parent).stdout.strip()
    return {"cores": os.cpu_count(), "load_average": [round(x, 2) for x in load], "commit": commit,
            "python": platform.python_version(), "machine": platform.machine()}


def stamp() -> str:
    """The name the results of a run are written under: its start time in UTC."""
    RESULTS_DIR.mkdir(exist_ok=True)
    return datetime.now(UTC).strftime("%Y-%m-%dT%H%M%SZ")


@dataclass
class Results:
    stamp: str
    rows: list[Row]
    details: list[str]
    profiles: dict[str, str]  # querier profile file -> the head of its `go tool pprof -top -cum`
    settings: dict[str, object]
    environment: dict[str, dict[str, object]]  # "start" and "end"


def write(results: Results) -> tuple[Path, Path]:
    r, env = results, results.environment
    md, js = RESULTS_DIR / f"{r.stamp}.md", RESULTS_DIR / f"{r.stamp}.json"
    tops = "".join(f"\n### {name}\n\n```\n{text.strip()}\n```\n" for name, text in r.profiles.items())
    md.write_text(f"# Storage benchmark, {r.stamp}\n\n"
                  f"Commit {env['end']['commit']}, {env['end']['cores']} cores, shared with other work: load "
                  f"average (1, 5, 15 min) {env['start']['load_average']} at the start, "
                  f"{env['end']['load_average']} at the end.\n\nSettings: `{json.dumps(r.settings)}`\n\n"
                  f"{table(r.rows)}\n\n## Details\n\n" + "\n".join(f"- {d}" for d in r.details) + "\n"
                  + (f"\n## Where the querier's time goes\n{tops}" if tops else ""))
    js.write_text(json.dumps(asdict(r), indent=2) + "\n")
    return md, js


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def stop_on_signals() -> None:
    """Ctrl-C or kill unwinds through the bench's context managers, which stop every process it started."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stop)
