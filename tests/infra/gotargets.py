"""Building, running and scraping the Go programs under `tests/targets/`.

Each program is built with the Go toolchain into `.cache/targets/<name>` and rebuilt only when one of
its source files is newer than the binary. A running program is asked to bind port 0 and print
`listening on <addr>`, so the address it reports is the one it holds (no race for a free port).
"""

import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from . import CACHE_DIR, REPO_ROOT
from .waiting import terminate

TARGETS_SOURCE_DIR = REPO_ROOT / "tests" / "targets"
TARGETS_BINARY_DIR = CACHE_DIR / "targets"
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
BUILD_TIMEOUT_S = 300.0

_LISTENING = re.compile(r"^listening on (\S+)$", re.MULTILINE)

# Profile name -> path under the program's address, as `net/http/pprof` serves them (gzipped pprof).
PROFILE_PATHS = {
    "heap": "/debug/pprof/heap",
    "allocs": "/debug/pprof/allocs",
    "goroutine": "/debug/pprof/goroutine",
    "mutex": "/debug/pprof/mutex",
    "block": "/debug/pprof/block",
}

# The sample types of each profile Go's net/http/pprof serves, in order, and the profile name each is
# scraped under (`__name__`), as in the configuration's pprof_config.
SAMPLE_TYPES = {
    "cpu": ["samples", "cpu"],
    "heap": ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"],
    "allocs": ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"],
    "goroutine": ["goroutine"],
    "mutex": ["contentions", "delay"],
    "block": ["contentions", "delay"],
}
SCRAPE_NAMES = {"cpu": "process_cpu", "heap": "memory", "allocs": "memory", "goroutine": "goroutine",
                "mutex": "mutex", "block": "block"}


def build(name: str = "workload", ldflags: str = "", variant: str = "") -> Path:
    """Build `tests/targets/<name>` unless its binary is newer than every source file; return the binary.
    A `variant` is a build of its own (`<name>-<variant>`) with `ldflags`, e.g. "-X main.extraPercent=20"."""
    source = TARGETS_SOURCE_DIR / name
    binary = TARGETS_BINARY_DIR / (f"{name}-{variant}" if variant else name)
    if binary.is_file() and binary.stat().st_mtime >= _newest_mtime(source):
        return binary
    go = shutil.which("go")
    if go is None:
        raise FileNotFoundError("the Go toolchain (`go`) is not on PATH")
    TARGETS_BINARY_DIR.mkdir(parents=True, exist_ok=True)
    partial = binary.with_name(f".{name}.{os.getpid()}.partial")
    flags = ["-ldflags", ldflags] if ldflags else []
    result = subprocess.run([go, "build", *flags, "-o", str(partial), "."], cwd=source,
                            capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"go build in {source} failed:\n{result.stderr}")
    os.replace(partial, binary)  # atomic: a concurrent run never executes a half-written binary
    return binary


def _newest_mtime(directory: Path) -> float:
    return max(path.stat().st_mtime for path in directory.rglob("*") if path.is_file())


class GoTarget:
    """One running target program; `addr` is "127.0.0.1:PORT" once `start()` returns."""

    def __init__(self, binary: Path, log_path: Path, args: tuple[str, ...] = (),
                 env: dict[str, str] | None = None) -> None:
        self.binary = binary
        self.log_path = log_path
        self.args, self.env = args, env  # the program's own flags (leaky's -rate, -limit), extra environment
        self.addr = ""
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        # The program exits when its stdin closes, which happens when this process dies unexpectedly.
        command = [str(self.binary), "-addr", "127.0.0.1:0", "-exit-on-stdin-close", *self.args]
        env = {**os.environ, **self.env} if self.env else None
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                             env=env)
        try:
            self.addr = self._wait_for_address()
            self._wait_until_serving()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            terminate(process, STOP_TIMEOUT_S)
        assert process.stdin is not None
        process.stdin.close()

    def _wait_for_address(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            match = _LISTENING.search(self.log_path.read_text(errors="replace"))
            if match:
                return match.group(1)
            self._raise_if_exited()
            time.sleep(0.02)
        raise TimeoutError(f"{self.binary.name} printed no 'listening on' line in {START_TIMEOUT_S}s")

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://{self.addr}/debug/pprof/", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            self._raise_if_exited()
            time.sleep(0.05)
        raise TimeoutError(f"{self.binary.name} does not serve /debug/pprof/ at {self.addr}")

    def _raise_if_exited(self) -> None:
        assert self._process is not None
        if self._process.poll() is not None:
            log = self.log_path.read_text(errors="replace")
            raise RuntimeError(f"{self.binary.name} exited with {self._process.returncode}:\n{log}")

    def __enter__(self) -> "GoTarget":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def capture_profiles(addr: str, cpu_seconds: int = 2) -> dict[str, bytes]:
    """Fetch every profile type from a running program: name -> the bytes as served (gzipped pprof).

    `cpu` is recorded over `cpu_seconds`; the others are fetched after it, so cumulative
    profiles (allocs, mutex, block) cover at least that long.
    """
    profiles = {"cpu": _fetch(addr, f"/debug/pprof/profile?seconds={cpu_seconds}", timeout=cpu_seconds + 30)}
    for name, path in PROFILE_PATHS.items():
        profiles[name] = _fetch(addr, path, timeout=30)
    return profiles


def _fetch(addr: str, path: str, *, timeout: float) -> bytes:
    with urllib.request.urlopen(f"http://{addr}{path}", timeout=timeout) as response:
        return response.read()
