"""What every fuzz target shares: which outcomes are expected, and how a finding is recorded.

A target is a function of one input (bytes) that feeds it to Flamewatch code and checks what comes
back. Raising one of the target's documented error types is an expected answer to bad input; any
other exception, a property check that fails, or a unit using more than `SLOW_UNIT_S` of CPU is a finding.

Findings do not stop the run: each distinct one (exception type and the innermost Flamewatch frame)
is printed once and its input saved under `$FLAMEWATCH_FUZZ_FINDINGS/<target>/` with the traceback
beside it, so one campaign reports everything it hit. A unit that hangs is cut off by libFuzzer's
`-timeout` instead (the campaign runner restarts the target and counts it).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

# Inputs are at most a few hundred KB; a unit using this much CPU is worth a look. CPU time, not wall
# time: on a shared machine a unit can wait seconds for a core without doing anything slow.
SLOW_UNIT_S = 2.0

Target = Callable[[bytes], None]


class PropertyFailed(AssertionError):
    """A target's own check on a successful result failed (a wrong answer, not a crash)."""


def check(condition: bool, message: str) -> None:
    """Like assert, but not removed by -O and reported as a finding."""
    if not condition:
        raise PropertyFailed(message)


class Recorder:
    """Runs units, sorting outcomes into expected errors and findings, and keeps the findings."""

    def __init__(self, name: str, expected: tuple[type[BaseException], ...], out_dir: Path) -> None:
        self.name, self.expected, self.out_dir = name, expected, out_dir
        self.seen: set[str] = set()

    def run(self, target: Target, data: bytes) -> None:
        started = time.process_time()
        try:
            target(data)
        except self.expected:
            pass
        except Exception as exc:  # noqa: BLE001 - anything else (IndexError, RecursionError, ...) is a finding
            self._record(data, exc, traceback.format_exc())
        elapsed = time.process_time() - started
        if elapsed > SLOW_UNIT_S:
            self._record(data, TimeoutError(f"unit used {elapsed:.1f} s of CPU"), f"slow unit: {elapsed:.1f} s\n")

    def _record(self, data: bytes, exc: BaseException, trace: str) -> None:
        signature = f"{type(exc).__name__} at {_innermost_own_frame(exc)}"
        if signature in self.seen:
            return
        self.seen.add(signature)
        digest = hashlib.sha1(signature.encode()).hexdigest()[:12]
        folder = self.out_dir / self.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{digest}.bin").write_bytes(data)
        (folder / f"{digest}.txt").write_text(f"{signature}\n{exc}\n\n{trace}")
        print(f"FINDING {self.name}: {signature}: {str(exc)[:200]} (input saved as {folder / digest}.bin)",
              file=sys.stderr, flush=True)


def _innermost_own_frame(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).name != "harness.py"]
    own = [f for f in frames if "flamewatch" in f.filename or "/libs/" in f.filename or "/services/" in f.filename]
    frame = (own or frames or [None])[-1]  # a failed check is known by the line of the target that made it
    return "?" if frame is None else f"{Path(frame.filename).name}:{frame.lineno} ({frame.name})"


def main(name: str, target: Target, expected: tuple[type[BaseException], ...]) -> None:
    """Fuzz `target` with atheris under libFuzzer's command line (`sys.argv`)."""
    import atheris

    out_dir = Path(os.environ.get("FLAMEWATCH_FUZZ_FINDINGS", ".cache/fuzz/findings"))
    recorder = Recorder(name, expected, out_dir)
    # Not the "RegEx" hook: its pattern proxy takes no `pos` argument, which the selector lexer passes.
    atheris.enabled_hooks.add("str")
    atheris.Setup(sys.argv, lambda data: recorder.run(target, data))
    atheris.Fuzz()

