"""The decoded pprof profile, held as numpy columns rather than one object per sample.

Ids (location, function, mapping) are kept as written in the profile; string fields are indices into
`strings`. Every table is a frozen dataclass of equal-length arrays, so a whole profile can be
validated, split and re-encoded without a Python loop over its samples.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np


def _equal(a: object, b: object) -> bool:
    for f in fields(a):  # type: ignore[arg-type]
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not np.array_equal(np.asarray(x), np.asarray(y)):
                return False
        elif hasattr(x, "__dataclass_fields__"):
            if not _equal(x, y):
                return False
        elif x != y:
            return False
    return True


class _Columns:
    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and _equal(self, other)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class Samples(_Columns):
    offsets: np.ndarray  # int64 [n + 1]: sample i's location ids are locations[offsets[i]:offsets[i+1]]
    locations: np.ndarray  # uint64 location ids, leaf first
    values: np.ndarray  # int64 [n, k]: one column per sample type
    label_sample: np.ndarray  # int64: which sample each label belongs to
    label_key: np.ndarray  # int64 string index
    label_str: np.ndarray  # int64 string index
    label_num: np.ndarray  # int64
    label_num_unit: np.ndarray  # int64 string index

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def depths(self) -> np.ndarray:
        return np.diff(self.offsets)


@dataclass(frozen=True, eq=False)
class Locations(_Columns):
    id: np.ndarray  # uint64
    mapping_id: np.ndarray  # uint64, 0 = none
    address: np.ndarray  # uint64
    is_folded: np.ndarray  # bool
    line_offsets: np.ndarray  # int64 [n + 1]: location i's lines, innermost (inlined) first
    line_function_id: np.ndarray  # uint64
    line_line: np.ndarray  # int64
    line_column: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.id)


@dataclass(frozen=True, eq=False)
class Functions(_Columns):
    id: np.ndarray  # uint64
    name: np.ndarray  # int64 string index
    system_name: np.ndarray
    filename: np.ndarray
    start_line: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.id)


@dataclass(frozen=True, eq=False)
class Mappings(_Columns):
    id: np.ndarray  # uint64
    memory_start: np.ndarray
    memory_limit: np.ndarray
    file_offset: np.ndarray
    filename: np.ndarray  # int64 string index
    build_id: np.ndarray
    has_functions: np.ndarray  # bool
    has_filenames: np.ndarray
    has_line_numbers: np.ndarray
    has_inline_frames: np.ndarray

    def __len__(self) -> int:
        return len(self.id)


@dataclass(frozen=True, eq=False)
class Profile(_Columns):
    strings: np.ndarray  # object array of str; strings[0] == ""
    sample_types: np.ndarray  # int64 [k, 2]: (type, unit) string indices
    samples: Samples
    locations: Locations
    functions: Functions
    mappings: Mappings
    period_type: tuple[int, int] = (0, 0)
    period: int = 0
    time_nanos: int = 0
    duration_nanos: int = 0
    drop_frames: int = 0
    keep_frames: int = 0
    default_sample_type: int = 0
    doc_url: int = 0
    comments: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def string(self, index: int) -> str:
        return str(self.strings[index])

    def sample_type_names(self) -> list[tuple[str, str]]:
        return [(self.string(t), self.string(u)) for t, u in self.sample_types]
