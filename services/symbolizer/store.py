"""Debug information in the object store, by build ID.

    debuginfo/<build_id>/debuginfo   the ELF file as uploaded or fetched (with DWARF or symbol tables)
    debuginfo/<build_id>/meta.json   its file name, source, size, features and load segments
    debuginfo/<build_id>/symcache    the symcache built from it (a cache: rebuilt when missing or old)
    debuginfo/names/<file name>      the build ID last uploaded under that base name, for mappings
                                     that carry no build ID (profiles converted from older formats)

A separate `.debug` file has no file contents in its load segments, so the segments of an executable
with the same build ID win when one was stored (uploaded, or fetched from debuginfod's /executable).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

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


class DebuginfoStore:
    def __init__(self, store: ObjectStore):
        self._store = store

    def meta(self, build_id: str) -> Meta | None:
        try:
            return Meta(**json.loads(self._store.get(_key(build_id, "meta.json"))))
        except ObjectNotFound:
            return None

    def debuginfo(self, build_id: str) -> bytes:
        return self._store.get(_key(build_id, "debuginfo"))

    def put(self, meta: Meta, data: bytes | None) -> None:
        """Store a file (None keeps the stored one and updates only its metadata); data before the
        metadata, so a reader that finds the metadata finds the file."""
        if data is not None:
            self._store.put(_key(meta.build_id, "debuginfo"), data)
            self._drop_symcache(meta.build_id)
        self._store.put(_key(meta.build_id, "meta.json"), json.dumps(asdict(meta)).encode())
        if meta.file_name:
            self._store.put(_name_key(meta.file_name), meta.build_id.encode())

    def build_id_of_name(self, file_name: str) -> str | None:
        try:
            return self._store.get(_name_key(file_name)).decode()
        except ObjectNotFound:
            return None

    def symcache(self, build_id: str) -> bytes | None:
        try:
            return self._store.get(_key(build_id, "symcache"))
        except ObjectNotFound:
            return None

    def put_symcache(self, build_id: str, data: bytes) -> None:
        self._store.put(_key(build_id, "symcache"), data)

    def _drop_symcache(self, build_id: str) -> None:
        self._store.delete(_key(build_id, "symcache"))


def _key(build_id: str, name: str) -> str:
    return f"debuginfo/{build_id}/{name}"


def _name_key(file_name: str) -> str:
    return f"debuginfo/names/{base_name(file_name).removesuffix('.debug')}"


def base_name(file_name: str) -> str:
    return file_name.rsplit("/", 1)[-1]
