#!/usr/bin/env python3
"""Run a program in a memory cgroup, restart it when it ends, and record each OOM kill or failed run
in Flamewatch, which links it to the program's last heap profile before the kill.

    sudo ./supervise.py --name leaky --memory-limit 96M \\
        --label service_name=leaky --label instance=127.0.0.1:6060 \\
        -- ./leaky -addr 127.0.0.1:6060

The labels are those the program's profiles carry in Flamewatch (with a static_configs target:
`service_name` and `instance`, the target's address), so that the incident finds its profiles.
A run that ends is recorded with `flamewatch event`: `oom_kill` when the cgroup's OOM-kill counter
went up during the run (the kernel killed it for its memory), `restart` when it exited with a non-zero
code for another reason; a clean exit (0) is not recorded. The program is restarted either way.

Needs root (it creates /sys/fs/cgroup/memory/<name> on cgroup v1, /sys/fs/cgroup/<name> on v2) and
nothing but Python's standard library; copy it and change what you like. SIGTERM or Ctrl-C stops the
program and removes the cgroup.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class MemoryCgroup:
    """A memory cgroup with a limit, on either hierarchy: v2 when /sys/fs/cgroup is the unified one."""

    def __init__(self, name: str, limit: int) -> None:
        self.v2 = (CGROUP_ROOT / "cgroup.controllers").exists()
        self.path = CGROUP_ROOT / name if self.v2 else CGROUP_ROOT / "memory" / name
        self.limit = limit

    def create(self) -> None:
        if self.v2:
            (CGROUP_ROOT / "cgroup.subtree_control").write_text("+memory")
        self.path.mkdir(exist_ok=True)
        if self.v2:
            self._write("memory.max", self.limit)
            self._write("memory.swap.max", 0)  # with swap, a leak would swap for minutes before the kill
        else:
            self._write("memory.limit_in_bytes", self.limit)
            self._write("memory.memsw.limit_in_bytes", self.limit)  # the same, where swap accounting is on

    def _write(self, name: str, value: int) -> None:
        if (self.path / name).exists():
            (self.path / name).write_text(str(value))

    def oom_kills(self) -> int:
        """The kernel's count of processes it OOM-killed in this cgroup (kernel 4.13+ on v1)."""
        text = (self.path / ("memory.events" if self.v2 else "memory.oom_control")).read_text()
        fields = dict(line.split() for line in text.splitlines())
        return int(fields["oom_kill"])

    def enter(self) -> None:
        """Move the calling process in (run in the child before exec, so all it allocates is counted)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def remove(self) -> None:
        """Kill what is left in it (the program's own children) and remove it."""
        for _ in range(50):
            pids = (self.path / "cgroup.procs").read_text().split()
            if not pids:
                self.path.rmdir()
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.1)
        raise RuntimeError(f"{self.path} still has processes after 5 s")


def record(args: argparse.Namespace, kind: str, started_ns: int, ended_ns: int, exit_code: int,
           restarts: int) -> None:
    """One event, with `flamewatch event`. A failure is printed, never fatal: supervising comes first."""
    command = [*args.flamewatch.split(), "event", "--url", args.url, "--kind", kind,
               "--time", str(ended_ns), "--started", str(started_ns), "--exit-code", str(exit_code),
               "--memory-limit", str(args.memory_limit), "--restart-count", str(restarts),
               "--key", f"{args.name}/{started_ns}",  # one per run: recording it again changes nothing
               *[a for label in args.label for a in ("--label", label)], *args.event_flag]
    result = subprocess.run(command, capture_output=True, text=True)
    print(f"{args.name}: {(result.stdout or result.stderr).strip()}", file=sys.stderr)


def exit_code(returncode: int) -> int:
    """As a shell reports it: 128 + the signal for a program ended by a signal (SIGKILL: 137)."""
    return 128 - returncode if returncode < 0 else returncode


def supervise(args: argparse.Namespace, program: list[str]) -> None:
    cgroup = MemoryCgroup(args.name, args.memory_limit)
    cgroup.create()
    child, restarts, stopping = None, 0, []

    def stop(signum, frame):
        stopping.append(signum)
        if child is not None:
            child.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        while not stopping:
            kills_before, started_ns = cgroup.oom_kills(), time.time_ns()
            child = subprocess.Popen(program, preexec_fn=cgroup.enter)
            if stopping:  # the signal came while Popen was starting it, before `stop` could see the child
                child.terminate()
            returncode = child.wait()
            ended_ns = time.time_ns()
            if stopping:
                break
            oom_killed = cgroup.oom_kills() > kills_before
            print(f"{args.name}: ended with exit code {exit_code(returncode)} after "
                  f"{(ended_ns - started_ns) / 1e9:.1f} s{' (OOM-killed)' if oom_killed else ''}", file=sys.stderr)
            if oom_killed or returncode != 0:
                record(args, "oom_kill" if oom_killed else "restart", started_ns, ended_ns, exit_code(returncode),
                       restarts)
            if args.max_restarts is not None and restarts >= args.max_restarts:
                break
            restarts += 1
            time.sleep(args.restart_delay)
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
        cgroup.remove()


def size(text: str) -> int:
    """Bytes from 100663296, 96M, 96MiB, 1G..."""
    text = text.upper().removesuffix("IB").removesuffix("B")
    return int(text[:-1]) * UNITS[text[-1]] if text[-1:] in UNITS else int(text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", required=True, help="the cgroup's name, and the start of each event's key")
    p.add_argument("--memory-limit", type=size, required=True, help="the cgroup's limit: bytes, or 96M, 1G")
    p.add_argument("--label", action="append", default=[],
                   help="k=v as the program's profiles carry it (service_name=api); repeat for more")
    p.add_argument("--url", default="http://127.0.0.1:8080", help="flamewatch all, an ingester or a querier")
    p.add_argument("--flamewatch", default="flamewatch", help="the flamewatch command (default: on PATH)")
    p.add_argument("--event-flag", action="append", default=[],
                   help="a flag for `flamewatch event`, e.g. --event-flag=--tenant=team-a; repeat for more")
    p.add_argument("--max-restarts", type=int, default=None, help="stop after this many restarts (default: never)")
    p.add_argument("--restart-delay", type=float, default=1.0, help="seconds between an end and the restart")
    p.add_argument("program", nargs="+", help="the program and its arguments (after --)")
    args = p.parse_args()
    supervise(args, args.program)


if __name__ == "__main__":
    main()
