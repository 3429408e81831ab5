"""False alarms and sensitivity of "what changed" (issue 20) on real CPU profiles of a Go program.

A pool of CPU profiles of `tests/targets/regress` is captured once (`changes_pool.py`): the base build,
and builds spending 1, 2, 3, 5, 10 and 20 % more CPU in main.hash (about half of the program's CPU).
Each profile holds what a 10 s scrape of one busy core at Go's 100 Hz holds, about 1,000 samples (see
bench/README.md for why it is taken as 3,600 requests at 250 Hz). A side is 10 minutes of 10 s profiles:
60 profiles. Every comparison goes through `flamewatch.changes.stats.compare` with its default settings
(Mann-Whitney U per function and measure, Benjamini-Hochberg at 5 %), ranked by self share, as the gate
and the querier do.

- False positives: two disjoint random draws of 60 from the base pool, `--comparisons` times; the rate
  of comparisons calling any function a significant regression (threshold 0 and 1 % of the total), with
  a 95 % Clopper-Pearson interval, and the rate per test made. A check across processes compares base
  runs (processes) with each other, which random draws from one pool would hide.
- Sensitivity: per slower build, `--tries` draws of 60 base and 60 slower profiles; the fraction in which
  main.hash is ranked first and significant. The smallest change found at >= 90 % is the result.

Prints the table and writes `bench/results/<UTC time>-changes.md`. `--alpha` adds the figures at other
false discovery rates (the trade-off of the one setting that sets both).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from changes_pool import Shape, capture, complete_runs, profiles
from report import RESULTS_DIR, environment, stamp

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "libs")]

from flamewatch.changes.pprof_files import aligned, file_shares  # noqa: E402
from flamewatch.changes.stats import Changes, Settings, compare  # noqa: E402

SLOWER = (1, 2, 3, 5, 10, 20)
TARGET = "main.hash"
GOAL_FP, GOAL_FOUND, GOAL_SHARE = 0.01, 0.9, 0.03
SENSITIVITY_HEADER = ("| main.hash made slower | its self share: expected change | change of the pools' means | "
                      "found: ranked first, significant | found at a 1 % threshold | noise model | tries | "
                      "slower side: profiles |")


@dataclass
class Pool:
    """Every captured profile as rows of shares over one set of function names."""

    names: np.ndarray
    self: np.ndarray
    total: np.ndarray
    samples: np.ndarray  # per profile
    build: np.ndarray  # extra % per profile
    run: np.ndarray  # the process it came from, per build

    def rows(self, extra: int) -> np.ndarray:
        return np.flatnonzero(self.build == extra)


def load(shape: Shape) -> Pool:
    paths, build, run = [], [], []
    for extra in (0, *SLOWER):
        for k, directory in enumerate(complete_runs(extra, shape)):
            files = [p for p in profiles(extra, shape) if p.parent == directory]
            paths += files
            build += [extra] * len(files)
            run += [k] * len(files)
    names, selfs, totals, wholes = file_shares(paths, "samples")
    columns = np.unique(np.concatenate(names))
    return Pool(columns, aligned(names, selfs, columns), aligned(names, totals, columns), np.array(wholes),
                np.array(build), np.array(run))


def compare_rows(pool: Pool, a: np.ndarray, b: np.ndarray, settings: Settings) -> Changes:
    return compare(pool.names, pool.self[a], pool.total[a], pool.self[b], pool.total[b], settings, "self")


def tests_made(pool: Pool, a: np.ndarray, b: np.ndarray, settings: Settings) -> int:
    """How many (function, measure) tests `compare` made: kept functions whose measure varies."""
    both = np.concatenate([a, b])
    keep = np.maximum(pool.total[a].mean(0), pool.total[b].mean(0)) >= settings.min_share
    return int(sum((m[both][:, keep].max(0) > m[both][:, keep].min(0)).sum() for m in (pool.self, pool.total)))


def false_positives(pool: Pool, side: int, comparisons: int, settings: Settings, rng: np.random.Generator) -> dict:
    base = pool.rows(0)
    any0 = any1 = any_sig = sig_tests = tests = 0
    for _ in range(comparisons):
        drawn = rng.permutation(base)[: 2 * side]
        a, b = drawn[:side], drawn[side:]
        changes = compare_rows(pool, a, b, settings)
        any0 += bool(changes.regressions(0.0))
        any1 += bool(changes.regressions(0.01))
        significant = sum(m.significant for f in changes.functions for m in (f.self, f.total))
        any_sig += significant > 0
        sig_tests += significant
        tests += tests_made(pool, a, b, settings)
    return {"comparisons": comparisons, "threshold 0": any0, "threshold 1 %": any1, "any direction": any_sig,
            "significant tests": sig_tests, "tests": tests}


def across_runs(pool: Pool, settings: Settings) -> list[tuple[str, int, int]]:
    """Base runs (processes) against each other, which random draws from one pool mix: run 0 with each other
    run against the rest, both ways (with four runs of 30 profiles, every split into two sides of 60)."""
    base = pool.rows(0)
    runs = np.unique(pool.run[base]).tolist()
    out = []
    for other in runs[1:] if len(runs) > 2 else runs[1:2]:
        left = np.isin(pool.run[base], [runs[0], other] if len(runs) > 2 else [runs[0]])
        a, b = base[left], base[~left]
        name = "+".join(str(r) for r in sorted(set(pool.run[a].tolist())))
        for label, x, y in ((f"runs {name} -> the others", a, b), (f"the others -> runs {name}", b, a)):
            changes = compare_rows(pool, x, y, settings)
            out.append((label, len(changes.regressions(0.0)), len(changes.regressions(0.01))))
    return out


def sensitivity(pool: Pool, side: int, tries: int, settings: Settings, rng: np.random.Generator,
                tests: float) -> list[dict]:
    """Per slower build, the fraction of tries finding main.hash; `tests`: tests per comparison, for the model."""
    base, hash_column = pool.rows(0), int(np.searchsorted(pool.names, TARGET))
    sd = pool.self[base, hash_column].std(ddof=1)
    out = []
    for extra in SLOWER:
        slower = pool.rows(extra)
        # A smaller pool is compared with fewer profiles on its side: the fraction found is then a lower bound.
        side_b = min(side, len(slower))
        if side_b < 3:
            continue
        first = at1 = 0
        for _ in range(tries):
            a, b = rng.choice(base, side, replace=False), rng.choice(slower, side_b, replace=False)
            changes = compare_rows(pool, a, b, settings)
            top = changes.functions[0]
            first += top.name == TARGET and top.self.significant and top.self.change > 0
            at1 += any(f.name == TARGET for f in changes.regressions(0.01))
        p0 = pool.self[base, hash_column].mean()
        change = pool.self[slower, hash_column].mean() - p0
        # What the build should change: main.hash's CPU times 1 + extra, everything else the same.
        expected = p0 * (1 + extra / 100) / (1 + p0 * extra / 100) - p0
        out.append({"extra": extra, "change": change, "expected": expected, "found": first / tries,
                    "found at 1 %": at1 / tries, "tries": tries, "pool": len(slower), "side": side_b,
                    "model": model_power(expected, sd, side, side_b, settings.alpha, tests),
                    "needed": needed_change(sd, side, settings.alpha, tests)})
    return out


def model_power(change: float, sd: float, na: int, nb: int, alpha: float, tests: float) -> float:
    """What the noise alone predicts, since a try's slower side is (nearly) its whole pool and so the fraction
    found follows that pool's mean: main.hash's two tests (self, total), ranked first of `tests`, pass
    Benjamini-Hochberg at 2 alpha / tests; the rank test's efficiency on normal data is 3 / pi."""
    from scipy import stats

    z = change * np.sqrt(3 / np.pi) / (sd * np.sqrt(1 / na + 1 / nb))
    return float(stats.norm.cdf(z - stats.norm.ppf(1 - alpha / tests)))


def needed_change(sd: float, side: int, alpha: float, tests: float) -> float:
    """The change in share points the model finds in 90 % of tries with `side` profiles on both sides."""
    from scipy import stats

    z = stats.norm.ppf(1 - alpha / tests) + stats.norm.ppf(GOAL_FOUND)
    return float(z * sd * np.sqrt(2 / side) / np.sqrt(3 / np.pi))


def noise(pool: Pool) -> list[str]:
    """Is a profile's main.hash share as noisy as its sample count alone makes it (binomial), and do runs differ?"""
    from scipy import stats

    column = int(np.searchsorted(pool.names, TARGET))
    lines = ["| build | profiles | samples per profile (median) | main.hash self share | sd across profiles | "
             "binomial sd | ratio | runs' means | Kruskal-Wallis p across runs |", "|---" * 9 + "|"]
    for extra in (0, *SLOWER):
        rows = pool.rows(extra)
        if not len(rows):
            continue
        share, n = pool.self[rows, column], pool.samples[rows]
        p = share.mean()
        binomial = np.sqrt(p * (1 - p) / n).mean()
        groups = [share[pool.run[rows] == r] for r in np.unique(pool.run[rows])]
        kw = stats.kruskal(*groups).pvalue if len(groups) > 1 else float("nan")
        means = ", ".join(f"{g.mean():.4f}" for g in groups)
        lines.append(f"| {'base' if extra == 0 else f'+{extra} %'} | {len(rows)} | {np.median(n):.0f} | {p:.4f} | "
                     f"{share.std(ddof=1):.4f} | {binomial:.4f} | {share.std(ddof=1) / binomial:.2f} | {means} | "
                     f"{kw:.3f} |")
    return lines


def interval(k: int, n: int) -> tuple[float, float]:
    from scipy import stats

    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return ci.low, ci.high


def rate(k: int, n: int) -> str:
    if n == 0:
        return "none made"
    low, high = interval(k, n)
    return f"{k}/{n} = {k / n:.1%} (95 % interval {low:.1%} to {high:.1%})"


def _fp_row(measure: str, k: int, n: int) -> str:
    return f"| {measure} | <= 1 % of comparisons | {rate(k, n)} | {'yes' if k / n <= GOAL_FP else 'NO'} |"


def report_lines(fp: dict, runs: list, sens: list[dict], alpha: float) -> tuple[list[str], list[str]]:
    """The table rows (measure | goal | figure | met?) and the per-change sensitivity rows at one alpha."""
    n = fp["comparisons"]
    found = [s for s in sens if s["found"] >= GOAL_FOUND]
    smallest = min(found, key=lambda s: s["change"]) if found else None
    table = [
        _fp_row(f"false positives, threshold 0 (alpha {alpha:g})", fp["threshold 0"], n),
        _fp_row(f"false positives, threshold 1 % (alpha {alpha:g})", fp["threshold 1 %"], n),
        f"| significant tests per test made, either direction (alpha {alpha:g}) | | "
        f"{rate(fp['significant tests'], fp['tests'])}; comparisons with any: {fp['any direction']}/{n} | |",
        f"| smallest change found at >= 90 % of tries (alpha {alpha:g}) | <= 3 % of total CPU | " + (
            f"+{smallest['extra']} % in main.hash = {smallest['change']:+.2%} of the total "
            f"({smallest['found']:.0%} of tries); the noise model needs {smallest['needed']:+.2%} | "
            f"{'yes' if max(smallest['change'], smallest['needed']) <= GOAL_SHARE else 'NO'} |"
            if smallest else "none of the builds | NO |"),
    ]
    per_change = [f"| +{s['extra']} % | {s['expected']:+.2%} | {s['change']:+.2%} | {s['found']:.0%} | "
                  f"{s['found at 1 %']:.0%} | {s['model']:.0%} | {s['tries']} | {s['side']} ({s['pool']} in the pool) |"
                  for s in sens]
    return table, per_change


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-profiles", type=int, default=240, help="base pool (at least twice --side)")
    parser.add_argument("--slower-profiles", type=int, default=60, help="pool of each slower build")
    parser.add_argument("--side", type=int, default=60, help="profiles per side: 10 minutes of 10 s profiles")
    parser.add_argument("--requests", type=int, default=3600, help="requests per profile (about 4 s of CPU)")
    parser.add_argument("--hz", type=int, default=250, help="sampling rate: 250 Hz is what this kernel's tick gives")
    parser.add_argument("--chunk", type=int, default=30, help="profiles per capturing process")
    parser.add_argument("--capture-minutes", type=float, default=60.0,
                        help="stop capturing after this long and use the profiles finished by then")
    parser.add_argument("--comparisons", type=int, default=400)
    parser.add_argument("--tries", type=int, default=100)
    parser.add_argument("--alpha", type=float, nargs="*", default=[0.05, 0.02, 0.01],
                        help="false discovery rates to run at; the first is the default of stats.Settings")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--capture-only", action="store_true")
    args = parser.parse_args()
    run_stamp, start = stamp(), environment()
    shape = Shape(args.requests, args.hz)
    wanted = {0: args.base_profiles, **dict.fromkeys(SLOWER, args.slower_profiles)}
    capture(wanted, shape, args.chunk, args.capture_minutes)
    if args.capture_only:
        return
    pool = load(shape)
    print(f"pool: {len(pool.rows(0))} base profiles, " + ", ".join(
        f"+{e} %: {len(pool.rows(e))}" for e in SLOWER), flush=True)
    table = ["| measure | goal | Flamewatch | met? |", "|---|---|---|---|"]
    details = []
    for alpha in args.alpha:
        settings = Settings(alpha=alpha)
        rng = np.random.default_rng(args.seed)
        fp = false_positives(pool, args.side, args.comparisons, settings, rng)
        sens = sensitivity(pool, args.side, args.tries, settings, rng, fp["tests"] / fp["comparisons"])
        runs = across_runs(pool, settings)
        rows, per_change = report_lines(fp, runs, sens, alpha)
        table += rows
        details += [f"### alpha {alpha:g}", "", SENSITIVITY_HEADER, "|---" * 8 + "|",
                    *per_change, "",
                    "Base runs (processes) against each other, significant regressions at threshold 0 / 1 %: " +
                    "; ".join(f"{label}: {r0} / {r1}" for label, r0, r1 in runs), ""]
        print(f"alpha {alpha:g} done", flush=True)
    end = environment()
    text = "\n".join([
        f"# What changed: false alarms and sensitivity, {run_stamp}", "",
        f"Commit {start['commit']}, {start['cores']} cores shared with other work, run under nice: load average "
        f"{start['load_average']} at the start, {end['load_average']} at the end (the profiles themselves were "
        "captured earlier and are cached; each covers a fixed number of requests, so load does not change them).", "",
        f"Profiles of tests/targets/regress, {args.requests} requests each sampled at {args.hz} Hz (median "
        f"{np.median(pool.samples):.0f} samples; aimed at the ~1,000 of a 10 s scrape of one busy core at 100 Hz); "
        f"{args.side} profiles per side ({args.side / 6:g} minutes of 10 s profiles); pools: {len(pool.rows(0))} base, "
        + ", ".join(f"+{e} %: {len(pool.rows(e))}" for e in SLOWER)
        + f". {args.comparisons} false-positive comparisons of two disjoint random draws from the base pool; "
        f"{args.tries} tries per slower build (base side drawn from the base "
        "pool). stats.compare with Settings(alpha=...), ranked by self share.", "",
        *table, "", "## Sensitivity per change", "", *details,
        "## Noise per profile", "", *noise(pool), ""])
    print(text)
    out = RESULTS_DIR / f"{run_stamp}-changes.md"
    out.write_text(text)
    print(f"written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
