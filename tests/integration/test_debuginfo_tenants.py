"""Debug information per tenant, on real ELF files built here with gcc over a filesystem object store.

Two tenants claim different debug information for one program: `burn` built twice with the same forced
build ID (`-Wl,--build-id=0x...`), `hash_loop` renamed by the preprocessor in each, so the stripped
binaries are byte for byte the same program and only the names tell whose debug information answered.
The querier's part runs on a real Postgres with blocks of a gperftools profile of that program."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from infra import native
from integration.test_querier_symbolization import InProcess
from integration.test_query_answers import ALL, BASE, CPU
from integration.test_symbolizer import _text_range

from flamewatch.api.perftools.profiles import profile_pb2
from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.ingester.writer import BlockWriter
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.engine import Querier
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.symbolization import Symbolization
from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.objstore import FilesystemConfig, ObjectStore
from flamewatch.symbolizer.config import SymbolizerConfig
from flamewatch.symbolizer.debuginfod import DebuginfodClient
from flamewatch.symbolizer.elf import read_elf
from flamewatch.symbolizer.errors import DebuginfoError
from flamewatch.symbolizer.objects import features
from flamewatch.symbolizer.store import SHARED, DebuginfoStore, segment_rows
from flamewatch.symbolizer.symbolizer import NOT_FOUND, OK, ObjectRequest, Stored, Symbolizer

pytestmark = [pytest.mark.gcc]

SAME_ID = "d1" * 20  # the one build ID both tenants upload for
SHARED_ID = "5a" * 20


def burn(hash_loop: str, build_id: str) -> native.NativeBinary:
    return native.build_c("burn", "-O1", "-DNO_INLINE", f"-Dhash_loop={hash_loop}", f"-Wl,--build-id=0x{build_id}")


def objects(tmp_path: Path) -> ObjectStore:
    return FilesystemObjectStore.from_config(FilesystemConfig(str(tmp_path / "objects")))


def symbolizer(store: ObjectStore, debuginfod: DebuginfodClient | None = None) -> Symbolizer:
    return Symbolizer(DebuginfoStore(store), debuginfod or DebuginfodClient((), 1, 1), SymbolizerConfig())


def text_offsets(binary: native.NativeBinary) -> np.ndarray:
    _, offset, size = _text_range(binary.path)
    return np.arange(offset, offset + size, 3, dtype=np.uint64)


def functions(s: Symbolizer, tenant: str, request: ObjectRequest) -> set[str] | str:
    """The functions the tenant's request is named with, or its status when it is not found."""
    result = s.symbolize(tenant, [request])[0]
    return {f.function for frames in result.locations for f in frames} if result.status == OK else result.status


def keys(store: ObjectStore) -> list[str]:
    return [o.key for o in store.list("")]


def test_two_tenants_with_the_same_build_id_and_file_name_each_see_their_own_names(tmp_path: Path):
    mine, theirs = burn("hash_loop_of_a", SAME_ID), burn("hash_loop_of_b", SAME_ID)
    assert mine.stripped.read_bytes() == theirs.stripped.read_bytes()  # one program, two claims
    store = objects(tmp_path)
    s = symbolizer(store)
    s.upload("team-a", mine.path.read_bytes(), "burn")
    s.upload("team-b", theirs.path.read_bytes(), "burn")
    offsets = text_offsets(mine)
    for reader in (s, symbolizer(store)):  # the second reads the symcaches stored beside each tenant's file
        for request in (ObjectRequest(SAME_ID, "", offsets), ObjectRequest("", "/opt/bin/burn", offsets)):
            named_a, named_b = functions(reader, "team-a", request), functions(reader, "team-b", request)
            assert "hash_loop_of_a" in named_a and "hash_loop_of_b" not in named_a
            assert "hash_loop_of_b" in named_b and "hash_loop_of_a" not in named_b
            assert functions(reader, "team-c", request) == NOT_FOUND
    assert s.exists("team-a", SAME_ID) == Stored("team-a", "upload")
    assert s.exists("team-c", SAME_ID) is None
    assert sorted(k for k in keys(store) if not k.endswith("symcache")) == sorted(
        f"{tenant}/debuginfo/{name}" for tenant in ("team-a", "team-b")
        for name in ("names/burn", f"{SAME_ID}/debuginfo", f"{SAME_ID}/meta.json"))


def test_the_shared_set_names_every_tenant_by_build_id_after_its_own_and_never_by_file_name(tmp_path: Path):
    shared, own = burn("hash_loop_shared", SHARED_ID), burn("hash_loop_of_a", SHARED_ID)
    s = symbolizer(objects(tmp_path))
    done = s.upload(SHARED, shared.path.read_bytes(), "burnshared")
    assert done.build_id == SHARED_ID
    offsets = text_offsets(shared)
    by_id, by_name = ObjectRequest(SHARED_ID, "", offsets), ObjectRequest("", "/opt/bin/burnshared", offsets)
    for tenant in ("team-a", "team-b"):
        assert "hash_loop_shared" in functions(s, tenant, by_id)
        assert functions(s, tenant, by_name) == NOT_FOUND  # a name says nothing of which program a file is
        assert s.exists(tenant, SHARED_ID) == Stored(SHARED, "upload")

    s.upload("team-a", own.path.read_bytes(), "burnshared")  # after team-a's answer came from the shared set
    assert "hash_loop_of_a" in functions(s, "team-a", by_id) and "hash_loop_of_a" in functions(s, "team-a", by_name)
    assert "hash_loop_shared" not in functions(s, "team-a", by_id)
    assert "hash_loop_shared" in functions(s, "team-b", by_id)
    assert functions(s, "team-b", by_name) == NOT_FOUND
    assert s.exists("team-a", SHARED_ID) == Stored("team-a", "upload")


def test_files_stored_before_tenants_are_the_shared_set(tmp_path: Path):
    """What the symbolizer wrote before debug information had owners, key by key, as it wrote them."""
    binary = burn("hash_loop_of_old", "01d0" * 10)
    data, build_id = binary.path.read_bytes(), "01d0" * 10
    info, (kind, feats) = read_elf(data), features(data)
    store = objects(tmp_path)
    store.put(f"debuginfo/{build_id}/debuginfo", data)
    store.put(f"debuginfo/{build_id}/meta.json", json.dumps({
        "build_id": build_id, "file_name": "burn", "source": "upload", "size": len(data), "kind": kind,
        "features": feats, "segments": segment_rows(info.segments), "segments_from_file": True}).encode())
    store.put("debuginfo/names/burn", build_id.encode())
    s = symbolizer(store)
    offsets = text_offsets(binary)
    for tenant in ("anonymous", "team-a"):
        assert "hash_loop_of_old" in functions(s, tenant, ObjectRequest(build_id.upper(), "", offsets))
        assert s.exists(tenant, build_id) == Stored(SHARED, "upload")
        # by file name it named every tenant's frames; now only a tenant's own upload does
        assert functions(s, tenant, ObjectRequest("", "burn", offsets)) == NOT_FOUND


@pytest.mark.parametrize(("call", "message"), [
    (lambda s, data: s.upload("team-a", data, "app", "../../x"), "invalid build ID '../../x'"),
    (lambda s, data: s.upload("team-a", data, "app", "ab/cd"), "invalid build ID 'ab/cd'"),
    (lambda s, data: s.upload("team-a", data, "x/.."), "invalid file name 'x/..': its base name is . or .."),
    (lambda s, data: s.upload("team-a", data, "bin/.debug"), "invalid file name 'bin/.debug': nothing is left"),
    (lambda s, data: s.upload("team-a", data, "a\\b"), "invalid file name 'a\\\\b'"),
    (lambda s, data: s.exists("team-a", "../../x"), "invalid build ID '../../x'"),
    (lambda s, data: s.symbolize("team-a", [ObjectRequest(SAME_ID, "", np.zeros(1, np.uint64)),
                                            ObjectRequest("../../x", "", np.zeros(1, np.uint64))]),
     "invalid build ID '../../x'"),
    (lambda s, data: s.symbolize("team-a", [ObjectRequest("", "..", np.zeros(1, np.uint64))]),
     "invalid file name '..'"),
], ids=["upload-traversal", "upload-slash", "upload-dotdot-name", "upload-debug-only", "upload-backslash",
        "exists", "symbolize-build-id", "symbolize-file-name"])
def test_bad_build_ids_and_names_are_refused_before_anything_is_read_or_written(tmp_path: Path, call, message):
    store = objects(tmp_path)
    debuginfod = DebuginfodClient(("http://127.0.0.1:9",), 1, 1)  # would fail the call if it were asked
    try:
        with pytest.raises(ValueError, match=f"^{_escaped(message)}"):
            call(symbolizer(store, debuginfod), burn("hash_loop", SAME_ID).path.read_bytes())
        assert debuginfod.requests == 0
    finally:
        debuginfod.close()
    assert keys(store) == []


def _escaped(text: str) -> str:
    import re

    return re.escape(text)


def test_a_file_whose_own_build_id_is_too_short_to_be_one_is_refused(tmp_path: Path):
    store = objects(tmp_path)
    short = native.build_c("burn", "-O1", "-Wl,--build-id=0x01")
    with pytest.raises(DebuginfoError, match=r"^burn has a build ID Flamewatch cannot store: invalid build ID '01'"):
        symbolizer(store).upload("team-a", short.path.read_bytes(), "burn")
    assert keys(store) == []


# ------------------------------------------------------------------------------ the querier


def write(db, store: ObjectStore, tenant: str, pprof: Path) -> None:
    BlockWriter(store, db).write(tenant, prepare({"service_name": "burn"}, pprof.read_bytes(), IngestLimits(),
                                                 BASE).entries)


def merged_names(querier: Querier, tenant: str) -> set[str]:
    return set(querier.merge(tenant, CPU + '{service_name="burn"}', *ALL).tree.names.tolist())


def _three_tenants_two_uploads(db, tmp_path: Path):
    """The same stripped program's profile stored in team-a, team-b and team-c; team-a uploads the binary
    whose hot function is hash_loop_of_a, team-b one naming it hash_loop_of_b, team-c none. The store and
    the symbolizer, and team-b's binary."""
    mine, theirs = burn("hash_loop_of_a", SAME_ID), burn("hash_loop_of_b", SAME_ID)
    _, pprof = native.profile(mine.stripped, 1.0, tmp_path)  # a gperftools profile: the file name, no build ID
    store = objects(tmp_path)
    for tenant in ("team-a", "team-b", "team-c"):
        write(db, store, tenant, pprof)
    s = symbolizer(store)
    s.upload("team-a", mine.path.read_bytes(), "burn")
    s.upload("team-b", theirs.path.read_bytes(), "burn")
    return store, s, theirs


@pytest.mark.go
@pytest.mark.postgres
def test_each_tenants_query_is_named_from_its_own_uploads_in_memory_and_in_postgres(db, tmp_path: Path):
    store, s, theirs = _three_tenants_two_uploads(db, tmp_path)
    s.upload(SHARED, theirs.path.read_bytes(), "burn")  # the shared set never answers for a file name

    def querier(step: Symbolization) -> Querier:
        return Querier(db, BlockCache(store, 1 << 30, 4, PathIndex()), QuerierConfig(), step)

    step = Symbolization(InProcess(s), db, retry_missing_s=0.0)
    try:
        q = querier(step)
        first, second, none = merged_names(q, "team-a"), merged_names(q, "team-b"), merged_names(q, "team-c")
    finally:
        step.close()  # the answers are in Postgres
    assert "hash_loop_of_a" in first and "hash_loop_of_b" not in first
    assert "hash_loop_of_b" in second and "hash_loop_of_a" not in second
    assert not {"hash_loop_of_a", "hash_loop_of_b", "main"} & none and any(n.startswith("[burn] 0x") for n in none)
    with db.connection() as conn:
        owners = {r[0] for r in conn.execute("SELECT DISTINCT split_part(object_key, '/', 1) FROM symbolized_frames")}
    assert owners == {"team-a", "team-b"}

    nothing_uploaded = Symbolization(InProcess(symbolizer(objects(tmp_path / "empty"))), db, retry_missing_s=0.0)
    try:  # a querier that starts later reads each tenant's own answers back from Postgres
        q = querier(nothing_uploaded)
        assert merged_names(q, "team-b") & {"hash_loop_of_a", "hash_loop_of_b"} == {"hash_loop_of_b"}
        assert merged_names(q, "team-a") & {"hash_loop_of_a", "hash_loop_of_b"} == {"hash_loop_of_a"}
    finally:
        nothing_uploaded.close()


@pytest.mark.go
@pytest.mark.postgres
def test_a_read_of_several_tenants_names_each_tenants_blocks_by_its_own_uploads(db, tmp_path: Path):
    store, s, _ = _three_tenants_two_uploads(db, tmp_path)
    step = Symbolization(InProcess(s), db, retry_missing_s=0.0)
    try:
        q = Querier(db, BlockCache(store, 1 << 30, 4, PathIndex()), QuerierConfig(), step)
        ab, ac = (set(q.merge(t, CPU + '{service_name="burn"}', *ALL).tree.names.tolist())
                  for t in (("team-a", "team-b"), ("team-a", "team-c")))
        alone = merged_names(q, "team-c")
        gathered = profile_pb2.Profile.FromString(gzip.decompress(q.pprof(("team-b", "team-c"), CPU + "{}", *ALL,
                                                                          None)[1]))
    finally:
        step.close()
    # each block as its own tenant's read names it: the merge of the two tenants' answers
    assert {"hash_loop_of_a", "hash_loop_of_b"} <= ab
    assert "hash_loop_of_a" in ac and "hash_loop_of_b" not in ac
    assert {n for n in ac if n.startswith("[burn] 0x")} == {n for n in alone if n.startswith("[burn] 0x")} != set()
    # pprof merges the equal frames of both tenants' blocks into one: the first tenant that knows it names it
    names = {gathered.string_table[f.name] for f in gathered.function}
    assert "hash_loop_of_b" in names and "hash_loop_of_a" not in names
