"""Write each fuzz target's seed corpus, taken from the test corpora, into `<out>/<target>/`.

- pprof, gzip: profiles served by the Go test program (`tests/targets/workload`, every type, as served
  and decompressed), and a `go tool pprof -proto -diff_base` comparison of two of them (negative values);
  for gzip each is prefixed with a 3-byte output limit, once roomy and once too small.
- selector, time: every string literal in `tests/unit/test_selector.py` / `test_timerange.py`, each
  prefixed with the byte that picks the function under test.
- config: the good and bad files of `tests/unit/testdata/config/` and the shipped `examples/`.

Usage: python fuzz/seeds.py OUT_DIR
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from infra import gotargets  # noqa: E402 - needs the path above


def main(out: Path) -> None:
    profiles = _go_profiles()
    raw = {name: gzip.decompress(data) for name, data in profiles.items()}
    _write(out / "pprof", [*profiles.values(), *raw.values()])
    roomy, small = (4 << 20).to_bytes(3, "little"), (1024).to_bytes(3, "little")
    _write(out / "gzip", [prefix + data for data in profiles.values() for prefix in (roomy, small)]
           + [roomy + next(iter(raw.values()))])
    selector_strings = _string_literals(ROOT / "tests/unit/test_selector.py")
    _write(out / "selector", [bytes([mode]) + s.encode() for s in selector_strings for mode in (0, 1)])
    time_strings = _string_literals(ROOT / "tests/unit/test_timerange.py")
    _write(out / "time", [bytes([mode]) + s.encode() for s in time_strings for mode in (0, 1, 2)])
    configs = sorted((ROOT / "tests/unit/testdata/config").glob("*.yml")) + sorted((ROOT / "examples").glob("*.yaml"))
    _write(out / "config", [path.read_bytes() for path in configs])
    for target in sorted(p.name for p in out.iterdir()):
        print(f"seeds: {target}: {len(list((out / target).iterdir()))} inputs")


def _go_profiles() -> dict[str, bytes]:
    binary = gotargets.build("workload")
    with tempfile.TemporaryDirectory() as tmp, gotargets.GoTarget(binary, Path(tmp) / "workload.log") as target:
        profiles = gotargets.capture_profiles(target.addr, cpu_seconds=1)
        base = gotargets.capture_profiles(target.addr, cpu_seconds=1)["cpu"]
    profiles["cpu_diff"] = _diff(base, profiles["cpu"])
    return profiles


def _diff(base: bytes, new: bytes) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        base_path, new_path = Path(tmp) / "base.pb.gz", Path(tmp) / "new.pb.gz"
        base_path.write_bytes(base)
        new_path.write_bytes(new)
        go = shutil.which("go") or "go"
        return subprocess.run([go, "tool", "pprof", "-proto", "-symbolize=none", "-diff_base", str(base_path),
                               str(new_path)], capture_output=True, check=True, timeout=300).stdout


def _string_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    return sorted(found)


def _write(folder: Path, inputs: list[bytes]) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for data in inputs:
        (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
