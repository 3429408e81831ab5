"""Profile type ids and the split of one pprof into one typed profile per sample type.

A profile type id is `name:sample_type:sample_unit:period_type:period_unit`, for example
`process_cpu:cpu:nanoseconds:cpu:nanoseconds` or `memory:inuse_space:bytes:space:bytes`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from flamewatch.pprof.model import Profile

_PART = re.compile(r"[A-Za-z0-9_.\-]+")

# The profile name implied by the period type when the sender gave none.
_NAME_BY_PERIOD_TYPE = {"cpu": "process_cpu", "space": "memory", "goroutine": "goroutine", "wall": "wall"}

# Values that describe a state at one moment: summed across series, averaged over time.
_GAUGE_SAMPLE_TYPES = ("inuse_space", "inuse_objects", "goroutine", "goroutines")


@dataclass(frozen=True, order=True)
class ProfileType:
    name: str
    sample_type: str
    sample_unit: str
    period_type: str
    period_unit: str

    @property
    def id(self) -> str:
        return ":".join((self.name, self.sample_type, self.sample_unit, self.period_type, self.period_unit))

    @property
    def is_gauge(self) -> bool:
        return self.sample_type in _GAUGE_SAMPLE_TYPES

    @classmethod
    def parse(cls, text: str) -> ProfileType:
        parts = text.split(":")
        if len(parts) != 5 or not all(_PART.fullmatch(p) for p in parts):
            raise ValueError(
                f'invalid profile type "{text}": expected name:sample_type:sample_unit:period_type:period_unit, '
                "for example process_cpu:cpu:nanoseconds:cpu:nanoseconds"
            )
        return cls(*parts)


@dataclass(frozen=True, eq=False)
class TypedProfile:
    """One sample type of a pprof: the source profile's stacks with one column of values."""

    profile_type: ProfileType
    source: Profile
    values: np.ndarray  # int64, one per sample of source

    @property
    def total(self) -> int:
        return int(self.values.sum())


def profile_name(profile: Profile, given: str | None = None) -> str:
    if given:
        return given
    period_type = profile.string(profile.period_type[0])
    if period_type:
        return _NAME_BY_PERIOD_TYPE.get(period_type, _safe(period_type))
    return "unknown"


def split(profile: Profile, name: str | None = None) -> list[TypedProfile]:
    """One typed profile per sample type, all sharing the source's stacks and symbols."""
    base = profile_name(profile, name)
    period_type, period_unit = (_safe(profile.string(i)) or "none" for i in profile.period_type)
    out = []
    for column, (sample_type, unit) in enumerate(profile.sample_type_names()):
        ptype = ProfileType(base, _safe(sample_type) or "unknown", _safe(unit) or "count", period_type, period_unit)
        out.append(TypedProfile(ptype, profile, profile.samples.values[:, column]))
    return out


def _safe(text: str) -> str:
    """Profile type parts are restricted so ids stay parseable."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", text)
