"""Native programs for the symbolizer tests: C built with gcc, profiled with gperftools' CPU profiler,
and a real debuginfod server.

`build_c` compiles `tests/targets/native/<name>.c` with `gcc -g` into `.cache/targets/native/` and
writes a stripped copy of the same name under `stripped/` (what a deployment would run). `profile`
runs a binary under gperftools (`LD_PRELOAD=libprofiler.so CPUPROFILE=...`, Debian's
`libgoogle-perftools-dev`) and converts the profile to unsymbolized pprof with
`go tool pprof -proto -symbolize=none`. `Debuginfod` runs Debian's `debuginfod` over a directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from . import CACHE_DIR, REPO_ROOT
from .ports import free_port

SOURCE_DIR = REPO_ROOT / "tests" / "targets" / "native"
BINARY_DIR = CACHE_DIR / "targets" / "native"
PROFILER = Path("/usr/lib/x86_64-linux-gnu/libprofiler.so")
DEBUGINFOD = "/usr/bin/debuginfod"
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class NativeBinary:
    path: Path  # with DWARF and symbols
    stripped: Path  # the same code, `strip`ped, under the same file name
    debug: Path  # `objcopy --only-keep-debug` of it: a separate .debug file


def build_c(name: str, *flags: str) -> NativeBinary:
    """Build tests/targets/native/<name>.c with gcc -g and `flags`; rebuilt when the source or flags change."""
    source = SOURCE_DIR / f"{name}.c"
    tag = hashlib.sha256((source.read_text() + " ".join(flags)).encode()).hexdigest()[:12]
    out = BINARY_DIR / f"{name}-{tag}"
    built = NativeBinary(out / name, out / "stripped" / name, out / f"{name}.debug")
    if not all(path.is_file() for path in (built.path, built.stripped, built.debug)):
        # built beside it and renamed into place: a test in another process never runs a half-written binary
        partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        (partial / "stripped").mkdir(parents=True)
        _run(["gcc", "-g", *flags, "-o", str(partial / name), str(source)])
        _run(["strip", "-o", str(partial / "stripped" / name), str(partial / name)])
        _run(["objcopy", "--only-keep-debug", str(partial / name), str(partial / f"{name}.debug")])
        if out.is_dir() and not built.debug.is_file():
            shutil.rmtree(out)  # what a build interrupted before builds were renamed into place left
        try:
            partial.rename(out)
        except OSError:  # another process built it first
            shutil.rmtree(partial, ignore_errors=True)
    return built


def profile(binary: Path, seconds: float, out_dir: Path) -> tuple[Path, Path]:
    """Run `binary SECONDS` under gperftools' CPU profiler; (the raw gperftools profile, unsymbolized pprof)."""
    raw = out_dir / f"{binary.name}.prof"
    env = {**os.environ, "CPUPROFILE": str(raw), "LD_PRELOAD": str(PROFILER), "CPUPROFILE_FREQUENCY": "1000"}
    subprocess.run([str(binary), str(seconds)], env=env, check=True, capture_output=True, timeout=TIMEOUT_S)
    pprof = out_dir / f"{binary.name}.pb.gz"
    result = subprocess.run(["go", "tool", "pprof", "-proto", "-symbolize=none", str(binary), str(raw)],
                            capture_output=True, timeout=TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"go tool pprof -proto failed: {result.stderr.decode()}")
    pprof.write_bytes(result.stdout)
    return raw, pprof


def _run(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{result.stderr}")


class Debuginfod:
    """Debian's debuginfod serving the ELF files under `directory`, on a free port."""

    def __init__(self, directory: Path, workdir: Path):
        self.directory, self.workdir = directory, workdir
        self.port = free_port()
        self._process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        if shutil.which(DEBUGINFOD) is None:
            raise FileNotFoundError(f"{DEBUGINFOD} is missing: `make test` installs Debian's debuginfod")
        with (self.workdir / "debuginfod.log").open("ab") as log:
            self._process = subprocess.Popen(
                [DEBUGINFOD, "-F", "-p", str(self.port), "-d", str(self.workdir / "debuginfod.sqlite"), "-t", "1",
                 "-g", "0", "-c", "1", str(self.directory)], stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)

    def wait_for(self, build_id: str, timeout_s: float = 60.0) -> None:
        """Until the server has indexed `build_id`'s debuginfo."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/buildid/{build_id}/debuginfo", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"debuginfod did not index {build_id} in {timeout_s}s:\n"
                           f"{(self.workdir / 'debuginfod.log').read_text(errors='replace')[-2000:]}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self) -> Debuginfod:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
