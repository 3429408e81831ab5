"""What changed between two sets of profiles, function by function, and whether the data can tell.

Each profile is one observation. For every function, its share of its profile's total is taken twice:
self (the samples whose leaf it is) and total (the samples with it anywhere on the stack, counted once
per sample however often it recurses). Two sides (a baseline `a`, a candidate `b`) are compared per
function and per measure:

- the effect: the difference of the mean shares, b - a, in share points (0.01 is one percent of the
  total), with its 95 % interval (Welch's, from the two sides' variances);
- the significance: a two-sided Mann-Whitney U test of the two sides' shares (a rank test, so a few
  outlying profiles do not decide it), and the p-values of every test made, self and total of every
  function compared, adjusted for the false discovery rate (Benjamini-Hochberg, `scipy.stats`); a
  measure equal in every profile (no self time at all; the total of `main`) is not a test and not counted;
- a change is significant when its adjusted p-value is below `alpha` and both sides have at least
  `min_profiles` profiles; otherwise the data cannot tell and the change says so.

Functions whose mean total share stays below `min_share` on both sides are left out before testing
(they cannot matter and would only dilute the correction), then at most `max_functions` of the largest.
Everything is vectorised over functions: one rank test call, one correction call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MEASURES = ("self", "total")


@dataclass(frozen=True)
class Settings:
    # The false discovery rate a "significant" list may have. 0.01: the same build compared with itself is
    # called a regression in 0.25 % of comparisons, and +10 % in a function is still found every time, with
    # 10 minutes of 10 s profiles a side (bench/changes.py; at 0.05 it was 1.8 %, above the 1 % goal)
    alpha: float = 0.01
    min_profiles: int = 3  # per side, for a test at all
    min_share: float = 0.001  # of the total, on one side at least, for a function to be compared
    max_functions: int = 2000


@dataclass(frozen=True)
class Measure:
    """One measure (self or total) of one function on both sides, in shares of the total."""

    a: float  # mean share on side a
    b: float
    change: float  # b - a
    low: float  # 95 % interval of the change
    high: float
    p: float  # the rank test's p-value, adjusted for the false discovery rate
    significant: bool

    def json(self) -> dict:
        finite = {name: v if np.isfinite(v) else None for name, v in (("low", self.low), ("high", self.high))}
        return {"a": self.a, "b": self.b, "change": self.change, **finite, "p": self.p,
                "significant": self.significant}


@dataclass(frozen=True)
class FunctionChange:
    name: str
    self: Measure
    total: Measure

    def json(self) -> dict:
        return {"name": self.name, "self": self.self.json(), "total": self.total.json()}


@dataclass(frozen=True)
class Changes:
    functions: list[FunctionChange]  # ranked: largest increase first (by `order`), decreases last
    profiles: tuple[int, int]  # observations per side
    notes: tuple[str, ...] = ()

    def json(self) -> dict:
        return {"profiles": {"a": self.profiles[0], "b": self.profiles[1]},
                "functions": [f.json() for f in self.functions], "notes": list(self.notes)}

    def regressions(self, threshold: float, order: str = "self") -> list[FunctionChange]:
        """The significant increases of at least `threshold` share points (0.01: one percent of the total)."""
        return [f for f in self.functions
                if getattr(f, order).significant and getattr(f, order).change >= threshold]


def parse_share(text: str) -> float:
    """A share of the total as people write it: `1%` or `0.01`; ValueError saying the accepted forms."""
    text = str(text).strip()
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError as exc:
        raise ValueError(f"expected a share such as 1% or 0.01, got {text!r}") from exc
    if not 0 <= value <= 1:
        raise ValueError(f"a share is between 0% and 100%, got {text!r}")
    return value


def compare(names: np.ndarray, a_self: np.ndarray, a_total: np.ndarray, b_self: np.ndarray, b_total: np.ndarray,
            settings: Settings = Settings(), order: str = "self") -> Changes:  # noqa: B008 - frozen
    """Compare per-profile shares: `*_self` and `*_total` are (profiles x functions) arrays of shares of
    each profile's total (rows summing to 1 for self), columns matching `names`."""
    from scipy import stats

    if order not in MEASURES:
        raise ValueError(f"order must be self or total, got {order!r}")
    na, nb = len(a_self), len(b_self)
    notes = []
    if min(na, nb) < settings.min_profiles:
        notes.append(f"{min(na, nb)} profiles on the {'a' if na < nb else 'b'} side: at least "
                     f"{settings.min_profiles} per side are needed to tell a change from noise; "
                     "widen the range or wait for more profiles")
    mean_total = np.maximum(_mean(a_total), _mean(b_total))
    keep = np.flatnonzero(mean_total >= settings.min_share)
    if len(keep) > settings.max_functions:
        keep = keep[np.argsort(-mean_total[keep], kind="stable")[: settings.max_functions]]
        notes.append(f"only the {settings.max_functions} largest functions were compared")
    testable = min(na, nb) >= settings.min_profiles
    measures = {}
    p_values, varies = [], []
    for name, (a, b) in {"self": (a_self[:, keep], b_self[:, keep]),
                         "total": (a_total[:, keep], b_total[:, keep])}.items():
        change, low, high = _welch_interval(a, b)
        both = np.concatenate([a, b])
        # A measure equal in every profile (0 self time, 100 % total of main) is no hypothesis: left out of
        # the tests and of the correction, so it does not water the others down.
        varying = (both.max(axis=0) > both.min(axis=0)) if len(both) else np.zeros(len(keep), bool)
        p = np.ones(len(keep))
        if testable and varying.any():
            with np.errstate(invalid="ignore", divide="ignore"):
                p[varying] = stats.mannwhitneyu(b[:, varying], a[:, varying], alternative="two-sided", axis=0,
                                                method="asymptotic").pvalue
        measures[name] = (_mean(a), _mean(b), change, low, high)
        p_values.append(np.where(np.isnan(p), 1.0, p))
        varies.append(varying & testable)
    tested = np.concatenate(varies)
    adjusted = np.ones(2 * len(keep))
    if tested.any():
        adjusted[tested] = stats.false_discovery_control(np.concatenate(p_values)[tested])
    adjusted = np.minimum(adjusted, 1.0).reshape(2, len(keep))
    out = []
    for j, column in enumerate(keep.tolist()):
        per = {}
        for i, name in enumerate(MEASURES):
            ma, mb, change, low, high = (float(v[j]) for v in measures[name])
            q = float(adjusted[i, j])
            per[name] = Measure(ma, mb, change, low, high, q, bool(varies[i][j]) and q < settings.alpha)
        out.append(FunctionChange(str(names[column]), per["self"], per["total"]))
    out.sort(key=lambda f: (-getattr(f, order).change, f.name))
    return Changes(out, (na, nb), tuple(notes))


def _mean(x: np.ndarray) -> np.ndarray:
    return x.mean(axis=0) if len(x) else np.zeros(x.shape[1])


def _welch_interval(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """b - a of the means and its 95 % interval (Welch); a side of one profile has no spread to use."""
    from scipy import stats

    change = _mean(b) - _mean(a)
    na, nb = len(a), len(b)
    if min(na, nb) < 2:
        return change, np.full_like(change, -np.inf), np.full_like(change, np.inf)
    va, vb = a.var(axis=0, ddof=1) / na, b.var(axis=0, ddof=1) / nb
    se = np.sqrt(va + vb)
    with np.errstate(invalid="ignore", divide="ignore"):
        df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    t = np.where(se > 0, stats.t.ppf(0.975, np.where(np.isfinite(df) & (df > 0), df, 1.0)), 0.0)
    return change, change - t * se, change + t * se
