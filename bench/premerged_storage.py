"""What pre-merged trees cost in storage: compacted blocks written with and without their trees section
(issue 22, goal: at most 20 % of the blocks).

    nice .venv/bin/python bench/premerged_storage.py [--hours 1]

Real Go profiles (the corpus of `corpus.py`, kept in `bench/corpus/`) are prepared as
the ingester prepares a push, written as flush blocks in process, and compacted with the compactor's
writer (`blockwrite.compact`, rows in `series_order`) twice: once with trees, once without. Workloads:

- one service, a 10 s CPU profile, for an hour (an hour block);
- a fleet of 5 services x 4 instances, a CPU and an allocs pprof (four sample types) every 30 s, an hour,
  and the same fleet every 10 minutes (few profiles per tree: where trees cost most);
- one service, a CPU and an allocs pprof every 60 s for six hours, in one block (a day block holds a
  tree per series and hour).

No services, no Postgres: only the block writer runs. Output: a table on stdout and
`bench/results/<UTC time>-premerged-storage.md`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]

from corpus import at_time, load_or_capture  # noqa: E402
from report import RESULTS_DIR, environment, stamp  # noqa: E402

from flamewatch.ingester.config import IngestLimits  # noqa: E402
from flamewatch.ingester.prepare import prepare  # noqa: E402
from flamewatch.storage.blockread import BlockReader  # noqa: E402
from flamewatch.storage.blockwrite import compact, series_order, write_block  # noqa: E402

MIN = 60 * 10**9
HOUR = 60 * MIN
BASE = 1_767_600_000 * 10**9  # 2026-01-05 08:00 UTC, on the hour
PUSHES_PER_FLUSH = 10


@dataclass(frozen=True)
class Workload:
    name: str
    series: list[dict[str, str]]
    kinds: tuple[str, ...]
    every_s: int
    hours: int


@dataclass(frozen=True)
class Measured:
    workload: Workload
    profiles: int
    trees: int
    plain_bytes: int
    trees_bytes: int
    plain_cpu_s: float  # CPU time of the compaction that wrote the block
    trees_cpu_s: float

    @property
    def overhead(self) -> float:
        return self.trees_bytes / self.plain_bytes - 1


def workloads(hours: int) -> list[Workload]:
    fleet = [{"service_name": f"svc{s}", "instance": f"i{i}"} for s in range(5) for i in range(4)]
    return [Workload("one service, 10 s CPU", [{"service_name": "api", "instance": "a"}], ("cpu",), 10, hours),
            Workload("fleet of 20, 30 s CPU + allocs", fleet, ("cpu", "allocs"), 30, hours),
            Workload("fleet of 20, 10 min CPU + allocs (6 per series and hour)", fleet, ("cpu", "allocs"), 600,
                     hours),
            Workload("one service, 60 s CPU + allocs, 6 h in one block", [{"service_name": "api", "instance": "a"}],
                     ("cpu", "allocs"), 60, 6 * hours)]


def flush_blocks(w: Workload, pool) -> list[BlockReader]:
    """The workload's pushes, prepared as the ingester does, `PUSHES_PER_FLUSH` to a flush block."""
    blocks, pending, n = [], [], 0
    for step in range(w.hours * 3600 // w.every_s):
        t = BASE + step * w.every_s * 10**9
        for labels in w.series:
            for kind in w.kinds:
                served = pool.profiles[kind][n % len(pool.profiles[kind])]
                n += 1
                pending += prepare(labels, at_time(served, t), IngestLimits(), t).entries
                if n % PUSHES_PER_FLUSH == 0:
                    blocks.append(BlockReader(write_block(pending)))
                    pending = []
    if pending:
        blocks.append(BlockReader(write_block(pending)))
    return blocks


def measure(w: Workload, pool) -> Measured:
    blocks = flush_blocks(w, pool)
    parts = [(r, np.arange(r.profiles.num_rows)) for r in blocks]
    order = series_order(parts)
    started = time.process_time()
    plain = compact(parts, order)
    plain_cpu = time.process_time() - started
    with_trees = compact(parts, order, trees=True)
    trees_cpu = time.process_time() - started - plain_cpu
    reader = BlockReader(with_trees)
    return Measured(w, reader.profiles.num_rows, len(reader.trees.fingerprint), len(plain), len(with_trees),
                    plain_cpu, trees_cpu)


def table(results: list[Measured]) -> str:
    lines = ["| workload | typed profiles | trees | block without trees | with trees | extra | compaction CPU "
             "without / with trees |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {m.workload.name} | {m.profiles} | {m.trees} | {m.plain_bytes / 1024:.1f} KiB | "
              f"{m.trees_bytes / 1024:.1f} KiB | {100 * m.overhead:+.1f} % | {m.plain_cpu_s:.2f} / "
              f"{m.trees_cpu_s:.2f} s |" for m in results]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=int, default=1, help="hours of the first two workloads (the third: 6x)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as logs:
        pool = load_or_capture(24, Path(logs))
    results = [measure(w, pool) for w in workloads(args.hours)]
    text = table(results)
    print(text)
    out = RESULTS_DIR / f"{stamp()}-premerged-storage.md"
    out.write_text(f"# Pre-merged trees: extra storage\n\n{environment()}\n\n{text}\n")
    print(f"written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
