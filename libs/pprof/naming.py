"""The one rule for naming profiles: which `__name__` a pushed or scraped pprof is stored under.

The name comes from the profile's content, its period type: `cpu` is `process_cpu`, `space` is
`memory`, `goroutine` is `goroutine`, `wall` is `wall`. Go's mutex and block profiles share the
period type `contentions`; the leaf frames tell them apart (a mutex profile records the unlocking
call, `sync.(*Mutex).Unlock`, a block profile the blocking one). Two things may help:

- an explicit name (the `__name__` label of a push, a scrape job's profile name, `upload --name`):
  taken as it is when it is valid, unless it is one of the names above that the content rules out;
- a hint (a file name such as `mutex.pb.gz`): used only to choose between names the content allows,
  and ignored when it contradicts them.

Every part of a profile type id, the name included, follows one pattern (`check_part`), so an id
that is stored can always be parsed back.
"""

from __future__ import annotations

import re

import numpy as np

from flamewatch.pprof.errors import InvalidProfileName
from flamewatch.pprof.model import Profile

PART_PATTERN = r"[A-Za-z0-9_.\-]+"
_PART = re.compile(PART_PATTERN)

# Names each period type allows, the first being the one used when nothing else decides.
_NAMES_BY_PERIOD_TYPE = {
    "cpu": ("process_cpu",),
    "space": ("memory",),
    "goroutine": ("goroutine",),
    "wall": ("wall",),
    "contentions": ("mutex", "block"),
}
KNOWN_NAMES = frozenset(n for names in _NAMES_BY_PERIOD_TYPE.values() for n in names)

# Go's saved profiles, as they usually appear in file names.
_NAMES_BY_FILE_WORD = {"cpu": "process_cpu", "profile": "process_cpu", "heap": "memory", "allocs": "memory",
                       "goroutine": "goroutine", "mutex": "mutex", "block": "block", "wall": "wall"}

# A leaf frame that releases a lock: the mark of Go's mutex profile.
_UNLOCK = re.compile(r"(?:^|[.)])R?[Uu]nlock$")


def check_part(text: str, what: str = "profile name") -> str:
    """`text` if it may be a part of a profile type id, else InvalidProfileName saying why."""
    if not _PART.fullmatch(text):
        raise InvalidProfileName(f'invalid {what} "{text}": use only letters, digits, "_", "." and "-" '
                                 "(for example process_cpu or memory)")
    return text


def safe_part(text: str) -> str:
    """`text` with every character outside the pattern replaced by "_"."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", text)


def hint_from_file_name(file_name: str) -> str | None:
    """process_cpu for cpu.pb.gz, memory for heap.pprof, ...; None when the name says nothing."""
    words = re.split(r"[^a-z]+", file_name.lower())
    return next((_NAMES_BY_FILE_WORD[w] for w in words if w in _NAMES_BY_FILE_WORD), None)


def profile_name(profile: Profile, given: str | None = None, hint: str | None = None) -> str:
    """The name `profile` is stored under; see the module docstring for the rule."""
    period_type = profile.string(profile.period_type[0])
    allowed = _NAMES_BY_PERIOD_TYPE.get(period_type, ())
    if given:
        return _checked_given(check_part(given), period_type, allowed)
    if len(allowed) > 1:
        return _contention_name(profile) or (hint if hint in allowed else period_type)
    if allowed:
        return allowed[0]
    return safe_part(period_type) if period_type else "unknown"


def _checked_given(given: str, period_type: str, allowed: tuple[str, ...]) -> str:
    if given in KNOWN_NAMES and allowed and given not in allowed:
        raise InvalidProfileName(
            f'profile name "{given}" contradicts the profile: its period type "{period_type}" makes it '
            f'{" or ".join(allowed)}; leave the name out to have it taken from the profile')
    return given


def _contention_name(profile: Profile) -> str | None:
    """mutex or block for Go's contention profiles, from their leaf frames; None without samples."""
    leaves = _leaf_function_names(profile)
    if len(leaves) == 0:
        return None
    return "mutex" if any(_UNLOCK.search(name) for name in leaves) else "block"


def _leaf_function_names(profile: Profile) -> list[str]:
    """The distinct function names of the innermost frame of every sample's leaf location."""
    samples, locations, functions = profile.samples, profile.locations, profile.functions
    starts = samples.offsets[:-1][samples.depths() > 0]
    if len(starts) == 0 or len(locations) == 0 or len(functions) == 0:
        return []
    leaf_ids = np.unique(samples.locations[starts])
    order = np.argsort(locations.id)
    at = order[np.searchsorted(locations.id, leaf_ids, sorter=order).clip(0, len(order) - 1)]
    at = at[(locations.id[at] == leaf_ids) & (np.diff(locations.line_offsets)[at] > 0)]
    function_ids = np.unique(locations.line_function_id[locations.line_offsets[at]])
    forder = np.argsort(functions.id)
    fat = forder[np.searchsorted(functions.id, function_ids, sorter=forder).clip(0, len(forder) - 1)]
    fat = fat[functions.id[fat] == function_ids]
    return [str(profile.strings[i]) for i in np.unique(functions.name[fat])]
