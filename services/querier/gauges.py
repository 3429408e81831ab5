"""What a gauge's values are divided by. A gauge (in-use memory, goroutines) is averaged over time per
series and summed across series: each profile's values are divided by the profiles its series has in the
merged range, so every source of a merge divides alike (exactly, as `shares`), however the rows were
split between sources, replicas or index rows taken whole (`mergeplan`)."""

from __future__ import annotations

import numpy as np

from flamewatch.storage.index import ProfileRows
from flamewatch.storage.mergeplan import WholeRows


def gauge_weights(rows: ProfileRows) -> np.ndarray:
    """Average over time within each series: each profile weighs 1 / (profiles of its series)."""
    return 1.0 / gauge_divisors(rows)


def gauge_divisors(rows: ProfileRows) -> np.ndarray:
    """The profiles of each row's series: what a gauge's values are divided by (`gauge_weights`)."""
    _, inverse, counts = np.unique(rows.series_id, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)].astype(np.int64)


def series_profiles(rows: ProfileRows, whole: WholeRows) -> tuple[np.ndarray, np.ndarray]:
    """The series of a merge's profile rows and whole index rows (ascending), and each one's profiles."""
    series, at = np.unique(np.concatenate([rows.series_id, whole.series_id]), return_inverse=True)
    counts = np.concatenate([np.ones(len(rows), np.int64), whole.count])
    return series, np.bincount(at.reshape(-1), weights=counts, minlength=len(series)).astype(np.int64)


def filled(given: tuple[np.ndarray, np.ndarray], here: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Divisors per series (ascending): those `given`, and for the series they lack, those counted `here`."""
    series = np.union1d(given[0], here[0])
    profiles = np.zeros(len(series), np.int64)
    profiles[np.searchsorted(series, here[0])] = here[1]
    profiles[np.searchsorted(series, given[0])] = given[1]
    return series, profiles


def series_divisors(series_id: np.ndarray, series: np.ndarray, profiles: np.ndarray) -> np.ndarray:
    """The divisor of each whole index row's series, every one of them among `series` (ascending)."""
    return profiles[np.searchsorted(series, series_id)].astype(np.int64)


def divisors_of(rows: ProfileRows, series: np.ndarray, profiles: np.ndarray) -> np.ndarray:
    """Each row's divisor from its series' profiles over a whole range (`series` ascending); a series
    the counts did not see (its profiles arrived since) counts its rows here."""
    at = np.minimum(np.searchsorted(series, rows.series_id), max(len(series) - 1, 0))
    known = (series[at] == rows.series_id) if len(series) else np.zeros(len(rows), bool)
    out = np.where(known, profiles[at] if len(series) else 0, 0)
    if not known.all():
        out[~known] = gauge_divisors(rows.take(np.flatnonzero(~known)))
    return out.astype(np.int64)
