"""Per-function shares of pprof files, for comparing two sets of them without a server (`flamewatch gate`).

A file is one observation, as a stored profile is in the querier. Its samples' frames are the lines of
their locations, innermost first (inlined functions are frames of their own); a location without lines
(an unsymbolized address) is one frame named by its address. A function's self value is the value of
the samples whose innermost frame it is; its total the value of the samples it appears in, once per
sample however often it recurses. Everything is numpy over frames; the only loop runs over files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from flamewatch.pprof import decode, validate
from flamewatch.pprof.errors import PprofError
from flamewatch.pprof.model import Profile
from flamewatch.storage.frames import rows_of


class GateInputError(ValueError):
    """A file that cannot be compared: unreadable, not pprof, or without the sample type asked for."""


def function_values(profile: Profile, column: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(names, self, total) of one sample type column: per distinct function name of the profile."""
    s, loc, fn = profile.samples, profile.locations, profile.functions
    values = s.values[:, column].astype(np.float64)
    entry_sample = np.repeat(np.arange(len(s)), np.diff(s.offsets))
    entry_loc = rows_of(s.locations, loc.id)
    lines = np.diff(loc.line_offsets)
    frames_per_entry = np.maximum(lines, 1)[entry_loc]
    frame_entry = np.repeat(np.arange(len(entry_loc)), frames_per_entry)
    first_frame = np.cumsum(frames_per_entry) - frames_per_entry
    k = np.arange(len(frame_entry)) - first_frame[frame_entry]  # frame within its location, innermost first
    frame_loc = entry_loc[frame_entry]
    has_line = lines[frame_loc] > 0
    line = np.where(has_line, loc.line_offsets[frame_loc] + k, 0)
    name_index = np.full(len(frame_loc), -1, np.int64)
    if len(fn) and has_line.any():
        name_index[has_line] = fn.name[rows_of(loc.line_function_id[line[has_line]], fn.id)]
    # Frames without a line are named by their address: a negative key per distinct location row
    name_key = np.where(has_line, name_index, -1 - frame_loc)
    keys, key_id = np.unique(name_key, return_inverse=True)
    key_id = key_id.reshape(-1)
    spelled = np.array([profile.strings[k] if k >= 0 else f"0x{int(loc.address[-1 - k]):x}" for k in keys.tolist()],
                       dtype=str)  # one per distinct function of the file, not per frame
    names, key_name = np.unique(spelled, return_inverse=True)  # two entries of one name are one function
    key_id = key_name.reshape(-1)[key_id]
    keys = names
    frame_sample = entry_sample[frame_entry]
    leaf = np.flatnonzero(np.r_[True, frame_sample[1:] != frame_sample[:-1]]) if len(frame_sample) else \
        np.zeros(0, np.int64)  # each sample's first frame is its innermost
    self_value = np.bincount(key_id[leaf], weights=values[frame_sample[leaf]], minlength=len(keys))
    pairs = np.unique(frame_sample * len(keys) + key_id)  # (sample, function) once each
    total = np.bincount(pairs % len(keys), weights=values[pairs // len(keys)], minlength=len(keys)) if len(keys) \
        else np.zeros(0)
    return names, self_value, total


def file_shares(paths: Sequence[Path], sample_type: str | None) -> tuple[list[np.ndarray], list[np.ndarray],
                                                                         list[np.ndarray], list[float]]:
    """Per file: names, self shares, total shares, and the file's total of the chosen sample type (its last
    by default, e.g. cpu nanoseconds of a CPU profile, inuse_space of a Go heap profile)."""
    out: tuple[list, list, list, list] = ([], [], [], [])
    for path in paths:
        profile = _read(path)
        types = [t for t, _ in profile.sample_type_names()]
        if sample_type is None:
            column = len(types) - 1
        elif sample_type in types:
            column = types.index(sample_type)
        else:
            raise GateInputError(f"{path}: no sample type {sample_type!r}; it has {', '.join(types) or 'none'}")
        names, self_value, total = function_values(profile, column)
        whole = float(self_value.sum())
        if whole <= 0:
            raise GateInputError(f"{path}: its {types[column]} values sum to {whole:g}: nothing to compare")
        for bucket, value in zip(out, (names, self_value / whole, total / whole, whole)):
            bucket.append(value)
    return out


def aligned(names: list[np.ndarray], per_file: list[np.ndarray], columns: np.ndarray) -> np.ndarray:
    """Stack per-file values into (files x columns) by name; a name a file lacks is 0 there."""
    out = np.zeros((len(per_file), len(columns)))
    for i, (n, v) in enumerate(zip(names, per_file)):
        out[i, np.searchsorted(columns, n)] = v
    return out


def _read(path: Path) -> Profile:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise GateInputError(f"{path}: cannot read it: {exc.strerror}") from exc
    try:
        profile = decode(data)
        validate(profile)
    except PprofError as exc:
        raise GateInputError(f"{path}: {exc}") from exc
    return profile
