"""Block format v1 against v2: size, write time and read time on the same profiles.

v1 is the writer and reader as of a git revision (default: the last commit before version 2), loaded
from `git show` into a module of its own beside the current code. Workloads: bench/profiles.py's
synthetic CPU profiles (as they are, and with `handler` and `span_id` sample labels added) and the
real Go profiles in a directory (`*.pb.gz`, e.g. saved from tests/targets/workload). Reading is what a
merge does on a cold block: parse, stack tree, node names and the summed values of every profile.

    .venv/bin/python bench/block_versions.py [--go DIR] [--rev REV] [--profiles N] [--repeat R]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from profiles import make_profile, make_program  # noqa: E402

from flamewatch.ingester.config import IngestLimits  # noqa: E402
from flamewatch.ingester.prepare import prepare  # noqa: E402
from flamewatch.pprof import decode  # noqa: E402
from flamewatch.pprof.encode import encode  # noqa: E402
from flamewatch.storage import blockread, blockwrite  # noqa: E402

V1_REV = "74afab0"
# the current writer and reader under the names the old single module had
v2 = SimpleNamespace(write_block=blockwrite.write_block, compact=blockwrite.compact, BlockReader=blockread.BlockReader)


def load_v1(rev: str):
    source = subprocess.run(["git", "show", f"{rev}:libs/storage/block.py"], capture_output=True, text=True,
                            check=True).stdout
    path = Path(tempfile.mkdtemp()) / "block_v1.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("block_v1", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["block_v1"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def labelled(raw: bytes, seed: int) -> bytes:
    """The profile with a `handler` (5 values) and a `span_id` (one per 20 samples) on every sample."""
    p = decode(raw)
    n = len(p.samples)
    rng = np.random.default_rng(seed)
    strings = np.concatenate([p.strings, np.array(["handler", "span_id"] + [f"/h{i}" for i in range(5)]
                                                  + [f"{seed}-{i}" for i in range(n // 20 + 1)], object)])
    base = len(p.strings)
    key = np.tile([base, base + 1], n)
    value = np.stack([base + 2 + rng.integers(0, 5, n), base + 7 + np.arange(n) // 20], axis=1).reshape(-1)
    samples = replace(p.samples, label_sample=np.repeat(np.arange(n), 2), label_key=key, label_str=value,
                      label_num=np.zeros(2 * n, np.int64), label_num_unit=np.zeros(2 * n, np.int64))
    return encode(replace(p, strings=strings, samples=samples))


def entries_of(profiles: list[bytes]) -> list:
    now = time.time_ns()
    return [e for i, raw in enumerate(profiles)
            for e in prepare({"service_name": "bench", "instance": str(i)}, raw, IngestLimits(), now).entries]


def read_all(module, data: bytes) -> int:
    reader = module.BlockReader(data)
    names = reader.node_names
    rows = np.arange(reader.profiles.num_rows)
    if hasattr(reader, "sample_entries"):  # v2; v1 readers have `entries`
        _, nodes, _, entry_values = reader.sample_entries(rows)
    else:
        nodes, entry_values = reader.entries(rows)
    values = np.zeros(len(reader.node_parent), entry_values.dtype)
    np.add.at(values, nodes, entry_values)
    return len(names) + int(values.sum() != 0)


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def measure(name: str, entries: list, v1, repeat: int) -> None:
    row = [name, f"{len(entries)}"]
    for module in (v1, v2):
        data = module.write_block(entries)
        row += [f"{len(data) / 1024:.1f} KiB", f"{best(lambda m=module: m.write_block(entries), repeat) * 1e3:.0f} ms",
                f"{best(lambda m=module, d=data: read_all(m, d), repeat) * 1e3:.0f} ms"]
    print(" | ".join(row))


def measure_compact(name: str, entries: list, per_block: int, repeat: int) -> None:
    """v2 only: blocks of `per_block` entries each, read from their bytes and compacted into one."""
    blocks = [v2.write_block(entries[i:i + per_block]) for i in range(0, len(entries), per_block)]

    def compact() -> bytes:
        readers = [v2.BlockReader(b) for b in blocks]
        return v2.compact([(r, np.arange(r.profiles.num_rows)) for r in readers])

    inputs = sum(len(b) for b in blocks)
    out = compact()
    seconds = best(compact, repeat)
    print(f"compact {name}: {len(blocks)} blocks, {inputs / 1024:.1f} KiB -> {len(out) / 1024:.1f} KiB "
          f"in {seconds * 1e3:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--go", type=Path, help="directory of real Go profiles (*.pb.gz)")
    parser.add_argument("--rev", default=V1_REV)
    parser.add_argument("--profiles", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    v1 = load_v1(args.rev)
    print("workload | profiles | v1 size | v1 write | v1 read | v2 size | v2 write | v2 read")
    program = make_program()
    synthetic = [make_profile(program, seed) for seed in range(args.profiles)]
    measure("synthetic CPU", entries_of(synthetic), v1, args.repeat)
    measure("synthetic CPU, labelled", entries_of([labelled(p, i) for i, p in enumerate(synthetic)]), v1, args.repeat)
    measure_compact("synthetic CPU, labelled", entries_of([labelled(p, i) for i, p in enumerate(synthetic)]), 2,
                    args.repeat)
    if args.go:
        measure("real Go (6 kinds)", entries_of([f.read_bytes() for f in sorted(args.go.glob("*.pb.gz"))]), v1,
                args.repeat)


if __name__ == "__main__":
    main()
