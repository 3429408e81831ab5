"""Check a decoded profile against pprof's rules and the configured limits.

Every check is a whole-column numpy test; the message names the first offending element so a client
can find it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flamewatch.pprof.errors import InvalidProfile, LimitExceeded
from flamewatch.pprof.model import Profile


@dataclass(frozen=True)
class ProfileLimits:
    max_compressed_bytes: int = 16 << 20
    max_decompressed_bytes: int = 64 << 20
    max_samples: int = 1_000_000
    max_stack_depth: int = 1024


def validate(profile: Profile, limits: ProfileLimits = ProfileLimits()) -> None:
    _check_limits(profile, limits)
    _check_strings(profile)
    _check_ids(profile)
    _check_totals(profile)


def reduceat_int64(values: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.add.reduceat(values, starts, axis=0)` of int64 values, and where a sum is past int64 (where
    numpy's would wrap silently).

    Exact and vectorised: each value is split into its high and low 32 bits, summed apart (neither sum
    can wrap below 2**31 values), and the carry of the low sums moved into the high ones; a sum fits in
    int64 exactly when its high part fits in int32."""
    values = np.asarray(values, np.int64)
    high = np.add.reduceat(values >> 32, starts, axis=0)
    low = np.add.reduceat(values & 0xFFFFFFFF, starts, axis=0)
    high += low >> 32
    over = (high < -(1 << 31)) | (high >= 1 << 31)
    return np.where(over, 0, high) << 32 | (low & 0xFFFFFFFF), over


def _check_limits(p: Profile, limits: ProfileLimits) -> None:
    if len(p.sample_types) == 0:
        raise InvalidProfile("profile declares no sample types")
    if len(p.samples) > limits.max_samples:
        raise LimitExceeded(f"profile has {len(p.samples)} samples, the limit is {limits.max_samples}")
    depths = p.samples.depths()
    if len(depths) and depths.max() > limits.max_stack_depth:
        i = int(np.argmax(depths))
        raise LimitExceeded(f"sample {i} has a stack {depths[i]} frames deep, the limit is {limits.max_stack_depth}")


def _check_strings(p: Profile) -> None:
    if len(p.strings) == 0 or p.strings[0] != "":
        raise InvalidProfile('string table must start with the empty string ""')
    n = len(p.strings)
    refs = {
        "sample type": p.sample_types.reshape(-1),
        "period type": np.array(p.period_type, np.int64),
        "sample label key": p.samples.label_key,
        "sample label value": p.samples.label_str,
        "sample label unit": p.samples.label_num_unit,
        "function name": p.functions.name,
        "function system name": p.functions.system_name,
        "function file name": p.functions.filename,
        "mapping file name": p.mappings.filename,
        "mapping build id": p.mappings.build_id,
        "comment": p.comments,
        "drop_frames": np.array([p.drop_frames]),
        "keep_frames": np.array([p.keep_frames]),
        "default_sample_type": np.array([p.default_sample_type]),
        "doc_url": np.array([p.doc_url]),
    }
    every = np.concatenate(list(refs.values()))  # one test for all; the loop below only names the first bad one
    if not ((every < 0) | (every >= n)).any():
        return
    for what, idx in refs.items():
        bad = (idx < 0) | (idx >= n)
        if bad.any():
            raise InvalidProfile(f"{what} refers to string {idx[bad][0]}, but the string table has {n} entries")


def _check_totals(p: Profile) -> None:
    """Each sample type's total must fit in int64: it is stored, summed and compared as one."""
    if len(p.samples) == 0:
        return
    _, over = reduceat_int64(p.samples.values, np.zeros(1, np.int64))
    if over.any():
        i = int(np.flatnonzero(over[0])[0])
        name, unit = (p.strings[x] for x in p.sample_types[i])
        raise InvalidProfile(f'the values of sample type "{name}" ({unit}) add up past the int64 range '
                             f"(±{1 << 63}); split the profile or send smaller units")


def _check_ids(p: Profile) -> None:
    locations = _check_table("location", p.locations.id)
    functions = _check_table("function", p.functions.id)
    mappings = _check_table("mapping", p.mappings.id)
    _check_refs("sample", p.samples.locations, "location", locations)
    _check_refs("location line", p.locations.line_function_id, "function", functions)
    mapped = p.locations.mapping_id[p.locations.mapping_id != 0]
    _check_refs("location", mapped, "mapping", mappings)


@dataclass(frozen=True)
class _Ids:
    ids: np.ndarray
    dense: bool  # the ids are 1..n in order, as Go and most writers number a table


def _check_table(what: str, ids: np.ndarray) -> _Ids:
    if (ids == np.arange(1, len(ids) + 1, dtype=ids.dtype)).all():  # no zero, no duplicate: nothing more to test
        return _Ids(ids, True)
    if (ids == 0).any():
        raise InvalidProfile(f"{what} {int(np.flatnonzero(ids == 0)[0])} has id 0; ids must be non-zero")
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise InvalidProfile(f"{what} id {unique[counts > 1][0]} appears more than once")
    return _Ids(ids, False)


def _check_refs(source: str, refs: np.ndarray, target: str, table: _Ids) -> None:
    # Dense ids make membership a range test, which costs a small profile far less than np.isin.
    missing = ((refs == 0) | (refs > len(table.ids))) if table.dense else ~np.isin(refs, table.ids)
    if missing.any():
        raise InvalidProfile(f"a {source} refers to {target} id {refs[missing][0]}, which is not in the {target} table")
