"""Profile type ids and the split of one pprof into one typed profile per sample type.

A profile type id is `name:sample_type:sample_unit:period_type:period_unit`, for example
`process_cpu:cpu:nanoseconds:cpu:nanoseconds` or `memory:inuse_space:bytes:space:bytes`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flamewatch.pprof.errors import InvalidProfileName
from flamewatch.pprof.model import Profile
from flamewatch.pprof.naming import check_part, profile_name, safe_part

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
        try:
            if len(parts) != 5:
                raise InvalidProfileName("expected 5 parts")
            for part in parts:
                check_part(part)
        except InvalidProfileName as exc:
            raise InvalidProfileName(
                f'invalid profile type "{text}": expected name:sample_type:sample_unit:period_type:period_unit, '
                "each of letters, digits, _ . -, for example process_cpu:cpu:nanoseconds:cpu:nanoseconds"
            ) from exc
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


def split(profile: Profile, name: str | None = None, hint: str | None = None) -> list[TypedProfile]:
    """One typed profile per sample type, all sharing the source's stacks and symbols.

    `name` and `hint` are the explicit name and the hint of `naming.profile_name`."""
    base = profile_name(profile, name, hint)
    period_type, period_unit = (safe_part(profile.string(i)) or "none" for i in profile.period_type)
    out = []
    for column, (sample_type, unit) in enumerate(profile.sample_type_names()):
        ptype = ProfileType(base, safe_part(sample_type) or "unknown", safe_part(unit) or "count", period_type,
                            period_unit)
        out.append(TypedProfile(ptype, profile, profile.samples.values[:, column]))
    return out

