"""The tables of `ingest_cost.py`: issue 21's goals against Pyroscope's figures, the runs, the variants,
and what moved with the CPU figure between runs; the Markdown written to `results/`."""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ingest_cost import Run

MB = 1e6  # the table's MB are 10^6 bytes (a MiB would read 5 % smaller)


@dataclass(frozen=True)
class Pyroscope:
    """Grafana Pyroscope v2's figures on the same machine, payloads and client (issue 21), min and max."""

    cpu_ms: dict[str, tuple[float, float]] = field(default_factory=lambda: {"small": (3.1, 3.3),
                                                                            "large": (17.7, 18.2)})
    memory_mb: dict[str, tuple[float, float]] = field(default_factory=lambda: {"small": (225, 230),
                                                                               "large": (767, 820)})
    ack_p50_ms: float = 500.0


PYROSCOPE = Pyroscope()

def median_range(values: list[float], fmt: str = "{:.2f}") -> str:
    values = [v for v in values if v == v]
    if not values:
        return "n/a"
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def spread_pct(values: list[float]) -> float:
    """Half the range as a percentage of the median: ±x % around it."""
    middle = statistics.median(values)
    return 100 * (max(values) - min(values)) / 2 / middle if middle else float("nan")


def goal_rows(runs: list[Run], workloads: list[str]) -> list[list[str]]:
    """Issue 21's goals that these runs measure, from the runs at the server's defaults."""
    at_defaults = {w: [r for r in runs if r.workload == w and r.variant == "defaults"] for w in workloads}
    at_defaults = {w: group for w, group in at_defaults.items() if group}
    rows = [row for w, group in at_defaults.items() for row in _cost_rows(w, group)]
    rows += [_latency_row(w, group) for w, group in at_defaults.items()]
    rows += [_compaction_row([r for group in at_defaults.values() for r in group])] if at_defaults else []
    rows += [_spread_row(w, group) for w, group in at_defaults.items() if len(group) > 1]
    return rows


def _cost_rows(w: str, group: list[Run]) -> list[list[str]]:
    cpu, pss = [r.ms() for r in group], [r.peak_pss_mb for r in group]
    (cpu_low, cpu_high), (mem_low, mem_high) = PYROSCOPE.cpu_ms[w], PYROSCOPE.memory_mb[w]
    return [[f"server CPU per profile, {_workload_name(w)}, Postgres included", "≤ Pyroscope's",
             f"{cpu_low:g}–{cpu_high:g} ms", median_range(cpu) + " ms", _met(statistics.median(cpu) <= cpu_high)],
            [f"peak memory of all processes (sum of PSS), {_workload_name(w)}", "≤ Pyroscope's",
             f"{mem_low:g}–{mem_high:g} MB", median_range(pss, "{:.0f}") + " MB",
             _met(statistics.median(pss) <= mem_high)]]


def _latency_row(w: str, group: list[Run]) -> list[str]:
    p50 = [r.ack_p50_ms for r in group]
    return [f"acknowledgement latency p50 at the defaults, {_workload_name(w)}", "≤ 0.5 s",
            f"{PYROSCOPE.ack_p50_ms:.0f} ms", median_range(p50, "{:.0f}") + " ms", _met(statistics.median(p50) <= 500)]


def _compaction_row(group: list[Run]) -> list[str]:
    share = 100 * sum(r.cpu_s["compactor"] for r in group) / sum(r.cpu_s["main"] + r.cpu_s["postgres"] for r in group)
    return ["compaction CPU as a share of ingest CPU for the same profiles", "≤ 10 %", "",
            f"compactor during the runs: {share:.1f} % (a round of these profiles runs once their hour ends: "
            "`compaction_cost.py` measures it)", "n/a"]


def _spread_row(w: str, group: list[Run]) -> list[str]:
    pct = spread_pct([r.ms() for r in group])
    return [f"CPU per profile, spread between {len(group)} identical runs, {_workload_name(w)}", "≤ ±10 %",
            "±5 % (issue)", f"±{pct:.1f} %", _met(pct <= 10)]


def _workload_name(w: str) -> str:
    return {"small": "small real Go CPU profiles", "large": "300 KB profiles"}[w]


def _met(ok: bool) -> str:
    return "yes" if ok else "NO"


def goals_table(rows: list[list[str]]) -> str:
    lines = ["| measure | goal | Pyroscope (issue 21) | Flamewatch median (min–max) | met? |", "|---|---|---|---|---|"]
    return "\n".join(lines + [f"| {' | '.join(r)} |" for r in rows])


def runs_table(runs: list[Run]) -> str:
    lines = ["| workload | variant | run | CPU ms/profile: total | all | compactor | Postgres | Postgres share | "
             "peak PSS MB: sum (all / compactor / Postgres) | sum of RSS | main VmHWM MB | ack p50 / p95 ms | wall s | "
             "load 1-min start → end | checkpoints (buffers) | autovacuum | WAL MB | GC gen 0 / 1 / 2 | self-scrapes | "
             "flushes | compacted blocks | failed |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        b = r.background
        lines.append(
            f"| {r.workload} | {r.variant} | {r.number + 1} | {r.ms():.2f} | {r.ms('main'):.2f} | "
            f"{r.ms('compactor'):.2f} | {r.ms('postgres'):.2f} | "
            f"{100 * r.cpu_s['postgres'] / max(r.cpu_s['total'], 1e-9):.0f} % | "
            f"{r.peak_pss_mb:.0f} ({' / '.join(f'{v:.0f}' for v in r.peak_pss_parts_mb.values())}) | "
            f"{r.peak_rss_mb:.0f} | {r.main_hwm_mb:.0f} | "
            f"{r.ack_p50_ms:.0f} / {r.ack_p95_ms:.0f} | {r.wall_s:.1f} | "
            f"{r.load_start[0]:.2f} → {r.load_end[0]:.2f} | {b['checkpoints']:.0f} ({b['checkpoint_buffers']:.0f}) | "
            f"{b['autovacuums']:.0f} | {b['wal_bytes'] / MB:.1f} | {b['gc_gen0']:.0f} / {b['gc_gen1']:.0f} / "
            f"{b['gc_gen2']:.0f} | {b['self_scrapes']:.0f} | {b['blocks_level0']:.0f} | {b['blocks_compacted']:+.0f} | "
            f"{r.failed} |")
    return "\n".join(lines)


def variants_table(runs: list[Run]) -> str:
    """Per workload and variant: the medians that tell a flush interval or an arrival pattern apart."""
    lines = ["| workload | variant | runs | CPU ms/profile | all | Postgres | ack p50 ms | ack p95 ms | peak PSS MB | "
             "pushes answered per s | pushes per flush | idle CPU ms/s | CPU ms/profile above idle |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (w, v), group in _groups(runs).items():
        lines.append(f"| {w} | {v} | {len(group)} | {median_range([r.ms() for r in group])} | "
                     f"{statistics.median(r.ms('main') for r in group):.2f} | "
                     f"{statistics.median(r.ms('postgres') for r in group):.2f} | "
                     f"{median_range([r.ack_p50_ms for r in group], '{:.0f}')} | "
                     f"{median_range([r.ack_p95_ms for r in group], '{:.0f}')} | "
                     f"{statistics.median(r.peak_pss_mb for r in group):.0f} | "
                     f"{statistics.median(r.pushed / r.wall_s for r in group if r.wall_s):.1f} | "
                     f"{statistics.median(r.pushed / max(1, r.background['blocks_level0']) for r in group):.1f} | "
                     f"{statistics.median(r.idle_ms_per_s for r in group):.1f} | "
                     f"{median_range([r.above_idle_ms() for r in group])} |")
    return "\n".join(lines)


def _groups(runs: list[Run]) -> dict[tuple[str, str], list[Run]]:
    groups: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.workload, r.variant), []).append(r)
    return groups


# What may have moved the CPU figure of a run, each as a number per run.
CANDIDATES = {
    "Postgres CPU ms/profile": lambda r: r.ms("postgres"),
    "compactor CPU ms/profile": lambda r: r.ms("compactor"),
    "checkpoints": lambda r: r.background["checkpoints"],
    "autovacuum runs": lambda r: r.background["autovacuums"],
    "WAL MB": lambda r: r.background["wal_bytes"] / MB,
    "GC gen 2": lambda r: r.background["gc_gen2"],
    "GC gen 0+1": lambda r: r.background["gc_gen0"] + r.background["gc_gen1"],
    "blocks compacted": lambda r: r.background["blocks_compacted"],
    "flushes": lambda r: r.background["blocks_level0"],
    "main process system CPU ms/profile": lambda r: 1e3 * r.background["main_system_s"] / r.pushed,
    "main process page faults/profile": lambda r: r.background["main_minor_faults"] / r.pushed,
    "main process preempted/profile": lambda r: r.background["main_preempted"] / r.pushed,
    "self-scrapes": lambda r: r.background["self_scrapes"],
    "idle CPU ms/s before the run": lambda r: r.idle_ms_per_s,
    "load at start": lambda r: r.load_start[0],
    "wall s": lambda r: r.wall_s,
}


def spread(runs: list[Run]) -> str:
    """Per workload and variant with 3 runs or more: which part of the CPU figure moved between the
    cheapest and the dearest run, and how each candidate correlates with the total (Pearson over the
    runs: with 5 runs only a strong one means anything)."""
    out = []
    for (w, v), group in _groups(runs).items():
        if len(group) < 3:
            continue
        cheap, dear = min(group, key=lambda r: r.ms()), max(group, key=lambda r: r.ms())
        moved = dear.ms() - cheap.ms()
        parts = ", ".join(f"{part} {dear.ms(part) - cheap.ms(part):+.2f}" for part in ("main", "compactor", "postgres"))
        total = np.array([r.ms() for r in group])
        corr = []
        for name, get in CANDIDATES.items():
            values = np.array([get(r) for r in group], float)
            if np.ptp(values) > 0 and np.ptp(total) > 0:
                r = float(np.corrcoef(values, total)[0, 1])
                corr.append((abs(r), name, r, values))
        corr.sort(key=lambda c: c[0], reverse=True)
        lines = [f"- **{w}, {v}** ({len(group)} runs, ±{spread_pct(list(total)):.1f} %): the dearest run (run "
                 f"{dear.number + 1}, {dear.ms():.2f} ms) cost {moved:.2f} ms per profile more than the cheapest (run "
                 f"{cheap.number + 1}, {cheap.ms():.2f} ms): {parts} ms (all, compactor, Postgres)."]
        lines += [f"  - {name}: r = {r:+.2f} (per run: {', '.join(f'{x:g}' for x in np.round(values, 2))})"
                  for _, name, r, values in corr]
        out.append("\n".join(lines))
    return "\n".join(out) if out else "(fewer than 3 runs of a workload: no spread to explain)"


# ------------------------------------------------------------------------------------- main


def markdown(name: str, args: argparse.Namespace, env: dict, runs: list[Run], pool_sizes: str, large_size: str) -> str:
    errors = [e for r in runs for e in r.errors][:5]
    pattern = f"open loop at {args.rate:g} pushes/s" if args.rate else f"{args.clients} clients, closed loop"
    rows = goal_rows(runs, args.workloads)
    return (f"# Ingest cost against Pyroscope, {name}\n\nCommit {env['end']['commit']}, {env['end']['cores']} cores, "
            f"shared with other work: load average (1, 5, 15 min) {env['start']['load_average']} at the start, "
            f"{env['end']['load_average']} at the end.\n\nSettings: `{json.dumps(vars(args))}`\n\n"
            f"A fresh `flamewatch all` at its defaults per run; {pattern}, one pprof per `POST /ingest` in the "
            f"Pyroscope SDKs' form ({args.form}). Small: {args.small} real Go CPU profiles ({pool_sizes}); large: "
            f"{args.large} synthetic profiles ({large_size}). Server CPU is `flamewatch all`, its compactor child and "
            f"the embedded Postgres's tree, first send to last answer, per profile; memory the peak of the sum of "
            f"their PSS (every {args.sample_every:g} s). MB are 10^6 bytes. A goal is met when the median is at or "
            f"below Pyroscope's highest figure.\n\n"
            + (f"{goals_table(rows)}\n\n" if rows else "")
            + f"## Variants\n\n{variants_table(runs)}\n\n## Runs\n\n{runs_table(runs)}\n\n"
            f"## Spread: what moved with the CPU figure\n\n{spread(runs)}\n"
            + ("\nFirst errors:\n\n" + "\n".join(f"- `{e}`" for e in errors) + "\n" if errors else ""))
