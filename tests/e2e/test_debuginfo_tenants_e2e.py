"""Debug information per tenant through `flamewatch all --web.config.file`, as users reach it: profiles
pushed to `/ingest` and debug information sent with `flamewatch debuginfo upload`, each with its own
credential, and answers read from `/api/v1/query`; the querier asks the symbolizer with the process's
in-process credential, naming the query's tenant.

The program is `burn` built twice with one forced build ID and `hash_loop` renamed in each (the stripped
binaries are the same bytes), so the names an answer shows tell whose debug information named it; its
profile comes from gperftools (a file name, no build ID), and a copy of it carries the build ID.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import grpc
import httpx
import pytest
from e2e.allinone import start_all, stop
from e2e.cluster import FLAMEWATCH
from e2e.test_symbolization import _with_build_id, names_of
from infra import native
from infra.ports import free_port
from infra.waiting import answers, wait_for

from flamewatch.api.flamewatch.v1 import symbolizer_pb2 as pb
from flamewatch.api.flamewatch.v1 import symbolizer_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.gcc, pytest.mark.go]

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
SAME_ID = "e2" * 20  # both tenants upload for this build ID
SHARED_ID = "5e" * 20
OPS_TOKEN = "ops-token-for-the-debuginfo-tenants-test"
NAMED_WITHIN_S = 30.0


def _basic(user: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{user}-pw".encode()).decode()


def _web_config(path: Path) -> Path:
    hashed = {user: bcrypt.hashpw(f"{user}-pw".encode(), bcrypt.gensalt(4)).decode() for user in ("alice", "bob")}
    path.write_text(f"""
basic_auth_users: {{alice: "{hashed['alice']}", bob: "{hashed['bob']}"}}
bearer_tokens: {{ops: "sha256:{hashlib.sha256(OPS_TOKEN.encode()).hexdigest()}"}}
access:
  alice: {{write: [team-a], read: [team-a]}}
  bob: {{write: [team-b], read: [team-b]}}
  ops: {{write: [team-a], read: [team-a], admin: true}}
""")
    return path


@dataclass
class Server:
    workdir: Path
    url: str
    grpc_address: str
    http: httpx.Client

    def push(self, user: str, pprof: Path, service_name: str) -> None:
        r = self.http.post(f"{self.url}/ingest", params={"service_name": service_name, "__name__": "process_cpu"},
                           content=pprof.read_bytes(), headers={"Authorization": _basic(user)})
        assert r.status_code == 200, r.text

    def names(self, user: str, service_name: str) -> set[str]:
        r = self.http.get(f"{self.url}/api/v1/query", headers={"Authorization": _basic(user)}, params={
            "query": f'{CPU}{{service_name="{service_name}"}}', "from": "now-1h", "format": "tree",
            "max_nodes": 100000})
        assert r.status_code == 200, r.text
        return names_of(r.json()["tree"])

    def names_once_named(self, user: str, service_name: str, wanted: str) -> set[str]:
        deadline = time.monotonic() + NAMED_WITHIN_S
        while wanted not in (found := self.names(user, service_name)) and time.monotonic() < deadline:
            time.sleep(0.5)
        return found

    def upload(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(FLAMEWATCH), "debuginfo", "upload", *args, "--symbolizer.address",
                               self.grpc_address], capture_output=True, text=True, timeout=120)

    def symbolizer(self) -> symbolizer_pb2_grpc.SymbolizerServiceStub:
        return symbolizer_pb2_grpc.SymbolizerServiceStub(grpc.insecure_channel(self.grpc_address))

    def debuginfo_keys(self) -> list[str]:
        objects = self.workdir / "data" / "objects"
        return sorted(str(p.relative_to(objects)) for p in objects.rglob("*") if p.is_file() and "debuginfo" in
                      p.relative_to(objects).parts)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("debuginfo-tenants")
    config = workdir / "flamewatch.yaml"
    config.write_text("scrape_configs: []\n")
    http_port, grpc_port = free_port(), free_port()
    process = start_all(workdir, config, http_port, grpc_port, "--web.config.file",
                        str(_web_config(workdir / "web.yml")))
    url = f"http://127.0.0.1:{http_port}"
    try:
        wait_for(lambda: answers(url + "/readyz"), 90, "flamewatch all", workdir / "all.log", process)
        with httpx.Client(timeout=60) as http:
            yield Server(workdir, url, f"127.0.0.1:{grpc_port}", http)
    finally:
        code = stop(process)
    assert code == 0, (workdir / "all.log").read_text()[-3000:]


def _burn(hash_loop: str, build_id: str) -> native.NativeBinary:
    return native.build_c("burn", "-O1", "-DNO_INLINE", f"-Dhash_loop={hash_loop}", f"-Wl,--build-id=0x{build_id}")


def test_two_tenants_uploading_for_one_program_each_see_their_own_names(server: Server, tmp_path: Path):
    mine, theirs = _burn("hash_loop_of_a", SAME_ID), _burn("hash_loop_of_b", SAME_ID)
    _, by_name = native.profile(mine.stripped, 1.0, tmp_path)
    by_id = _with_build_id(by_name, "burn", SAME_ID, tmp_path / "by-id.pb.gz")
    done_a = server.upload(str(mine.path), "--basic-auth", "alice:alice-pw")
    done_b = server.upload(str(theirs.path), "--basic-auth", "bob:bob-pw", "--tenant", "team-b")
    assert (done_a.returncode, done_b.returncode) == (0, 0), done_a.stderr + done_b.stderr
    assert f"stored as build ID {SAME_ID}" in done_a.stdout and "shared" not in done_a.stdout
    for user in ("alice", "bob"):
        server.push(user, by_name, "burn-by-name")
        server.push(user, by_id, "burn-by-id")

    for user, own, other in (("alice", "hash_loop_of_a", "hash_loop_of_b"),
                             ("bob", "hash_loop_of_b", "hash_loop_of_a")):
        for service in ("burn-by-name", "burn-by-id"):
            names = server.names_once_named(user, service, own)
            assert own in names and "main" in names and other not in names, (user, service, sorted(names)[:20])
    assert {f"team-a/debuginfo/{SAME_ID}/debuginfo", f"team-b/debuginfo/{SAME_ID}/debuginfo",
            "team-a/debuginfo/names/burn", "team-b/debuginfo/names/burn"} <= set(server.debuginfo_keys())


def test_only_an_admin_uploads_to_the_shared_set_which_names_every_tenant_by_build_id(server: Server,
                                                                                     tmp_path: Path):
    shared = _burn("hash_loop_shared", SHARED_ID)
    refused = server.upload(str(shared.path), "--basic-auth", "bob:bob-pw", "--shared")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"flamewatch debuginfo upload: {shared.path}: {server.grpc_address} refused this credential "
        "(PERMISSION_DENIED): bob may not upload to the shared debug information: it needs admin in the web "
        "configuration's access")
    assert not [k for k in server.debuginfo_keys() if SHARED_ID in k]

    done = server.upload(str(shared.path), "--token", OPS_TOKEN, "--shared")
    assert done.returncode == 0, done.stderr
    assert f"stored in the shared set as build ID {SHARED_ID}" in done.stdout
    _, by_name = native.profile(shared.stripped, 1.0, tmp_path)
    by_id = _with_build_id(by_name, "burn", SHARED_ID, tmp_path / "by-id.pb.gz")
    for user in ("alice", "bob"):
        server.push(user, by_id, "shared-by-id")
        server.push(user, by_name, "shared-by-name")
    for user in ("alice", "bob"):
        assert "hash_loop_shared" in server.names_once_named(user, "shared-by-id", "hash_loop_shared")
        # the file is named burn in the shared set, and alice's own `burn` is another build: by name, the
        # shared set never answers, so her own file does (and names these addresses with her names)
        assert "hash_loop_shared" not in server.names(user, "shared-by-name")

    stub, alice = server.symbolizer(), (("authorization", _basic("alice")),)
    found = stub.DebuginfoExists(pb.DebuginfoExistsRequest(build_id=SHARED_ID), metadata=alice, timeout=30)
    assert (found.exists, found.source, found.shared) == (True, "upload", True)
    found = stub.DebuginfoExists(pb.DebuginfoExistsRequest(build_id=SAME_ID.upper()), metadata=alice, timeout=30)
    assert (found.exists, found.shared) == (True, False)


def test_another_tenant_or_no_credential_is_refused(server: Server):
    stub = server.symbolizer()
    request = pb.DebuginfoExistsRequest(build_id=SAME_ID)
    with pytest.raises(grpc.RpcError) as refused:
        stub.DebuginfoExists(request, metadata=(("authorization", _basic("bob")), ("x-scope-orgid", "team-a")),
                             timeout=30)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert refused.value.details() == "bob may not read tenant 'team-a'; it may read 'team-b'"
    with pytest.raises(grpc.RpcError) as refused:
        stub.Symbolize(pb.SymbolizeRequest(objects=[pb.ObjectAddresses(build_id=SAME_ID, file_offsets=[1])]),
                       timeout=30)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.parametrize(("call", "message"), [
    (lambda stub, data, md: stub.DebuginfoExists(pb.DebuginfoExistsRequest(build_id="../../x"), metadata=md,
                                                 timeout=30), "invalid build ID '../../x'"),
    (lambda stub, data, md: stub.UploadDebuginfo(iter([pb.UploadDebuginfoChunk(build_id="../../x", file_name="burn",
                                                                              data=data)]), metadata=md, timeout=30),
     "invalid build ID '../../x'"),
    (lambda stub, data, md: stub.UploadDebuginfo(iter([pb.UploadDebuginfoChunk(file_name="x/..", data=data,
                                                                              shared=True)]), metadata=md, timeout=30),
     "invalid file name 'x/..'"),
    (lambda stub, data, md: stub.Symbolize(pb.SymbolizeRequest(objects=[
        pb.ObjectAddresses(build_id=SAME_ID, file_offsets=[1]),
        pb.ObjectAddresses(build_id="ab/../cd", file_offsets=[1])]), metadata=md, timeout=30),
     "invalid build ID 'ab/../cd'"),
], ids=["exists", "upload-build-id", "upload-file-name", "symbolize"])
def test_bad_build_ids_and_names_are_invalid_arguments_and_write_nothing(server: Server, call, message: str):
    data = _burn("hash_loop", "ba" * 20).path.read_bytes()
    before = server.debuginfo_keys()
    with pytest.raises(grpc.RpcError) as refused:
        call(server.symbolizer(), data, (("authorization", f"Bearer {OPS_TOKEN}"),))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details().startswith(message), refused.value.details()
    assert server.debuginfo_keys() == before
