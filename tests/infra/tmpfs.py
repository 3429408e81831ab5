"""A tiny tmpfs mounted for a test, so a disk can really fill up (ENOSPC) without touching the host's.

Mounting needs root (CAP_SYS_ADMIN), which the test machines have; without it the test fails and says so.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

_CHUNK = b"\0" * (64 << 10)


@contextlib.contextmanager
def mounted(path: Path, size: str) -> Iterator[Path]:
    """`path` as a fresh tmpfs of `size` (e.g. "2m") for the duration."""
    path.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"cannot mount a {size} tmpfs at {path} (needs root): {result.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=True, capture_output=True)


def fill(directory: Path) -> Path:
    """Write a file in `directory` until its filesystem has no space left; returns the file."""
    filler = directory / "filler"
    with filler.open("wb", buffering=0) as file:
        try:
            while True:
                file.write(_CHUNK)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
        # fill the last partial block too, byte by byte would be slow: halve the chunk until nothing fits
        size = len(_CHUNK) // 2
        while size:
            try:
                file.write(_CHUNK[:size])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                size //= 2
    assert os.statvfs(directory).f_bavail == 0, f"{directory} still has space after filling it"
    return filler
