"""Our CLI behind `--web.config.file`: `flamewatch upload` (to an ingester) and `flamewatch debuginfo
upload` (to a symbolizer) with `--token`, `--basic-auth` and the FLAMEWATCH_TOKEN / FLAMEWATCH_BASIC_AUTH
variables; profiles land in the credential's tenant, and a refusal is one clear line that says what to do.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.calls import settled
from e2e.cluster import FLAMEWATCH, Cluster, Service, Storage, running
from e2e.credentials import ADMIN, ALICE, CI, EVERYONE, VIEWER, write_web_config
from infra import native

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go, pytest.mark.gcc]

HINT = "give --token or --basic-auth (or FLAMEWATCH_TOKEN, FLAMEWATCH_BASIC_AUTH)"
NO_CREDENTIALS = "credentials required: send basic auth or a bearer token (Authorization header)"


@pytest.fixture(scope="module")
def secured(e2e_storage: Storage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """An ingester, a querier and a symbolizer (`secured.extra["symbolizer"]`) behind one web configuration."""
    workdir = tmp_path_factory.mktemp("cli-auth")
    flags = ("--web.config.file", str(write_web_config(workdir / "web.yml", *EVERYONE)))
    c = Cluster(e2e_storage, workdir, flags=flags, headers={"Authorization": ADMIN.authorization})
    c.extra["symbolizer"] = Service("symbolizer", "symbolizer", e2e_storage, workdir / "symbolizer.log", flags)
    with running(c):
        c.extra["symbolizer"].start()
        yield c


def flamewatch(*args: str, **env: str) -> subprocess.CompletedProcess:
    """The CLI with these arguments and FLAMEWATCH_* variables (and none of the caller's)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FLAMEWATCH_")}
    return subprocess.run([str(FLAMEWATCH), *args], capture_output=True, text=True, timeout=120, env={**clean, **env})


def stored_in(cluster: Cluster, tenant: str) -> int:
    return cluster.counts(tenant)["profiles"]


# ------------------------------------------------------------------------------------------ upload


def upload(cluster: Cluster, files: dict[str, Path], *args: str, **env: str) -> subprocess.CompletedProcess:
    """Each upload with a label of its own: the ingester takes the same profile pushed again as a retry."""
    return flamewatch("upload", str(files["cpu"]), "--url", cluster.ingester_url, "--label", "service_name=cli",
                      "--label", f"upload={uuid.uuid4().hex[:8]}", *args, **env)


@pytest.mark.parametrize(("args", "env", "tenant"), [
    (("--token", CI.secret), {}, "team-b"),
    (("--token", CI.secret, "--tenant", "team-c"), {}, "team-c"),
    (("--basic-auth", ALICE.basic), {}, "team-a"),
    ((), {"FLAMEWATCH_TOKEN": CI.secret, "FLAMEWATCH_TENANT": "team-c"}, "team-c"),
    ((), {"FLAMEWATCH_BASIC_AUTH": ALICE.basic}, "team-a"),
], ids=["token", "token-and-tenant", "basic-auth", "FLAMEWATCH_TOKEN", "FLAMEWATCH_BASIC_AUTH"])
def test_upload_stores_in_the_credentials_tenant(secured: Cluster, go_profile_files: dict[str, Path],
                                                 args: tuple[str, ...], env: dict[str, str], tenant: str):
    before = stored_in(secured, tenant)
    done = upload(secured, go_profile_files, *args, **env)
    assert done.returncode == 0 and "stored 2 profiles" in done.stdout, done.stdout + done.stderr
    assert stored_in(secured, tenant) == before + 2


@pytest.mark.parametrize(("args", "env", "message"), [
    ((), {}, f"asks for credentials (401): {NO_CREDENTIALS}; {HINT}"),
    (("--basic-auth", f"{ALICE.name}:wrong"), {},
     f"asks for credentials (401): wrong user or password (user 'alice'); {HINT}"),
    ((), {"FLAMEWATCH_TOKEN": "not-a-token-we-know"}, f"asks for credentials (401): unknown bearer token; {HINT}"),
    (("--basic-auth", ALICE.basic, "--tenant", "team-b"), {},
     "refused this credential (403): alice may not write tenant 'team-b'; it may write 'team-a'"),
], ids=["none", "wrong-password", "unknown-token", "other-tenant"])
def test_upload_refused_says_why_in_one_line(secured: Cluster, go_profile_files: dict[str, Path],
                                            args: tuple[str, ...], env: dict[str, str], message: str):
    before = secured.counts()
    done = upload(secured, go_profile_files, *args, **env)
    assert done.returncode == 1 and done.stdout == "", done.stdout
    assert done.stderr == f"flamewatch upload: {go_profile_files['cpu']}: {secured.ingester_url} {message}\n"
    assert settled(secured)[0] == before


# --------------------------------------------------------------------------------- debuginfo upload


@pytest.fixture(scope="module")
def elf() -> Path:
    return native.build_c("burn").path


def debuginfo_upload(cluster: Cluster, elf: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return flamewatch("debuginfo", "upload", str(elf), "--symbolizer.address",
                      cluster.extra["symbolizer"].grpc_address, *args, **env)


@pytest.mark.parametrize(("args", "env"), [(("--basic-auth", ADMIN.basic), {}),
                                           ((), {"FLAMEWATCH_BASIC_AUTH": ADMIN.basic})],
                         ids=["basic-auth", "FLAMEWATCH_BASIC_AUTH"])
def test_debuginfo_upload_by_an_admin_is_stored(secured: Cluster, elf: Path, args: tuple[str, ...],
                                                env: dict[str, str]):
    done = debuginfo_upload(secured, elf, *args, **env)
    assert done.returncode == 0 and f"{elf}: stored as build ID " in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize(("args", "env", "message"), [
    ((), {}, f"asks for credentials (UNAUTHENTICATED): {NO_CREDENTIALS}; {HINT}"),
    (("--token", "not-a-token-we-know"), {}, f"asks for credentials (UNAUTHENTICATED): unknown bearer token; {HINT}"),
    (("--shared",), {"FLAMEWATCH_TOKEN": CI.secret}, "refused this credential (PERMISSION_DENIED): ci may not upload "
                                                     "to the shared debug information: it needs admin in the web "
                                                     "configuration's access"),
    ((), {"FLAMEWATCH_TOKEN": VIEWER.secret}, "refused this credential (PERMISSION_DENIED): viewer may not write any "
                                              "tenant"),
], ids=["none", "unknown-token", "shared-not-admin", "read-only"])
def test_debuginfo_upload_refused_says_why_in_one_line(secured: Cluster, elf: Path, args: tuple[str, ...],
                                                       env: dict[str, str], message: str):
    done = debuginfo_upload(secured, elf, *args, **env)
    address = secured.extra["symbolizer"].grpc_address
    assert (done.returncode, done.stdout) == (1, ""), done.stdout
    assert done.stderr == f"flamewatch debuginfo upload: {elf}: {address} {message}\n"
