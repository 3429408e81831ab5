"""Debug information in the object store, by owner and build ID.

An owner is a tenant, whose uploads name only its own profiles, or the shared set (`SHARED`), which an
admin uploads and debuginfod fills, and which names every tenant's profiles:

    <tenant>/debuginfo/<build_id>/debuginfo   the ELF file as uploaded (with DWARF or symbol tables)
    <tenant>/debuginfo/<build_id>/meta.json   its file name, source, size, features and load segments
    <tenant>/debuginfo/<build_id>/symcache    the symcache built from it (a cache: rebuilt when missing)
    <tenant>/debuginfo/names/<file name>      the build ID the tenant last uploaded under that base name,
                                              for mappings that carry no build ID
    debuginfo/<build_id>/...                  the shared set, the same three objects

The shared set has no names: a file name says nothing of which program a file is, so only a tenant's
own uploads may name its frames by file name. The shared set's keys are those every upload had before
debug information belonged to tenants, so files stored then are shared, as they were. No key can be
both: a tenant's keys have `debuginfo` second, the shared set's a hex build ID.

A separate `.debug` file has no file contents in its load segments, so the segments of an executable
with the same build ID win when one was stored (uploaded, or fetched from debuginfod's /executable).
Build IDs and file names are checked (`flamewatch.buildid`) before they become keys.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

from flamewatch.buildid import base_name
from flamewatch.buildid import build_id as checked_build_id
from flamewatch.storage.errors import ObjectNotFound
from flamewatch.storage.objstore import ObjectStore
from flamewatch.symbolizer.elf import Segments


@dataclass(frozen=True)
class Meta:
    build_id: str
    file_name: str
    source: str  # upload or a debuginfod URL
    size: int
    kind: str
    features: list[str]
    segments: list[list[int]]  # [offset, vaddr, filesz, memsz] per PT_LOAD
    segments_from_file: bool  # False: a .debug file's, with no file offsets of their own

    def load_segments(self) -> Segments:
        table = np.array(self.segments, np.uint64).reshape(-1, 4)
        segments = Segments(table[:, 0], table[:, 1], table[:, 2], table[:, 3])
        return segments if self.segments_from_file else segments.assumed_offsets()


def segment_rows(segments: Segments) -> list[list[int]]:
    return np.stack([segments.offset, segments.vaddr, segments.filesz, segments.memsz], axis=1).tolist()


def has_file_offsets(segments: Segments) -> bool:
    """Whether the segments carry the file's own offsets (an executable), not a .debug file's empty ones."""
    return bool((segments.filesz > 0).sum() > 1)


SHARED = ""  # the owner of the shared set: no tenant id is empty (`flamewatch.rpc.tenant`)


class DebuginfoStore:
    """Every method takes the owner whose key space it reads or writes: a tenant or `SHARED`."""

    def __init__(self, store: ObjectStore):
        self._store = store

    def meta(self, owner: str, build_id: str) -> Meta | None:
        try:
            return Meta(**json.loads(self._store.get(_key(owner, build_id, "meta.json"))))
        except ObjectNotFound:
            return None

    def debuginfo(self, owner: str, build_id: str) -> bytes:
        return self._store.get(_key(owner, build_id, "debuginfo"))

    def put(self, owner: str, meta: Meta, data: bytes | None) -> None:
        """Store a file (None keeps the stored one and updates only its metadata); data before the
        metadata, so a reader that finds the metadata finds the file, and the name last, so a name
        never leads to a build ID with no file."""
        if data is not None:
            self._store.put(_key(owner, meta.build_id, "debuginfo"), data)
            self._store.delete(_key(owner, meta.build_id, "symcache"))
        self._store.put(_key(owner, meta.build_id, "meta.json"), json.dumps(asdict(meta)).encode())
        if meta.file_name and owner != SHARED:
            self._store.put(_name_key(owner, meta.file_name), meta.build_id.encode())

    def build_id_of_name(self, owner: str, file_name: str) -> str | None:
        """The build ID the tenant last uploaded under this file's base name (the shared set has none)."""
        if owner == SHARED:
            return None
        try:
            return self._store.get(_name_key(owner, file_name)).decode()
        except ObjectNotFound:
            return None

    def symcache(self, owner: str, build_id: str) -> bytes | None:
        try:
            return self._store.get(_key(owner, build_id, "symcache"))
        except ObjectNotFound:
            return None

    def put_symcache(self, owner: str, build_id: str, data: bytes) -> None:
        self._store.put(_key(owner, build_id, "symcache"), data)


def _key(owner: str, build_id: str, name: str) -> str:
    folder = f"{owner}/debuginfo" if owner != SHARED else "debuginfo"
    return f"{folder}/{checked_build_id(build_id)}/{name}"


def _name_key(owner: str, file_name: str) -> str:
    return f"{owner}/debuginfo/names/{index_name(file_name)}"


def index_name(file_name: str) -> str:
    """The name a file is found by: its base name without `.debug` (a debug file names its program), or
    a ValueError when the name cannot be one."""
    name = base_name(file_name).removesuffix(".debug")
    if not name:
        raise ValueError(f"invalid file name {file_name!r}: nothing is left of its base name without .debug")
    return name
