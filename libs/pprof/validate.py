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
    for what, idx in refs.items():
        bad = (idx < 0) | (idx >= n)
        if bad.any():
            raise InvalidProfile(f"{what} refers to string {idx[bad][0]}, but the string table has {n} entries")


def _check_ids(p: Profile) -> None:
    _check_table("location", p.locations.id)
    _check_table("function", p.functions.id)
    _check_table("mapping", p.mappings.id)
    _check_refs("sample", p.samples.locations, "location", p.locations.id)
    _check_refs("location line", p.locations.line_function_id, "function", p.functions.id)
    mapped = p.locations.mapping_id[p.locations.mapping_id != 0]
    _check_refs("location", mapped, "mapping", p.mappings.id)


def _check_table(what: str, ids: np.ndarray) -> None:
    if (ids == 0).any():
        raise InvalidProfile(f"{what} {int(np.flatnonzero(ids == 0)[0])} has id 0; ids must be non-zero")
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise InvalidProfile(f"{what} id {unique[counts > 1][0]} appears more than once")


def _check_refs(source: str, refs: np.ndarray, target: str, ids: np.ndarray) -> None:
    missing = ~np.isin(refs, ids)
    if missing.any():
        raise InvalidProfile(f"a {source} refers to {target} id {refs[missing][0]}, which is not in the {target} table")
