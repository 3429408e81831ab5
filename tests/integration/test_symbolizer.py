"""The symbolizer's logic on real ELF files built here with gcc, over a filesystem object store, and
its debuginfod client against Debian's debuginfod. Oracles: binutils' `addr2line -i` and `readelf`."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from infra import native

from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.objstore import FilesystemConfig
from flamewatch.symbolizer.config import SymbolizerConfig
from flamewatch.symbolizer.debuginfod import DebuginfodClient
from flamewatch.symbolizer.elf import read_elf
from flamewatch.symbolizer.errors import BuildIdMismatch, NoBuildId, NotElf, TruncatedElf
from flamewatch.symbolizer.store import SHARED, DebuginfoStore
from flamewatch.symbolizer.symbolizer import NOT_FOUND, OK, ObjectRequest, Stored, Symbolizer

TENANT = "team-a"


def _symbolizer(tmp_path: Path, client: DebuginfodClient | None = None) -> Symbolizer:
    store = FilesystemObjectStore.from_config(FilesystemConfig(str(tmp_path / "objects")))
    return Symbolizer(DebuginfoStore(store), client or DebuginfodClient((), 1, 1), SymbolizerConfig())


def _build_id(binary: Path) -> str:
    out = subprocess.run(["readelf", "-n", str(binary)], capture_output=True, text=True, check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out)[1]


def _text_range(binary: Path) -> tuple[int, int, int]:
    """(address, file offset, size) of .text, from readelf."""
    out = subprocess.run(["readelf", "-SW", str(binary)], capture_output=True, text=True, check=True).stdout
    fields = re.search(r"\.text\s+PROGBITS\s+([0-9a-f]+) ([0-9a-f]+) ([0-9a-f]+)", out)
    return int(fields[1], 16), int(fields[2], 16), int(fields[3], 16)


def _function_ranges(binary: Path) -> list[tuple[int, int]]:
    """[start, end) of each function symbol (nm -S): the padding between functions, which only DWARF
    covers and nothing executes, is left out."""
    out = subprocess.run(["nm", "-S", str(binary)], capture_output=True, text=True, check=True).stdout
    sized = [line.split() for line in out.splitlines() if len(line.split()) == 4 and line.split()[2] in "tT"]
    return [(int(start, 16), int(start, 16) + int(size, 16)) for start, size, _, _ in sized]


def _addr2line(binary: Path, addresses: list[int]) -> list[list[tuple[str, str, int]]]:
    """Per address, (function, file base name, line) innermost inlined first, as binutils reads DWARF."""
    out = subprocess.run(["addr2line", "-i", "-f", "-a", "-e", str(binary), *map(hex, addresses)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    frames: list[list[tuple[str, str, int]]] = []
    i = 0
    while i < len(out):
        if out[i].startswith("0x"):
            frames.append([])
            i += 1
            continue
        where = out[i + 1].split(" (discriminator")[0]
        file, _, line = where.rpartition(":")
        frames[-1].append((out[i], file.rsplit("/", 1)[-1], int(line) if line.isdigit() else 0))
        i += 2
    return frames


@pytest.mark.parametrize("flags", [("-O2",), ("-O2", "-no-pie"), ("-O2", "-shared", "-fPIC")],
                         ids=["pie", "classic-executable", "shared-library"])
@pytest.mark.gcc
def test_frames_and_inlined_frames_match_addr2line(tmp_path: Path, flags: tuple[str, ...]):
    binary = native.build_c("burn", *flags, "-DVARIANT=7")
    s = _symbolizer(tmp_path)
    s.upload(TENANT, binary.path.read_bytes(), "burn")
    address, offset, size = _text_range(binary.path)
    functions = _function_ranges(binary.path)
    addresses = [a for a in range(address, address + size, 3) if any(lo <= a < hi for lo, hi in functions)]
    offsets = np.array([a - address + offset for a in addresses], np.uint64)
    result = s.symbolize(TENANT, [ObjectRequest("", "burn", offsets)])[0]
    assert result.status == OK
    got = [[(f.function, f.file.rsplit("/", 1)[-1], f.line) for f in frames] for frames in result.locations]
    want = _addr2line(binary.path, addresses)
    named = [i for i, w in enumerate(want) if w[0][0] in ("hash_loop", "sum_squares", "main", "mix")]
    assert len(named) > 50
    assert [got[i] for i in named] == [want[i] for i in named]
    assert any(len(want[i]) > 1 and want[i][0][0] == "mix" for i in named)  # inlined frames were checked


@pytest.mark.gcc
def test_debug_file_alone_names_what_the_executable_names(tmp_path: Path):
    binary = native.build_c("burn", "-O2", "-DVARIANT=8")
    address, offset, size = _text_range(binary.path)
    offsets = np.arange(offset, offset + size, 5, dtype=np.uint64)
    with_exe = _symbolizer(tmp_path / "a")
    with_exe.upload(TENANT, binary.path.read_bytes(), "burn")
    debug_only = _symbolizer(tmp_path / "b")
    done = debug_only.upload(TENANT, binary.debug.read_bytes(), "burn.debug")
    assert done.build_id == _build_id(binary.path) and "debug" in done.features
    want = with_exe.symbolize(TENANT, [ObjectRequest(done.build_id, "", offsets)])[0]
    got = debug_only.symbolize(TENANT, [ObjectRequest(done.build_id, "", offsets)])[0]
    assert got.locations == want.locations and any(got.locations)
    # the stripped executable uploaded later brings its real segments, and keeps the debug file
    debug_only.upload(TENANT, binary.stripped.read_bytes(), "burn")
    again = _symbolizer(tmp_path / "b").symbolize(TENANT, [ObjectRequest("", "burn", offsets)])[0]
    assert again.locations == want.locations


@pytest.mark.gcc
def test_bad_uploads_are_refused_with_what_is_wrong(tmp_path: Path):
    s = _symbolizer(tmp_path)
    data = native.build_c("burn", "-O1", "-DVARIANT=9").path.read_bytes()
    with pytest.raises(NotElf, match=r"^app is not an ELF file \(it starts with b'#!/b', not b'\\x7fELF'\)$"):
        s.upload(TENANT, b"#!/bin/sh\necho hi\n", "app")
    with pytest.raises(TruncatedElf, match="^app is a truncated ELF file: 20 bytes, shorter than an ELF header$"):
        s.upload(TENANT, data[:20], "app")
    with pytest.raises(TruncatedElf, match=r"^app is a truncated ELF file: its program header 0 at byte 64 ends at "
                                           r"120, past the file's 100 bytes$"):
        s.upload(TENANT, data[:100], "app")
    with pytest.raises(BuildIdMismatch, match=f"^app has build ID {_build_id_of(data)}, not 00ff as it was "
                                              "uploaded for$"):
        s.upload(TENANT, data, "app", "00FF")
    no_id = native.build_c("burn", "-O1", "-Wl,--build-id=none")
    with pytest.raises(NoBuildId, match="^app has no GNU build ID note"):
        s.upload(TENANT, no_id.path.read_bytes(), "app")
    assert s.exists(TENANT, _build_id_of(data)) is None


def _build_id_of(data: bytes) -> str:
    return read_elf(data).build_id


def test_unknown_objects_are_not_found(tmp_path: Path):
    s = _symbolizer(tmp_path)
    results = s.symbolize(TENANT, [ObjectRequest("abcdef", "", np.array([1], np.uint64)),
                           ObjectRequest("", "libnothing.so", np.array([1], np.uint64))])
    assert [r.status for r in results] == [NOT_FOUND, NOT_FOUND]


@pytest.mark.gcc
@pytest.mark.debuginfod
def test_debuginfod_is_asked_once_for_a_missing_build_id_until_the_negative_cache_expires(tmp_path: Path):
    binary = native.build_c("burn", "-O1", "-DVARIANT=10")
    served = tmp_path / "served"
    served.mkdir()
    (served / "burn").write_bytes(binary.path.read_bytes())
    build_id = _build_id(binary.path)
    with native.Debuginfod(served, tmp_path) as server:
        server.wait_for(build_id)
        client = DebuginfodClient((server.url,), 10, negative_cache_s=1.0)
        try:
            assert client.fetch("00" * 20) is None
            assert client.fetch("00" * 20) is None
            assert client.requests == 1
            found = client.fetch(build_id)
            assert found.data == binary.path.read_bytes() and found.url == server.url
            s = _symbolizer(tmp_path, client)
            offsets = np.array([_text_range(binary.path)[1]], np.uint64)
            result = s.symbolize(TENANT, [ObjectRequest(build_id, "", offsets)])
            assert result[0].status == OK
            assert s.exists(TENANT, build_id) == Stored(SHARED, server.url)
        finally:
            client.close()


@pytest.mark.gcc
@pytest.mark.debuginfod
def test_debuginfod_debug_file_takes_its_load_segments_from_the_served_executable(tmp_path: Path):
    binary = native.build_c("burn", "-O2", "-DVARIANT=11")
    served = tmp_path / "served"
    served.mkdir()
    (served / "burn").write_bytes(binary.stripped.read_bytes())
    (served / "burn.debug").write_bytes(binary.debug.read_bytes())
    build_id = _build_id(binary.path)
    _, offset, size = _text_range(binary.path)
    offsets = np.arange(offset, offset + size, 7, dtype=np.uint64)
    want = _symbolizer(tmp_path / "uploaded")
    want.upload(TENANT, binary.path.read_bytes(), "burn")
    with native.Debuginfod(served, tmp_path) as server:
        server.wait_for(build_id)
        client = DebuginfodClient((server.url,), 10, 60)
        try:
            s = _symbolizer(tmp_path / "fetched", client)
            got = s.symbolize(TENANT, [ObjectRequest(build_id, "", offsets)])[0]
            objects = FilesystemConfig(str(tmp_path / "fetched" / "objects"))
            meta = DebuginfoStore(FilesystemObjectStore.from_config(objects)).meta(SHARED, build_id)
        finally:
            client.close()
    assert "debug" in meta.features and meta.segments_from_file
    assert got.locations == want.symbolize(TENANT, [ObjectRequest(build_id, "", offsets)])[0].locations
    assert any(got.locations)
