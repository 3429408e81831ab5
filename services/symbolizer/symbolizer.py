"""The symbolizer's logic, free of gRPC: store uploaded debug information, find it for a build ID (or
a file name), and resolve batches of addresses.

Sources are tried in order: files in the object store (uploaded, or fetched before), then each
debuginfod server; a fetched file is stored like an upload, so every replica and restart reuses it.
Opened objects are kept in a small LRU; their symcaches are stored beside the file, so only the first
use of a build ID anywhere pays for building one.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from flamewatch.symbolizer.config import SymbolizerConfig
from flamewatch.symbolizer.debuginfod import DebuginfodClient
from flamewatch.symbolizer.elf import read_elf
from flamewatch.symbolizer.errors import BuildIdMismatch, DebuginfodError, DebuginfoError
from flamewatch.symbolizer.frames import Frame
from flamewatch.symbolizer.objects import ObjectFile, build_symcache, features, open_object
from flamewatch.symbolizer.store import DebuginfoStore, Meta, has_file_offsets, segment_rows

log = logging.getLogger(__name__)

OK, NOT_FOUND, FAILED = "ok", "not_found", "failed"


@dataclass(frozen=True)
class ObjectRequest:
    build_id: str
    file_name: str
    file_offsets: np.ndarray  # uint64


@dataclass(frozen=True)
class ObjectResult:
    status: str
    locations: list[list[Frame]]
    error: str = ""


@dataclass(frozen=True)
class Uploaded:
    build_id: str
    size: int
    kind: str
    features: list[str]


class Symbolizer:
    def __init__(self, store: DebuginfoStore, debuginfod: DebuginfodClient, config: SymbolizerConfig):
        self._store, self._debuginfod, self._config = store, debuginfod, config
        self._open: OrderedDict[str, ObjectFile] = OrderedDict()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------ upload

    def upload(self, data: bytes, file_name: str, expected_build_id: str = "") -> Uploaded:
        """Store an ELF file under its build ID; a file without debug information of its own (a stripped
        executable) adds its load segments to a stored `.debug` file, and is stored only if nothing is."""
        name = file_name or "the upload"
        info = read_elf(data, name)
        if expected_build_id and expected_build_id.lower() != info.build_id:
            raise BuildIdMismatch(f"{name} has build ID {info.build_id}, not {expected_build_id.lower()} as "
                                  "it was uploaded for")
        kind, feats = features(data)
        meta = self._merged_meta(info, file_name, "upload", len(data), kind, feats)
        self._store.put(meta, data if meta.features == feats and meta.size == len(data) else None)
        with self._lock:
            self._open.pop(info.build_id, None)
        return Uploaded(info.build_id, len(data), kind, feats)

    def _merged_meta(self, info, file_name: str, source: str, size: int, kind: str, feats: list[str]) -> Meta:
        own = has_file_offsets(info.segments)
        new = Meta(info.build_id, file_name, source, size, kind, feats, segment_rows(info.segments), own)
        old = self._store.meta(info.build_id)
        if old is None:
            return new
        keep_old_file = "debug" in old.features and "debug" not in feats
        base = old if keep_old_file else new
        segments = new if own or not old.segments_from_file else old
        return Meta(base.build_id, file_name or old.file_name, base.source, base.size, base.kind, base.features,
                    segments.segments, segments.segments_from_file)

    def exists(self, build_id: str) -> tuple[bool, str]:
        meta = self._store.meta(build_id.lower())
        return (True, meta.source) if meta else (False, "")

    # ------------------------------------------------------------------------------------ symbolize

    def symbolize(self, requests: list[ObjectRequest]) -> list[ObjectResult]:
        return [self._symbolize_one(r) for r in requests]

    def _symbolize_one(self, r: ObjectRequest) -> ObjectResult:
        try:
            obj = self._object(r.build_id.lower(), r.file_name)
        except (DebuginfoError, DebuginfodError) as exc:
            log.warning("cannot symbolize %s: %s", r.build_id or r.file_name, exc)
            return ObjectResult(FAILED, [], str(exc))
        if obj is None:
            return ObjectResult(NOT_FOUND, [])
        return ObjectResult(OK, obj.resolve(np.asarray(r.file_offsets, np.uint64)))

    def _object(self, build_id: str, file_name: str) -> ObjectFile | None:
        if not build_id and file_name:
            build_id = self._store.build_id_of_name(file_name) or ""
        if not build_id:
            return None
        with self._lock:
            if build_id in self._open:
                self._open.move_to_end(build_id)
                return self._open[build_id]
        obj = self._load(build_id)
        if obj is not None:
            with self._lock:
                self._open[build_id] = obj
                while len(self._open) > self._config.loaded_objects:
                    self._open.popitem(last=False)
        return obj

    def _load(self, build_id: str) -> ObjectFile | None:
        meta = self._store.meta(build_id) or self._fetch(build_id)
        if meta is None:
            return None
        data = self._store.debuginfo(build_id)
        symcache = self._store.symcache(build_id)
        if symcache is None:
            symcache = build_symcache(data, meta.file_name or build_id)
            self._store.put_symcache(build_id, symcache)
        return open_object(data, symcache, meta.load_segments())

    def _fetch(self, build_id: str) -> Meta | None:
        """Debug information from debuginfod, stored like an upload; the executable too when the
        debuginfo file's segments lack file offsets."""
        found = self._debuginfod.fetch(build_id, "debuginfo")
        if found is None:
            return None
        self._check_fetched(found.data, build_id, found.url)
        info = read_elf(found.data, f"{found.url} debuginfo of {build_id}")
        kind, feats = features(found.data)
        meta = self._merged_meta(info, "", found.url, len(found.data), kind, feats)
        self._store.put(meta, found.data)
        if not meta.segments_from_file:
            executable = self._debuginfod.fetch(build_id, "executable")
            if executable is not None:
                self._check_fetched(executable.data, build_id, executable.url)
                exe = read_elf(executable.data, f"{executable.url} executable of {build_id}")
                meta = Meta(**{**meta.__dict__, "segments": segment_rows(exe.segments), "segments_from_file": True})
                self._store.put(meta, None)
        return meta

    @staticmethod
    def _check_fetched(data: bytes, build_id: str, url: str) -> None:
        got = read_elf(data, f"the file {url} served for {build_id}").build_id
        if got != build_id:
            raise BuildIdMismatch(f"{url} served a file with build ID {got} for {build_id}")
