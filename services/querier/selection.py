"""Which series a query selects, and which of its matchers apply to the samples instead.

A matcher whose label name a series has is applied to that series; otherwise it is applied to each
sample's pprof labels, where an absent label is "" (as for series labels). So
`{service_name="api", handler="/login"}` keeps the series of api and, in series without a `handler`
label, only the samples labelled handler="/login". Series differ in their labels, so each series gets
its own set of sample matchers (a "filter"); rows of one series share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flamewatch.labels.names import DERIVED_LABELS, SERIES_LABELS, with_derived
from flamewatch.labels.selector import Matcher
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier import deadline
from flamewatch.storage.index import ProfileRows, Series

# Labels every stored series has (the ingester sets them, or they derive from those: Pyroscope's
# `__type__`, `__service_name__`...), so matchers on them never reach samples and may be given to the
# index, whose GIN index serves the stored ones.
ALWAYS_SERIES_LABELS = SERIES_LABELS | DERIVED_LABELS

Filter = tuple[Matcher, ...]


@dataclass(frozen=True, eq=False)
class Selection:
    profile_type: ProfileType | None
    series: list[Series]
    filters: list[Filter]  # filters[0] is () (keep every sample)
    series_filter: dict[int, int]  # series id -> index into filters

    @property
    def by_samples(self) -> bool:
        """Whether some selected series keeps only some of its samples."""
        return len(self.filters) > 1

    def row_filters(self, rows: ProfileRows) -> np.ndarray:
        """The filter of each profile row, by its series."""
        ids = np.array(sorted(self.series_filter), np.int64)
        which = np.array([self.series_filter[i] for i in ids.tolist()], np.int64)
        return which[np.searchsorted(ids, rows.series_id)] if len(rows) else np.zeros(0, np.int64)


def check_matcher_count(matchers: Sequence[Matcher], limit: int) -> None:
    """Refuse a selector with more matchers than `--query.max-matchers` allows (0: no limit): each one
    costs a pass over the candidate series, or over their samples' label sets in every block read."""
    if limit and len(matchers) > limit:
        raise ValueError(f"the selector has {len(matchers)} label matchers, more than the {limit} a selector may "
                         "have (--query.max-matchers): combine them, e.g. several != on one label into one !~ "
                         "regex, or raise the limit")


def index_matchers(matchers: Sequence[Matcher]) -> tuple[Matcher, ...]:
    """The matchers the index may apply itself: those on labels every series has."""
    return tuple(m for m in matchers if m.name in ALWAYS_SERIES_LABELS)


def split(candidates: Sequence[Series], matchers: Sequence[Matcher], ptype: ProfileType | None) -> Selection:
    """The candidates whose own labels pass the matchers they have, each with the rest as its filter."""
    filters: list[Filter] = [()]
    index: dict[Filter, int] = {(): 0}
    series, series_filter = [], {}
    for s in candidates:  # one step per series, never per sample
        deadline.check()
        labels = with_derived(s.labels) if any(m.name in DERIVED_LABELS for m in matchers) else s.labels
        own = [m for m in matchers if m.name in labels]
        if not all(m.matches(labels[m.name]) for m in own):
            continue
        rest = tuple(m for m in matchers if m.name not in labels)
        series_filter[s.id] = index.setdefault(rest, len(filters))
        if series_filter[s.id] == len(filters):
            filters.append(rest)
        series.append(s)
    return Selection(ptype, series, filters, series_filter)
