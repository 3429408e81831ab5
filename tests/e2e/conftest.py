"""The e2e cluster: `flamewatch ingester` and `flamewatch querier` as separate processes on free ports.

| fixture | scope | markers | gives |
|---|---|---|---|
| `e2e_storage` | module | `postgres`, `s3` | a fresh database and a fresh bucket shared by the module's services |
| `cluster` | module | `e2e`, `postgres`, `s3` | a started `e2e.cluster.Cluster` on `e2e_storage` |
| `embedded_workdir` | function | | an empty directory for `flamewatch all` with its embedded Postgres |
| `regress_profiles` | session | `go` | real CPU profiles of tests/targets/regress: base build twice, slower |

A `Cluster` exposes `ingester_url`, `querier_url`, `ingester_grpc`, `querier_grpc` ("127.0.0.1:PORT"),
an HTTP client (`http`), gRPC stubs (`ingest`, `query`), `restart_ingester()`, `restart_querier()`, `kill(service)`,
`add_ingester(name, *flags)` for an extra ingester with its own flags on the same storage, `stop()`,
and the storage helpers `counts()` (rows in profiles, series, blocks), `blocks()` and `objects()`
(keys in the bucket). The services flush every 0.2 s. At the end of the module they must exit 0 on
SIGTERM.

Every service writes its log to a file; when a test that uses a cluster fails, the part of each log
written during the test is added to the failure report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.cluster import Cluster, Storage, running
from infra import gotargets, leftovers, postgres
from infra.minio import MinioServer

_MARKS = pytest.StashKey[list]()

# Each regress profile covers 3000 requests, about three quarters of a second of CPU (750 samples at the
# target's 1000 Hz) however busy the machine is, so a test's power does not depend on the load. Asynchronous
# preemption is off: on a loaded machine the runtime's preemption signal would land in a varying share of
# samples.
REGRESS_PROFILES, REGRESS_REQUESTS = 12, 3000


@pytest.fixture(scope="session")
def regress_profiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """CPU profiles of the base build (twice) and of the 20 % slower one, taken side by side, once per run
    for the gate's tests and the server's."""
    builds = {"base": gotargets.build("regress"), "again": gotargets.build("regress"),
              "slower": gotargets.build("regress", "-X main.extraPercent=20", "20")}
    out = {name: tmp_path_factory.mktemp(f"regress-{name}") for name in builds}
    env = {**os.environ, "GODEBUG": "asyncpreemptoff=1"}
    running = [subprocess.Popen([str(binary), "-dir", str(out[name]), "-count", str(REGRESS_PROFILES), "-requests",
                                 str(REGRESS_REQUESTS)], stderr=subprocess.DEVNULL, env=env)
               for name, binary in builds.items()]
    for process in running:
        assert process.wait(600) == 0
    return {name: sorted(directory.glob("*.pb.gz")) for name, directory in out.items()}


@pytest.fixture(scope="module")
def e2e_storage(_postgres_server: str, minio: MinioServer) -> Iterator[Storage]:
    """A fresh database and bucket for one module's services (module-scoped `postgres_dsn` + `s3_bucket`)."""
    bucket = f"flamewatch-e2e-{uuid.uuid4().hex[:16]}"
    with postgres.fresh_database(_postgres_server) as dsn:
        minio.create_bucket(bucket)
        try:
            yield Storage(dsn, minio, bucket)
        finally:
            minio.start()  # a test that stopped MinIO and failed before starting it again
            minio.remove_bucket(bucket)


@pytest.fixture(scope="module")
def cluster(e2e_storage: Storage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(Cluster(e2e_storage, tmp_path_factory.mktemp("cluster"))) as c:
        yield c


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if "cluster" in getattr(item, "fixturenames", ()) and item.get_closest_marker("e2e") is None:
        pytest.fail(f"{item.nodeid} uses cluster but is not marked @pytest.mark.e2e", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    clusters = [v for v in getattr(item, "funcargs", {}).values() if isinstance(v, Cluster)]
    if call.when == "setup":
        item.stash[_MARKS] = [c.log_marks() for c in clusters]
    elif report.failed and clusters:
        marks = item.stash.get(_MARKS, [{} for _ in clusters])
        for i, (c, m) in enumerate(zip(clusters, marks, strict=True)):
            report.sections.append((f"flamewatch service logs (cluster {i})", c.logs_since(m)))



@pytest.fixture
def embedded_workdir() -> Iterator[Path]:
    """Outside pytest's temporary root: run as root, pgserver starts Postgres as its own user, which must
    traverse the directories above the data; pgserver opens them up, but every pytest session that
    starts on the machine closes pytest's root again (mode 0700), so another session could make the
    server unable to start or run."""
    path = leftovers.work_dir("e2e")
    yield path
    shutil.rmtree(path, ignore_errors=True)
