"""Write each fuzz target's seed corpus, taken from the test corpora, into `<out>/<target>/`.

- pprof, gzip: profiles served by the Go test program (`tests/targets/workload`, every type, as served
  and decompressed), and a `go tool pprof -proto -diff_base` comparison of two of them (negative values);
  for gzip each is prefixed with a 3-byte output limit, once roomy and once too small.
- selector, time: every string literal in `tests/unit/test_selector.py` / `test_timerange.py`, each
  prefixed with the byte that picks the function under test.
- config: the good and bad files of `tests/unit/testdata/config/` and the shipped `examples/`.
- otlp: the export requests of the OTLP unit tests (`tests/unit/test_otlp_convert.py`,
  `test_otlp_limits.py`) and the one an OpenTelemetry SDK sends (`tests/infra/otlp.py`).
- connect: push.v1 `PushRequest`s of the Go profiles (one series per type, as Grafana Alloy sends them,
  with the Python SDK's dotted labels), as protobuf, gzipped protobuf and JSON, each behind its mode byte.
- multipart: the pyroscope-go SDK's `/ingest` form (`profile` and `sample_type_config`) of each Go
  profile, behind `name=` lines with and without tags and type suffixes.

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
    _write(out / "otlp", _otlp_requests())
    _write(out / "connect", _connect_pushes(profiles))
    _write(out / "multipart", _multipart_forms(profiles))
    for target in sorted(p.name for p in out.iterdir()):
        print(f"seeds: {target}: {len(list((out / target).iterdir()))} inputs")


def _otlp_requests() -> list[bytes]:
    from infra.otlp import otlp_export_request
    from unit.test_otlp_convert import example
    from unit.test_otlp_limits import deep_export

    return [example().request.SerializeToString(), deep_export(4).request.SerializeToString(),
            gzip.decompress(otlp_export_request())]


def _connect_pushes(profiles: dict[str, bytes]) -> list[bytes]:
    from google.protobuf import json_format

    from flamewatch.api.push.v1 import push_pb2
    from flamewatch.api.types.v1 import types_pb2

    labels = {"__name__": "process_cpu", "service_name": "checkout", "otel.scope.name": "pyroscope",
              "__session_id__": "1234", "__delta__": "false"}
    request = push_pb2.PushRequest(series=[push_pb2.RawProfileSeries(
        labels=[types_pb2.LabelPair(name=k, value=v) for k, v in {**labels, "type": name}.items()],
        samples=[push_pb2.RawSample(ID=name, raw_profile=data)]) for name, data in profiles.items()])
    small = push_pb2.PushRequest(series=request.series[:1])
    return [bytes([0]) + request.SerializeToString(), bytes([2]) + gzip.compress(small.SerializeToString()),
            bytes([1]) + json_format.MessageToJson(small).encode()]


def _multipart_forms(profiles: dict[str, bytes]) -> list[bytes]:
    config = b'{"alloc_objects":{"units":"objects"},"alloc_space":{"units":"bytes","aggregation":"sum",' \
             b'"display-name":"alloc_space","sampled":true,"cumulative":false}}'
    names = [b"app.cpu{env=prod,region=eu.west}", b"app", b"app.alloc_objects{service_name=svc}"]
    return [name + b"\n" + _form([(b"profile", data), (b"sample_type_config", config)])
            for data in profiles.values() for name in names]


def _form(parts: list[tuple[bytes, bytes]]) -> bytes:
    """A multipart form as pyroscope-go writes it (Go's mime/multipart), boundary `b0undary`."""
    body = b"".join(b"--b0undary\r\nContent-Disposition: form-data; name=\"" + name + b"\"; filename=\"" + name
                    + b"\"\r\nContent-Type: application/octet-stream\r\n\r\n" + data + b"\r\n"
                    for name, data in parts)
    return body + b"--b0undary--\r\n"


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
