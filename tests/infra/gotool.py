"""Reading pprof files with `go tool pprof`, as an oracle independent of Flamewatch's own decoder.

Values come from `go tool pprof -raw`, which prints the profile itself: every sample's exact integer
values (one column per sample type) and its stack as location ids, then each location's function
names (inlined frames first, leaf-most first). Flat and cum per function are computed from that the
way `pprof -top` computes them: a sample's value counts as flat for the leaf-most function, and as cum
once for every distinct function on its stack (so recursion is not counted twice).

`-top` itself is not parsed because it formats values with units and rounding (`210ms`, `1.50MB`) and
drops small nodes; `-unit=ns|B` plus `-nodefraction=0` gets close but is still a formatting of the
numbers rather than the numbers. The tests cross-check this module against `-top` on real profiles.
"""

import re
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PPROF_TIMEOUT_S = 300.0  # the first `go tool pprof` of a toolchain may build the tool

_SAMPLE = re.compile(r"^\s*(-?\d+(?:\s+-?\d+)*):((?:\s+\d+)*)\s*$")
_LOCATION = re.compile(r"^\s*(\d+): (0x[0-9a-f]+) (?:M=\d+ )?(?:\[F\] )?(.*)$")
_LOCATION_MORE = re.compile(r"^ {13}(\S.*)$")
_LINE = re.compile(r"^(.*) \S*:-?\d+(?::-?\d+)? s=-?\d+(?:\(.*\))?$")


@dataclass(frozen=True)
class RawProfile:
    """What `pprof -raw` prints, reduced to what flat/cum/total need."""

    sample_types: list[str]  # e.g. ["alloc_objects", "alloc_space", ...]
    default_index: int  # the `[dflt]` column, else the last one (pprof's rule)
    samples: list[tuple[list[int], list[int]]]  # (values, location ids leaf first)
    functions: dict[int, list[str]]  # location id -> function names, leaf-most first

    def index_of(self, sample_index: str | int | None) -> int:
        if sample_index is None:
            return self.default_index
        if isinstance(sample_index, int):
            return sample_index
        if sample_index not in self.sample_types:
            raise ValueError(f"no sample type {sample_index!r} in {self.sample_types}")
        return self.sample_types.index(sample_index)

    def stack(self, location_ids: list[int]) -> list[str]:
        return [name for location in location_ids for name in self.functions[location]]


def pprof_raw(path: Path | str) -> RawProfile:
    """Run `go tool pprof -raw` on a profile file and parse its output."""
    return parse_raw(_run_pprof(["-raw"], path))


def pprof_top(path: Path | str, sample_index: str | int | None = None) -> dict[str, tuple[int, int]]:
    """Function name -> (flat, cum), exact, in the profile's own unit for the chosen sample type."""
    profile = pprof_raw(path)
    column = profile.index_of(sample_index)
    flat: dict[str, int] = defaultdict(int)
    cum: dict[str, int] = defaultdict(int)
    for values, locations in profile.samples:
        stack = profile.stack(locations)
        if not stack:
            continue
        flat[stack[0]] += values[column]
        for name in set(stack):
            cum[name] += values[column]
    return {name: (flat.get(name, 0), total) for name, total in cum.items()}


def pprof_total(path: Path | str, sample_index: str | int | None = None) -> int:
    """The sum of every sample's value for the chosen sample type."""
    profile = pprof_raw(path)
    column = profile.index_of(sample_index)
    return sum(values[column] for values, _ in profile.samples)


def parse_raw(text: str) -> RawProfile:
    lines = text.splitlines()
    start = lines.index("Samples:") + 1
    locations_at = lines.index("Locations")
    mappings_at = lines.index("Mappings")
    sample_types, default_index = _parse_sample_header(lines[start])
    return RawProfile(
        sample_types=sample_types,
        default_index=default_index,
        samples=_parse_samples(lines[start + 1:locations_at]),
        functions=_parse_locations(lines[locations_at + 1:mappings_at]),
    )


def _parse_sample_header(header: str) -> tuple[list[str], int]:
    columns = header.split()  # "alloc_objects/count alloc_space/bytes[dflt] ..."
    names = [column.split("/", 1)[0] for column in columns]
    marked = [i for i, column in enumerate(columns) if column.endswith("[dflt]")]
    return names, marked[0] if marked else len(names) - 1


def _parse_samples(lines: list[str]) -> list[tuple[list[int], list[int]]]:
    samples = []
    for line in lines:
        match = _SAMPLE.match(line)
        if match:
            values, locations = match.group(1).split(), match.group(2).split()
            samples.append(([int(v) for v in values], [int(i) for i in locations]))
        elif not line.startswith(" " * 16):  # label lines ("bytes:[2048]") belong to the sample above
            raise ValueError(f"unexpected line in pprof -raw samples: {line!r}")
    return samples


def _parse_locations(lines: list[str]) -> dict[int, list[str]]:
    functions: dict[int, list[str]] = {}
    current: list[str] = []
    for line in lines:
        more = _LOCATION_MORE.match(line)
        if more:  # an inlined caller of the line above
            current.append(_function_name(more.group(1), fallback="??"))
            continue
        match = _LOCATION.match(line)
        if not match:
            raise ValueError(f"unexpected line in pprof -raw locations: {line!r}")
        current = []
        functions[int(match.group(1))] = current
        if match.group(3).strip():
            current.append(_function_name(match.group(3), fallback=match.group(2)))
        else:  # a location without line information is known only by its address
            current.append(match.group(2))
    return functions


def _function_name(line_text: str, *, fallback: str) -> str:
    if line_text.strip() == "??":  # a line with no function
        return fallback
    match = _LINE.match(line_text)
    if not match:
        raise ValueError(f"unexpected location line in pprof -raw output: {line_text!r}")
    return match.group(1)


def _run_pprof(args: list[str], path: Path | str) -> str:
    go = shutil.which("go")
    if go is None:
        raise FileNotFoundError("the Go toolchain (`go`) is not on PATH")
    # Go profiles carry their function names; -symbolize=none keeps pprof from looking for binaries.
    result = subprocess.run([go, "tool", "pprof", "-symbolize=none", *args, str(path)],
                            capture_output=True, text=True, timeout=PPROF_TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"go tool pprof {' '.join(args)} {path} failed:\n{result.stderr}")
    return result.stdout


@dataclass(frozen=True)
class RawView:
    """Everything `pprof -raw` prints about one sample type, with ids resolved so two files that say
    the same thing compare equal however they number their locations and mappings."""

    header: dict[str, str]  # PeriodType, Period, Time, Duration as printed
    samples: dict[tuple, int]  # (stack, labels) -> summed value; samples with value 0 left out

    @property
    def total(self) -> int:
        return sum(self.samples.values())


def pprof_raw_view(path: Path | str, column: int) -> RawView:
    """`go tool pprof -raw` of a file: a stack is a tuple of locations (address, mapping, lines, leaf
    first), a mapping its printed ranges, file, build ID and flags, and labels the sample's label lines."""
    lines = _run_pprof(["-raw"], path).splitlines()
    samples_at, locations_at, mappings_at = lines.index("Samples:"), lines.index("Locations"), lines.index("Mappings")
    header = dict(line.split(": ", 1) for line in lines[:samples_at] if ": " in line)
    mappings = {int(line.split(":", 1)[0]): line.split(": ", 1)[1].rstrip() for line in lines[mappings_at + 1:]
                if line.strip()}
    locations = _resolved_locations(lines[locations_at + 1:mappings_at], mappings)
    samples: dict[tuple, int] = defaultdict(int)
    for values, ids, labels in _labelled_samples(lines[samples_at + 2:locations_at]):
        if values[column]:
            samples[(tuple(locations[i] for i in ids), labels)] += values[column]
    return RawView({k: header[k] for k in ("PeriodType", "Period", "Time", "Duration") if k in header}, dict(samples))


def _resolved_locations(lines: list[str], mappings: dict[int, str]) -> dict[int, tuple]:
    found: dict[int, tuple] = {}
    current_id = None
    for line in lines:
        more = _LOCATION_MORE.match(line)
        if more and current_id is not None:
            address, mapping, printed = found[current_id]
            found[current_id] = (address, mapping, printed + (more.group(1),))
            continue
        location_id, rest = line.split(": ", 1)
        address, _, rest = rest.partition(" ")
        mapping = ""
        if rest.startswith("M="):
            number, _, rest = rest.partition(" ")
            mapping = mappings[int(number[2:])]
        current_id = int(location_id)
        found[current_id] = (address, mapping, (rest,) if rest.strip() else ())
    return found


def _labelled_samples(lines: list[str]) -> list[tuple[list[int], list[int], tuple[str, ...]]]:
    out: list[tuple[list[int], list[int], tuple[str, ...]]] = []
    for line in lines:
        match = _SAMPLE.match(line)
        if match:
            out.append(([int(v) for v in match.group(1).split()], [int(i) for i in match.group(2).split()], ()))
        else:
            values, ids, labels = out[-1]
            out[-1] = (values, ids, tuple(sorted(labels + (line.strip(),))))
    return out
