"""What the querier should answer, computed from `go tool pprof -raw`, and readers for what it did answer.

A call tree is compared as a map from path (function names from the root down, `()` for the root)
to self value, keeping only non-zero values. The expected map comes from the raw samples of the
pushed files; the actual one is read back out of the flamegraph level encoding, the tree format or a
downloaded pprof, so all three are checked against the same independent numbers.
"""

from __future__ import annotations

import functools
import gzip
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from infra import gotool

from flamewatch.api.flamewatch.v1 import query_pb2

CallPath = tuple[str, ...]
Paths = dict[CallPath, int]

# Sample types that describe a state at one moment (DESIGN: summed across series, averaged over time).
GAUGE_SAMPLE_TYPES = frozenset({"inuse_space", "inuse_objects", "goroutine"})


# ------------------------------------------------------------------------------------------ expected


@functools.cache
def raw(path: Path) -> gotool.RawProfile:
    return gotool.pprof_raw(path)


@functools.cache
def top(path: Path, sample_type: str) -> dict[str, tuple[int, int]]:
    """gotool's flat/cum of one file, cached: each call runs `go tool pprof`."""
    return gotool.pprof_top(path, sample_type)


@functools.cache
def total(path: Path, sample_type: str) -> int:
    return gotool.pprof_total(path, sample_type)


def file_paths(path: Path, sample_type: str) -> Paths:
    """Self value per call path of one file's samples, for one sample type."""
    profile = raw(path)
    column = profile.index_of(sample_type)
    out: dict[CallPath, int] = defaultdict(int)
    for values, locations in profile.samples:
        out[tuple(reversed(profile.stack(locations)))] += values[column]
    return {p: v for p, v in out.items() if v}


def merged_paths(series: Iterable[list[Path]], sample_type: str) -> Paths:
    """The merge the querier should compute over `series` (each a list of the files pushed into it):
    summed; for gauges averaged over each series' profiles first and rounded once at the end."""
    gauge = sample_type in GAUGE_SAMPLE_TYPES
    out: dict[CallPath, float] = defaultdict(float)
    for files in series:
        weight = 1 / len(files) if gauge else 1
        for f in files:
            for p, v in file_paths(f, sample_type).items():
                out[p] += v * weight
    return {p: round(v) for p, v in out.items() if round(v)}


def flat_cum(paths: Mapping[CallPath, int]) -> dict[str, tuple[int, int]]:
    """Per function: flat (leaf value) and cum (once per path it is on), as `pprof -top` counts."""
    flat: dict[str, int] = defaultdict(int)
    cum: dict[str, int] = defaultdict(int)
    for p, v in paths.items():
        if p:
            flat[p[-1]] += v
        for name in set(p):
            cum[name] += v
    return {name: (flat.get(name, 0), c) for name, c in cum.items()}


def summed_top(parts: Iterable[tuple[Path, str]]) -> dict[str, tuple[int, int]]:
    """gotool's flat/cum summed over several (file, sample type); functions with no value left out."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for path, sample_type in parts:
        for name, (flat, cum) in top(path, sample_type).items():
            out[name][0] += flat
            out[name][1] += cum
    return {name: (f, c) for name, (f, c) in out.items() if f or c}


# ------------------------------------------------------------------------------------------ answers


class Malformed(AssertionError):
    """An answer that breaks its format's own rules."""


def flamegraph_paths(fg: Mapping) -> tuple[Paths, int]:
    """Read the level encoding back into paths; also returns how many nodes are zero wide.

    Checks the encoding's rules on the way: the root is `total`, every node lies inside exactly one
    node of the level above, and a node's total is its self plus its children's totals.
    """
    names, levels = fg["names"], fg["levels"]
    placed: list[list[list]] = []  # per level: [start, end, path, total, self, children total]
    zero_wide = 0
    for depth, level in enumerate(levels):
        if len(level) % 4:
            raise Malformed(f"level {depth} has {len(level)} numbers, not a multiple of 4")
        row, x = [], 0
        for i in range(0, len(level), 4):
            dx, node_total, node_self, name = level[i:i + 4]
            start, x = x + dx, x + dx + node_total
            if node_self > node_total or dx < 0:
                raise Malformed(f"level {depth} node {i // 4}: x_delta {dx}, total {node_total}, self {node_self}")
            if depth == 0:
                path: CallPath = ()
                if names[name] != "total" or len(level) != 4:
                    raise Malformed(f"level 0 is {level}, expected one root named total")
            elif node_total == 0:
                zero_wide += 1
                continue
            else:
                parent = [p for p in placed[-1] if p[0] <= start and x <= p[1] and p[3] > 0]
                if len(parent) != 1:
                    raise Malformed(f"level {depth} node {i // 4} [{start}, {x}) lies in {len(parent)} parents")
                parent[0][5] += node_total
                path = (*parent[0][2], names[name])
            row.append([start, x, path, node_total, node_self, 0])
        placed.append(row)
    for row in placed:
        for _start, _end, path, node_total, node_self, children in row:
            if node_self + children != node_total:
                raise Malformed(f"{path}: total {node_total} != self {node_self} + children {children}")
    if placed and placed[0][0][3] != fg["total"]:
        raise Malformed(f"root total {placed[0][0][3]} != total {fg['total']}")
    out = {node[2]: node[4] for row in placed for node in row if node[4]}
    if len(out) != sum(1 for row in placed for node in row if node[4]):
        raise Malformed("two sibling nodes share a path")
    return out, zero_wide


def tree_paths(node: Mapping, prefix: CallPath | None = None) -> Paths:
    """Read the tree format into paths, checking total = self + children's totals."""
    path: CallPath = () if prefix is None else (*prefix, node["name"])
    if prefix is None and node["name"] != "total":
        raise Malformed(f"the root is named {node['name']!r}, not total")
    children = sum(c["total"] for c in node["children"])
    if node["self"] + children != node["total"]:
        raise Malformed(f"{path}: total {node['total']} != self {node['self']} + children {children}")
    out = {path: node["self"]} if node["self"] else {}
    for child in node["children"]:
        for p, v in tree_paths(child, path).items():
            if p in out:
                raise Malformed(f"two sibling nodes share the path {p}")
            out[p] = v
    return out


def pprof_paths(data: bytes, directory: Path, name: str) -> tuple[gotool.RawProfile, Path]:
    """Save a downloaded pprof and read it with `go tool pprof -raw`."""
    path = directory / f"{name}.pb.gz"
    path.write_bytes(data)
    return gotool.pprof_raw(path), path


def raw_profile_paths(profile: gotool.RawProfile) -> Paths:
    out: dict[CallPath, int] = defaultdict(int)
    for values, locations in profile.samples:
        out[tuple(reversed(profile.stack(locations)))] += values[0]
    return {p: v for p, v in out.items() if v}


def raw_profile_sample_counts(profile: gotool.RawProfile) -> dict[CallPath, int]:
    """How many samples of the profile lie on each call path."""
    out: dict[CallPath, int] = defaultdict(int)
    for _, locations in profile.samples:
        out[tuple(reversed(profile.stack(locations)))] += 1
    return dict(out)


def within_rounding(got: Paths, want: Paths, samples: Mapping[CallPath, int]) -> bool:
    """Whether each path's value differs from the wanted one by no more than rounding each of its
    samples can: an averaged gauge is a whole number per pprof sample, and a function path may be
    several samples (other lines or addresses of the same functions), each rounded on its own."""
    return all(abs(got.get(p, 0) - want.get(p, 0)) <= samples.get(p, 1) / 2 for p in set(got) | set(want))


def gunzip(data: bytes) -> bytes:
    return gzip.decompress(data)


# ------------------------------------------------------------------------------------------ gRPC as JSON


def flamegraph_json(fg: query_pb2.FlameGraph) -> dict:
    body = {"names": list(fg.names), "levels": [list(lv.values) for lv in fg.levels], "total": fg.total,
            "max_self": fg.max_self}
    return {**body, "binaries": list(fg.binaries)} if fg.binaries else body


def top_json(table: query_pb2.TopTable) -> dict:
    return {"total": table.total, "entries": [{"name": e.name, "self": e.self, "total": e.total}
                                              for e in table.entries]}


def tree_json(node: query_pb2.TreeNode) -> dict:
    return {"name": node.name, "self": node.self, "total": node.total,
            "children": [tree_json(c) for c in node.children]}


def diff_json(fg: query_pb2.FlameGraphDiff) -> dict:
    body = {"names": list(fg.names), "levels": [list(lv.values) for lv in fg.levels], "total": fg.total,
            "max_self": fg.max_self, "left_ticks": fg.left_ticks, "right_ticks": fg.right_ticks}
    return {**body, "binaries": list(fg.binaries)} if fg.binaries else body


def labels_json(labels) -> dict[str, str]:
    return {p.name: p.value for p in labels}
