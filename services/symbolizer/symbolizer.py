"""The symbolizer's logic, free of gRPC: store uploaded debug information, find it for a build ID (or
a file name), and resolve batches of addresses.

Debug information belongs to an owner (`store.py`): a tenant's uploads name only that tenant's profiles.
For a build ID, sources are tried in order: the tenant's own uploads, the shared set (an admin's uploads
and files fetched before), then each debuginfod server; a fetched file is stored in the shared set, so
every replica and restart reuses it. A mapping without a build ID is found by its file name in the
tenant's own uploads only: a name says nothing of which program a file is, so neither another owner's
file nor a debuginfod server may answer for it. Opened objects are kept in a small LRU by owner and build
ID, and their symcaches are stored beside the file, so only the first use anywhere pays for building one.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from flamewatch.buildid import base_name
from flamewatch.buildid import build_id as checked_build_id
from flamewatch.symbolizer.config import SymbolizerConfig
from flamewatch.symbolizer.debuginfod import DebuginfodClient
from flamewatch.symbolizer.elf import read_elf
from flamewatch.symbolizer.errors import BuildIdMismatch, DebuginfodError, DebuginfoError
from flamewatch.symbolizer.frames import Frame
from flamewatch.symbolizer.objects import ObjectFile, build_symcache, features, open_object
from flamewatch.symbolizer.store import SHARED, DebuginfoStore, Meta, has_file_offsets, index_name, segment_rows

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


@dataclass(frozen=True)
class Stored:
    owner: str  # the tenant, or SHARED
    source: str  # upload or the debuginfod URL it was fetched from


class Symbolizer:
    def __init__(self, store: DebuginfoStore, debuginfod: DebuginfodClient, config: SymbolizerConfig):
        self._store, self._debuginfod, self._config = store, debuginfod, config
        self._open: OrderedDict[tuple[str, str], ObjectFile] = OrderedDict()  # (owner, build ID) -> object
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------ upload

    def upload(self, owner: str, data: bytes, file_name: str, expected_build_id: str = "") -> Uploaded:
        """Store an ELF file under its owner and build ID; a file without debug information of its own (a
        stripped executable) adds its load segments to a stored `.debug` file, and is stored only if
        nothing is. The names are checked before anything is read or written."""
        expected = checked_upload_names(file_name, expected_build_id)
        name = file_name or "the upload"
        info = read_elf(data, name)
        if expected and expected != info.build_id:
            raise BuildIdMismatch(f"{name} has build ID {info.build_id}, not {expected} as it was uploaded for")
        _check_own_build_id(info.build_id, name)
        kind, feats = features(data)
        meta = self._merged_meta(owner, info, file_name, "upload", len(data), kind, feats)
        self._store.put(owner, meta, data if meta.features == feats and meta.size == len(data) else None)
        with self._lock:
            self._open.pop((owner, info.build_id), None)
        return Uploaded(info.build_id, len(data), kind, feats)

    def _merged_meta(self, owner: str, info, file_name: str, source: str, size: int, kind: str,
                     feats: list[str]) -> Meta:
        own = has_file_offsets(info.segments)
        new = Meta(info.build_id, file_name, source, size, kind, feats, segment_rows(info.segments), own)
        old = self._store.meta(owner, info.build_id)
        if old is None:
            return new
        keep_old_file = "debug" in old.features and "debug" not in feats
        base = old if keep_old_file else new
        segments = new if own or not old.segments_from_file else old
        return Meta(base.build_id, file_name or old.file_name, base.source, base.size, base.kind, base.features,
                    segments.segments, segments.segments_from_file)

    def exists(self, tenant: str, build_id: str) -> Stored | None:
        """Where the tenant's profiles would find debug information for the build ID: its own uploads, or
        the shared set (None: in neither; debuginfod is not asked)."""
        build_id = checked_build_id(build_id)
        for owner in (tenant, SHARED):
            meta = self._store.meta(owner, build_id)
            if meta is not None:
                return Stored(owner, meta.source)
        return None

    # ------------------------------------------------------------------------------------ symbolize

    def symbolize(self, tenant: str, requests: list[ObjectRequest]) -> list[ObjectResult]:
        """Frames for a tenant's objects; every object's names are checked before any is looked up."""
        checked = [_checked_request(r) for r in requests]
        return [self._symbolize_one(tenant, r) for r in checked]

    def _symbolize_one(self, tenant: str, r: ObjectRequest) -> ObjectResult:
        try:
            obj = self._object(tenant, r.build_id, r.file_name)
        except (DebuginfoError, DebuginfodError) as exc:
            log.warning("cannot symbolize %s for tenant %s: %s", r.build_id or r.file_name, tenant, exc)
            return ObjectResult(FAILED, [], str(exc))
        if obj is None:
            return ObjectResult(NOT_FOUND, [])
        return ObjectResult(OK, obj.resolve(np.asarray(r.file_offsets, np.uint64)))

    def _object(self, tenant: str, build_id: str, file_name: str) -> ObjectFile | None:
        if not build_id:
            own = self._store.build_id_of_name(tenant, file_name) if file_name else None
            return self._opened(tenant, own) if own else None
        for owner in (tenant, SHARED):
            obj = self._opened(owner, build_id)
            if obj is not None:
                return obj
        return self._opened(SHARED, build_id) if self._fetch(build_id) is not None else None

    def _opened(self, owner: str, build_id: str) -> ObjectFile | None:
        """The owner's file for the build ID, opened (None: the owner has none)."""
        key = (owner, build_id)
        with self._lock:
            if key in self._open:
                self._open.move_to_end(key)
                return self._open[key]
        obj = self._load(owner, build_id)
        if obj is not None:
            with self._lock:
                self._open[key] = obj
                while len(self._open) > self._config.loaded_objects:
                    self._open.popitem(last=False)
        return obj

    def _load(self, owner: str, build_id: str) -> ObjectFile | None:
        meta = self._store.meta(owner, build_id)
        if meta is None:
            return None
        data = self._store.debuginfo(owner, build_id)
        symcache = self._store.symcache(owner, build_id)
        if symcache is None:
            symcache = build_symcache(data, meta.file_name or build_id)
            self._store.put_symcache(owner, build_id, symcache)
        return open_object(data, symcache, meta.load_segments())

    def _fetch(self, build_id: str) -> Meta | None:
        """Debug information from debuginfod, stored in the shared set (a configured server answers for
        every tenant alike); the executable too when the debuginfo file's segments lack file offsets."""
        found = self._debuginfod.fetch(build_id, "debuginfo")
        if found is None:
            return None
        self._check_fetched(found.data, build_id, found.url)
        info = read_elf(found.data, f"{found.url} debuginfo of {build_id}")
        kind, feats = features(found.data)
        meta = self._merged_meta(SHARED, info, "", found.url, len(found.data), kind, feats)
        self._store.put(SHARED, meta, found.data)
        if not meta.segments_from_file:
            executable = self._debuginfod.fetch(build_id, "executable")
            if executable is not None:
                self._check_fetched(executable.data, build_id, executable.url)
                exe = read_elf(executable.data, f"{executable.url} executable of {build_id}")
                meta = Meta(**{**meta.__dict__, "segments": segment_rows(exe.segments), "segments_from_file": True})
                self._store.put(SHARED, meta, None)
        return meta

    @staticmethod
    def _check_fetched(data: bytes, build_id: str, url: str) -> None:
        got = read_elf(data, f"the file {url} served for {build_id}").build_id
        if got != build_id:
            raise BuildIdMismatch(f"{url} served a file with build ID {got} for {build_id}")


def checked_upload_names(file_name: str, expected_build_id: str) -> str:
    """The build ID an upload names, in lower case ("" for none); a ValueError when it or the file name
    cannot be stored. Called again by the gRPC service on the first chunk, so a bad name is refused
    before the rest of the file is read."""
    if file_name:
        index_name(file_name)
    return checked_build_id(expected_build_id) if expected_build_id else ""


def _checked_request(r: ObjectRequest) -> ObjectRequest:
    """The request with its build ID in lower case; a ValueError when a name that would be looked up is
    not one (a file name counts only without a build ID)."""
    if r.build_id:
        return ObjectRequest(checked_build_id(r.build_id), r.file_name, r.file_offsets)
    if r.file_name:
        base_name(r.file_name)
    return r


def _check_own_build_id(build_id: str, name: str) -> None:
    try:
        checked_build_id(build_id)
    except ValueError as exc:
        raise DebuginfoError(f"{name} has a build ID Flamewatch cannot store: {exc}") from exc
