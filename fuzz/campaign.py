"""Run the fuzz targets one after another, each for a time budget, and report executions and findings.

Each target runs under libFuzzer (through atheris) on its working corpus `<work>/corpus/<target>/`,
which keeps what earlier runs learned, plus its seeds `<work>/seeds/<target>/`. A unit that hangs
(libFuzzer's `-timeout`) or runs out of memory ends the process; the target is then restarted for the
rest of its budget. A hang counts as a finding. So does running out of memory if the input, run again
alone, still does; otherwise it was the slow growth of atheris' own instrumentation (about 2.5 KB per
execution on the pprof target, none without instrumentation), which is counted apart as a restart.
Findings are listed under `<work>/findings/`.

Usage: python fuzz/campaign.py [--seconds N] [--work DIR] [TARGET ...]
Exits 1 when any target had a finding.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = ("pprof", "gzip", "selector", "time", "config", "otlp", "connect", "multipart")
MAX_LEN = {"pprof": 256 << 10, "gzip": 64 << 10, "selector": 4096, "time": 1024, "config": 64 << 10,
           "otlp": 256 << 10, "connect": 256 << 10, "multipart": 256 << 10}
UNIT_TIMEOUT_S = 30
RSS_LIMIT_MB = 3072
_EXECUTED = re.compile(r"stat::number_of_executed_units:\s*(\d+)")
_PROGRESS = re.compile(r"^#(\d+)\s", re.MULTILINE)
_ARTIFACT = re.compile(r"Test unit written to (\S+)")


@dataclass
class Result:
    target: str
    seconds: float = 0.0
    executions: int = 0
    restarts: int = 0  # after the fuzzer's own memory growth, not a finding
    findings: list[str] = field(default_factory=list)


def run_target(target: str, budget_s: float, work: Path) -> Result:
    result = Result(target)
    corpus, seeds = work / "corpus" / target, work / "seeds" / target
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts = work / "artifacts" / target
    artifacts.mkdir(parents=True, exist_ok=True)
    log = work / "logs" / f"{target}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    while (left := budget_s - (time.monotonic() - started)) >= 1:
        command = [sys.executable, str(HERE / f"fuzz_{target}.py"), f"-max_total_time={int(left)}",
                   f"-timeout={UNIT_TIMEOUT_S}", f"-rss_limit_mb={RSS_LIMIT_MB}", f"-max_len={MAX_LEN[target]}",
                   "-print_final_stats=1", f"-artifact_prefix={artifacts}/", str(corpus)]
        command += [str(seeds)] if seeds.is_dir() else []
        env = {**os.environ, "FLAMEWATCH_FUZZ_FINDINGS": str(work / "findings")}
        with log.open("a") as out:
            process = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=HERE.parent)
        text = log.read_text(errors="replace")
        run_text = text[text.rfind("INFO: Seed:"):]  # this run's part of the log
        # A run that ends on a crash prints no final stats: its last progress line (#N) counts then.
        result.executions += max([int(n) for n in _EXECUTED.findall(run_text) + _PROGRESS.findall(run_text)] or [0])
        result.findings += [line.split(": ", 1)[1] for line in run_text.splitlines() if line.startswith("FINDING ")]
        if process.returncode != 0:
            artifact = _ARTIFACT.search(run_text)
            if "out-of-memory" in run_text and artifact and _alone_within_memory(target, artifact.group(1)):
                result.restarts += 1
                continue
            result.findings.append(f"process ended with {process.returncode}"
                                   + (f", input {artifact.group(1)}" if artifact else ""))
    result.seconds = time.monotonic() - started
    return result


def _alone_within_memory(target: str, artifact: str) -> bool:
    """Whether the input that hit the memory limit stays within it when run on its own."""
    command = [sys.executable, str(HERE / f"fuzz_{target}.py"), f"-rss_limit_mb={RSS_LIMIT_MB}", "-runs=3", artifact]
    return subprocess.run(command, capture_output=True, cwd=HERE.parent).returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600.0, help="budget per target")
    parser.add_argument("--work", type=Path, default=HERE.parent / ".cache" / "fuzz")
    parser.add_argument("targets", nargs="*", metavar="TARGET", help=f"any of {', '.join(TARGETS)} (default: all)")
    args = parser.parse_args()
    unknown = sorted(set(args.targets) - set(TARGETS))
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)}; the targets are {', '.join(TARGETS)}")
    results = []
    for target in args.targets or TARGETS:
        print(f"fuzzing {target} for {args.seconds:.0f} s (log: {args.work / 'logs' / target}.log)", flush=True)
        results.append(run_target(target, args.seconds, args.work))
        _print(results[-1])
    for r in results:
        (args.work / "results").mkdir(parents=True, exist_ok=True)
        (args.work / "results" / f"{r.target}.json").write_text(json.dumps(asdict(r), indent=2))
    print(f"\n{'target':<10} {'minutes':>8} {'executions':>12} {'exec/s':>8} {'restarts':>9} {'findings':>9}")
    for r in results:
        print(f"{r.target:<10} {r.seconds / 60:>8.1f} {r.executions:>12,} {r.executions / max(r.seconds, 1):>8.0f} "
              f"{r.restarts:>9} {len(r.findings):>9}")
    print(f"results: {args.work / 'results'}/")
    return 1 if any(r.findings for r in results) else 0


def _print(result: Result) -> None:
    print(f"  {result.target}: {result.seconds:.0f} s, {result.executions:,} executions, "
          f"{result.restarts} restarts, {len(result.findings)} findings", flush=True)
    for finding in result.findings:
        print(f"    - {finding}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
