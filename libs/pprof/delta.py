"""The difference between two consecutive scrapes of a cumulative profile.

Go's allocs, mutex and block profiles count from process start; storing the difference between
consecutive scrapes makes each stored profile cover one scrape interval. Samples are matched by their
stack and labels, not by ids (which a process may number differently in each profile): each location is
identified by its address, function names and lines, each sample by a hash of its locations and labels,
all computed column-wise.

A counter reset (the process restarted) shows as a matched sample whose value went down; the current
profile is then taken as it is, since it already counts from the new start.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa

from flamewatch.pprof.model import Profile

_MIX = np.uint64(0x9E3779B97F4A7C15)


def subtract(current: Profile, previous: Profile, columns: list[int]) -> tuple[Profile, bool]:
    """`current` with the given value columns replaced by their increase since `previous`.

    Samples with the same stack and labels are summed first; a stack's increase goes to its first
    sample and its other samples get 0 in those columns, so totals stay exact. Returns the profile and
    whether a reset was detected (then `current` is returned unchanged)."""
    ids = _string_ids(current, previous)
    cur_keys, prev_keys = _sample_keys(current, ids[0]), _sample_keys(previous, ids[1])
    cur_unique, cur_sums, cur_first = _sum_by_key(cur_keys, current.samples.values[:, columns])
    prev_unique, prev_sums, _ = _sum_by_key(prev_keys, previous.samples.values[:, columns])
    pos = np.minimum(np.searchsorted(prev_unique, cur_unique), max(len(prev_unique) - 1, 0))
    matched = prev_unique[pos] == cur_unique if len(prev_unique) else np.zeros(len(cur_unique), bool)
    increase = cur_sums - np.where(matched[:, None], prev_sums[pos] if len(prev_unique) else 0, 0)
    if (increase < 0).any():
        return current, True
    values = current.samples.values.copy()
    replaced = np.zeros((len(cur_keys), len(columns)), np.int64)
    replaced[cur_first] = increase
    values[:, columns] = replaced
    return replace(current, samples=replace(current.samples, values=values)), False


def _string_ids(*profiles: Profile) -> list[np.ndarray]:
    """Per profile, a shared id for each of its strings, so equal names compare equal across profiles."""
    joined = pa.array(np.concatenate([p.strings for p in profiles]), pa.string()).dictionary_encode()
    indices = np.asarray(joined.indices).astype(np.uint64)
    bounds = np.cumsum([0] + [len(p.strings) for p in profiles])
    return [indices[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _mix(h: np.ndarray, v: np.ndarray) -> np.ndarray:
    h = (h ^ v.astype(np.uint64)) * _MIX
    return h ^ (h >> np.uint64(29))


def _location_hashes(p: Profile, strings: np.ndarray) -> np.ndarray:
    """One hash per location from its address and each line's function name, file and line number."""
    loc, fn = p.locations, p.functions
    order = np.argsort(fn.id)
    fn_row = order[np.searchsorted(fn.id, loc.line_function_id, sorter=order)] if len(fn.id) else \
        np.zeros(0, np.int64)
    line_hash = _mix(_mix(strings[fn.name[fn_row]] if len(fn_row) else np.zeros(0, np.uint64),
                          strings[fn.filename[fn_row]] if len(fn_row) else np.zeros(0, np.uint64)),
                     loc.line_line.view(np.uint64))
    per_location = _segment_hash(line_hash, loc.line_offsets)
    return _mix(per_location, loc.address)


def _segment_hash(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """An order-sensitive hash of each segment values[offsets[i]:offsets[i+1]]."""
    counts = np.diff(offsets)
    position = np.arange(len(values)) - np.repeat(offsets[:-1], counts)
    weighted = _mix(values, position.astype(np.uint64) + np.uint64(1))
    sums = np.zeros(len(counts), np.uint64)
    np.add.at(sums, np.repeat(np.arange(len(counts)), counts), weighted)
    return _mix(sums, counts.astype(np.uint64))


def _sample_keys(p: Profile, strings: np.ndarray) -> np.ndarray:
    s = p.samples
    location_hash = _location_hashes(p, strings)
    order = np.argsort(p.locations.id)
    rows = order[np.searchsorted(p.locations.id, s.locations, sorter=order)] if len(order) else \
        np.zeros(0, np.int64)
    stack = _segment_hash(location_hash[rows] if len(rows) else np.zeros(0, np.uint64), s.offsets)
    label_hash = _mix(_mix(strings[s.label_key], strings[s.label_str]), s.label_num.view(np.uint64))
    label_offsets = np.concatenate([[0], np.cumsum(np.bincount(s.label_sample, minlength=len(s)))])
    label_order = np.argsort(s.label_sample, kind="stable")
    return _mix(stack, _segment_hash(label_hash[label_order], label_offsets))


def _sum_by_key(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct keys, the summed values of each, and the first sample having each."""
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    sums = np.zeros((len(unique), values.shape[1]), np.int64)
    np.add.at(sums, inverse.reshape(-1), values)
    return unique, sums, first
