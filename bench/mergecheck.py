"""Does the stored merge of a range equal the sum of its profiles? Checked against `go tool pprof`.

A few captured profiles are pushed as one small service; each payload is also written to a file and
read with `go tool pprof -raw` (`tests/infra/gotool.py`), and the per-function flat and cum values of
all of them are summed here. The querier's `format=top` over the same range (every row kept) must give
the same numbers, function by function, for each profile type checked: once before compaction (flush
blocks) and once after (hour and day blocks).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx
from corpus import NAMES, Fleet, Pool, Push
from infra.gotool import pprof_top

# profile type -> the sample type of the Go profile it is, for `go tool pprof -sample_index`
CHECKED = {"process_cpu:cpu:nanoseconds:cpu:nanoseconds": ("cpu", "cpu"),
           "memory:alloc_space:bytes:space:bytes": ("allocs", "alloc_space")}
MAX_ROWS = 100_000


@dataclass(frozen=True)
class Expected:
    fleet: Fleet
    totals: dict[str, dict[str, tuple[int, int]]]  # profile type -> function -> (flat, cum)
    profiles: int


def check_fleet(start_ns: int, instances: int, minutes: int) -> Fleet:
    return Fleet(1, instances, 10, start_ns, minutes * 60, prefix="check")


def expected(fleet: Fleet, pool: Pool, work: Path) -> tuple[list[Push], Expected]:
    """The pushes of the small case and the sums `go tool pprof` gives for them."""
    pushes = list(fleet.pushes(pool))
    totals: dict[str, dict[str, tuple[int, int]]] = {}
    for profile_type, (kind, sample_index) in CHECKED.items():
        flat: Counter[str] = Counter()
        cum: Counter[str] = Counter()
        for i, push in enumerate(p for p in pushes if p.labels["__name__"] == NAMES[kind]):
            path = work / f"check-{kind}-{i}.pb.gz"
            path.write_bytes(push.served)  # the same samples; see corpus.py on time_nanos
            for name, (f, c) in pprof_top(path, sample_index).items():
                flat[name] += f
                cum[name] += c
        totals[profile_type] = {name: (flat[name], cum[name]) for name in cum}
    return pushes, Expected(fleet, totals, fleet.services * fleet.instances * fleet.steps)


def compare(querier_url: str, want: Expected) -> tuple[bool, list[str]]:
    """OK or not, and for each profile type what differs (the first few functions)."""
    ok, notes = True, []
    for profile_type, totals in want.totals.items():
        got, merged = _stored_top(querier_url, profile_type, want.fleet)
        wrong = sorted(name for name in set(totals) | set(got) if totals.get(name, (0, 0)) != got.get(name, (0, 0)))
        if wrong or merged != want.profiles:
            ok = False
            shown = ", ".join(f"{n}: want {totals.get(n)} got {got.get(n)}" for n in wrong[:3])
            notes.append(f"{profile_type}: {merged}/{want.profiles} profiles merged, {len(wrong)} functions "
                         f"differ {shown}")
        else:
            notes.append(f"{profile_type}: {merged} profiles, {len(totals)} functions equal")
    return ok, notes


def _stored_top(url: str, profile_type: str, fleet: Fleet) -> tuple[dict[str, tuple[int, int]], int]:
    params = {"query": f'{profile_type}{{service_name="check-0"}}', "from": str(fleet.start_ns),
              "until": str(fleet.end_ns), "format": "top", "max_nodes": str(MAX_ROWS)}
    response = httpx.get(f"{url}/api/v1/query", params=params, timeout=300)
    response.raise_for_status()
    body = response.json()
    return {row["name"]: (row["self"], row["total"]) for row in body["top"]["entries"]}, body["profiles"]
