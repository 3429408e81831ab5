"""Readiness on a local disk that really fills up, or turns read-only (a small tmpfs; needs root)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from infra import tmpfs

from flamewatch.rpc.readiness import Check, Readiness, disk_has_room


def readiness(directory: Path, min_free_bytes: int) -> Readiness:
    return Readiness([Check("data disk", disk_has_room(directory, min_free_bytes))], ttl_s=0)


def test_a_full_disk_is_not_ready_naming_it_and_ready_again_once_space_is_freed(tmp_path: Path) -> None:
    with tmpfs.mounted(tmp_path / "objects", "4m") as disk:
        ready = readiness(disk, 16 << 20)
        assert ready() == []  # 4 MiB free: above 1% of its size, the threshold of so small a disk
        filler = tmpfs.fill(disk)
        assert ready() == [f"data disk: {disk} is full: 0 B free of 4.0 MiB (under 41.0 KiB); free some space on it"]
        filler.unlink()
        assert ready() == []
        assert sorted(disk.iterdir()) == []  # the write probe leaves nothing behind


def test_a_disk_with_space_that_refuses_writes_is_not_ready(tmp_path: Path) -> None:
    with tmpfs.mounted(tmp_path / "objects", "4m") as disk:
        ready = readiness(disk, 1 << 20)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True, capture_output=True)
        assert ready() == [f"data disk: {disk} refuses writes: Read-only file system"]
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True, capture_output=True)
        assert ready() == []


@pytest.mark.parametrize(("left_kib", "problem"), [(24, None), (8, "8.0 KiB free of 4.0 MiB (under 16.0 KiB)")])
def test_the_threshold_is_the_minimum_free_space_when_under_1_percent(tmp_path: Path, left_kib: int,
                                                                      problem: str | None) -> None:
    with tmpfs.mounted(tmp_path / "objects", "4m") as disk:
        size = os.statvfs(disk).f_blocks * os.statvfs(disk).f_frsize
        (disk / "filler").write_bytes(b"\1" * (size - left_kib * 1024))
        assert readiness(disk, 16 << 10)() == ([] if problem is None else
                                                [f"data disk: {disk} is full: {problem}; free some space on it"])
