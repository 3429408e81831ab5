"""Running the Go program `tests/targets/grafanaclient` (Grafana's Pyroscope datasource calls through the
published Connect clients) against a querier, and reading what Flamewatch's own REST API says.

`GrafanaClient.run(...)` returns `{method: result}`, each result either the answer as the program printed
it or `{"error": {"code", "message"}}` with the Connect code ("invalid_argument", "not_found", ...).
Helpers here turn flamegraph levels into per-function self values, as a UI reading them would.
"""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

RUN_TIMEOUT_S = 120


@dataclass(frozen=True)
class GrafanaClient:
    binary: Path

    def run(self, url: str, start_ms: int, end_ms: int, *args: str) -> dict[str, dict]:
        command = [str(self.binary), "-url", url, "-from", str(start_ms), "-until", str(end_ms), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        assert done.returncode == 0, f"{command} exited with {done.returncode}:\n{done.stderr}"
        calls = json.loads(done.stdout)["calls"]
        # In call order, so a test sees the order Grafana's calls were made in.
        return {c["method"]: ({"error": c["error"]} if "error" in c else c.get("result")) for c in calls}


def self_by_name(flamegraph: dict, width: int = 4) -> dict[str, int]:
    """Self value per frame name summed over a flamegraph's levels (`width` numbers per node)."""
    out: dict[str, int] = defaultdict(int)
    names = flamegraph["names"]
    for level in flamegraph["levels"]:
        for i in range(0, len(level), width):
            out[names[level[i + width - 1]]] += level[i + 2]
    return dict(out)


def top_names(self_values: dict[str, int], n: int) -> list[str]:
    """The n names with the largest self values (ties by name), "total" and "other" left out."""
    ranked = sorted(((-v, k) for k, v in self_values.items() if k not in ("total", "other") and v), key=tuple)
    return [k for _, k in ranked[:n]]


def read_tree(data: bytes) -> list[tuple[str, int, int]]:
    """Pyroscope's tree bytes as (name, self, depth) in the order written, read as its format says."""
    out, pos, pending = [], 0, [(0, 1)]  # (depth, nodes still to read at that depth)

    def varint() -> int:
        nonlocal pos
        value, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while pos < len(data):
        while pending and pending[-1][1] == 0:
            pending.pop()
        depth, left = pending.pop()
        pending.append((depth, left - 1))
        size = varint()
        name = data[pos:pos + size].decode()
        pos += size
        self_value, children = varint(), varint()
        out.append((name, self_value, depth))
        if children:
            pending.append((depth + 1, children))
    return out
