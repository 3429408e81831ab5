"""Fixtures for the real parts the tests run against: Postgres, MinIO and Go target programs.

Tests declare what they touch with markers, and using a fixture without its marker fails the test:

| fixture | scope | marker | gives |
|---|---|---|---|
| `postgres_dsn` | function | `postgres` | `postgresql://` URI of a fresh, empty database (dropped after) |
| `db` | function | `postgres` | a `Database` (pool) open on `postgres_dsn`, migrated (closed after) |
| `stoppable_postgres` | module | `postgres` | an `infra.pgctl.PostgresProcess` to stop, crash and start |
| `minio` | session | `s3` | a running `infra.minio.MinioServer` (see below) |
| `s3_bucket` | function | `s3` | name of a fresh, empty bucket on `minio` (removed after) |
| `go_target` | function | `go` | "127.0.0.1:PORT" of a freshly started `tests/targets/workload` |
| `go_profiles` | session | `go` | name -> gzipped pprof: cpu (2 s), heap, allocs, goroutine, mutex, block |
| `go_profile_files` | session | `go` | name -> Path of the same profiles saved as `<name>.pb.gz` |
| `helm_binary` | session | `helm` | Path of the `helm` binary `make` built into `.cache/bin` (see `infra.helm`) |
| `docker_engine`, `docker_base_images` | session | `docker` | in `tests/deploy/conftest.py` (see `infra.docker`) |
| `kube_api` | session | `kubernetes` | a running `infra.kubeapi.KubeAPIServer`: etcd + kube-apiserver, `kubeconfig` |
| `kube_node` | session | `cluster` | in `tests/deploy/conftest.py`: a one-node cluster (`infra.kubenode.KubeNode`) |
| `ui_node_modules` | session | `npm` | Path of the UI's `node_modules`, installed by `make` (`npm ci`) |
| `alertmanager` | function | `alertmanager` | an `infra.alertmanager.AlertmanagerServer`, its webhook `receiver` |
| `memory_cgroup` | function | `cgroup` | Path of a memory cgroup not yet created, with a unique name (removed after) |

`minio` has `endpoint` ("127.0.0.1:PORT"), `access_key`, `secret_key`, `client()`, and `stop()` / `start()`,
which bring it down and back on the same port with the same data. Postgres is the server named by
`FLAMEWATCH_TEST_POSTGRES_DSN` when set, else an embedded `pgserver` started once per session.
"""

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings
from infra import cgroups, gotargets, helm, leftovers, postgres
from infra.alertmanager import AlertmanagerServer, WebhookReceiver
from infra.kubeapi import KubeAPIServer
from infra.minio import MinioServer
from infra.pgctl import PostgresProcess

from flamewatch.storage.postgres import Database, PostgresConfig, open_database

# Property tests check answers, not time: on a loaded machine one example (often the first, while imports
# warm up) can take longer than Hypothesis's default 200 ms deadline without anything being wrong.
settings.register_profile("flamewatch", deadline=None)
settings.load_profile("flamewatch")

POSTGRES_DSN_ENV = "FLAMEWATCH_TEST_POSTGRES_DSN"

# Fixture -> the marker a test must carry to use it, directly or through another fixture.
REQUIRED_MARKERS = {
    "postgres_dsn": "postgres",
    "db": "postgres",
    "_postgres_server": "postgres",
    "stoppable_postgres": "postgres",
    "minio": "s3",
    "s3_bucket": "s3",
    "go_target": "go",
    "go_profiles": "go",
    "go_profile_files": "go",
    "_go_workload": "go",
    "_go_capture": "go",
    "helm_binary": "helm",
    "docker_engine": "docker",
    "docker_base_images": "docker",
    "kube_api": "kubernetes",
    "kube_node": "cluster",
    "alertmanager": "alertmanager",
    "ui_node_modules": "npm",
    "debuginfod": "debuginfod",
    "flamewatch_ui": "browser",
    "chromium": "browser",
    "memory_cgroup": "cgroup",
}


_SESSION_LOCK = pytest.StashKey[object]()


def pytest_configure(config: pytest.Config) -> None:
    """Before any test or worker starts: stop what a killed session left running (`infra.leftovers`).
    Workers (pytest-xdist) leave it to the session that started them, and inherit its mark."""
    if not hasattr(config, "workerinput"):
        config.stash[_SESSION_LOCK] = leftovers.begin_session()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail, before anything starts, a test that uses infrastructure it does not declare."""
    undeclared: dict[str, list[str]] = {}
    for fixture in getattr(item, "fixturenames", ()):
        marker = REQUIRED_MARKERS.get(fixture)
        if marker is not None and item.get_closest_marker(marker) is None:
            undeclared.setdefault(marker, []).append(fixture)
    if undeclared:
        reasons = [f"uses {', '.join(_public_first(fixtures))} but is not marked @pytest.mark.{marker}"
                   for marker, fixtures in sorted(undeclared.items())]
        pytest.fail(f"{item.nodeid} " + "; ".join(reasons), pytrace=False)
    shared = {group for name, group in _MARKED.items() if item.get_closest_marker(name)} | \
        {group for name, group in _USING.items() if name in getattr(item, "fixturenames", ())}
    for group in sorted(shared - {module_group(item.nodeid)}):
        pytest.fail(f"{item.nodeid} shares what the group {group} holds: add {item.nodeid.split('::')[0]} to "
                    f'ONE_WORKER["{group}"] in tests/conftest.py, so that no other worker runs it at the same time',
                    pytrace=False)


# `make test` spreads the tests over two pytest-xdist workers (`-n 2 --dist loadscope`) by module, so a
# module's fixtures are set up once; the modules that share what is one per machine, or dear to set up,
# run on one worker, one after another (`ONE_WORKER`, checked in `pytest_runtest_setup`). Modules go out
# in collection order (`--no-loadscope-reorder`): the machine's long group first, the unit tests last.
MACHINE = "docker-and-cluster"
ONE_WORKER = {
    # one Docker engine and its images, and the one-node cluster built on them (its network, its name)
    MACHINE: ("tests/deploy/test_cluster_node.py", "tests/deploy/test_compose.py",
              "tests/deploy/test_compose_secure.py", "tests/deploy/test_helm_cluster.py",
              "tests/deploy/test_readme_helm.py"),
    # the e2e session's regress_profiles: about a minute and a half of both cores
    "regress": ("tests/e2e/test_changes_e2e.py", "tests/e2e/test_gate.py"),
}
_GROUP_OF = {module: group for group, modules in ONE_WORKER.items() for module in modules}
_MARKED = {"docker": MACHINE, "cluster": MACHINE}  # a test with this marker is in that group
_USING = {"regress_profiles": "regress"}  # a test using this fixture is in that group
_ORDER = ("deploy", "e2e", "browser", "integration", "unit")


def module_group(nodeid: str) -> str:
    """What runs on one worker with the test `nodeid`: its `ONE_WORKER` group, else its module."""
    module = nodeid.split("::")[0]
    return _GROUP_OF.get(module, module)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """pytest-xdist's `loadscope` by `module_group` instead of by module alone."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return module_group(nodeid)

    return ByGroup(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The machine's group first, then the slower kinds of test before the quicker ones."""
    def kind(item: pytest.Item) -> int:
        parts = Path(item.nodeid.split("::")[0]).parts
        return _ORDER.index(parts[1]) if len(parts) > 2 and parts[1] in _ORDER else len(_ORDER)
    items.sort(key=lambda item: (module_group(item.nodeid) != MACHINE, kind(item)))


def _public_first(fixtures: list[str]) -> list[str]:
    """The fixtures a test asked for by name, else the private ones it reached through them."""
    return sorted(name for name in fixtures if not name.startswith("_")) or sorted(fixtures)


def _require_marker(request: pytest.FixtureRequest, marker: str) -> None:
    """The same check for fixtures requested at run time (`request.getfixturevalue`)."""
    if request.node.get_closest_marker(marker) is None:
        pytest.fail(f"fixture '{request.fixturename}' needs @pytest.mark.{marker}", pytrace=False)


# Postgres


@pytest.fixture(scope="session")
def _postgres_server() -> Iterator[str]:
    with postgres.server(os.environ.get(POSTGRES_DSN_ENV)) as admin_dsn:
        yield admin_dsn


@pytest.fixture
def postgres_dsn(request: pytest.FixtureRequest, _postgres_server: str) -> Iterator[str]:
    _require_marker(request, "postgres")
    with postgres.fresh_database(_postgres_server) as dsn:
        yield dsn


@pytest.fixture
def db(postgres_dsn: str) -> Iterator[Database]:
    database = open_database(PostgresConfig(dsn=postgres_dsn))
    yield database
    database.close()


@pytest.fixture(scope="module")
def stoppable_postgres() -> Iterator[PostgresProcess]:
    """A server of the module's own (never the shared one): outage tests stop it and start it again."""
    with PostgresProcess() as server:
        yield server


# MinIO


@pytest.fixture(scope="session")
def minio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MinioServer]:
    with MinioServer(tmp_path_factory.mktemp("minio")) as server:
        yield server


@pytest.fixture
def s3_bucket(request: pytest.FixtureRequest, minio: MinioServer) -> Iterator[str]:
    _require_marker(request, "s3")
    name = f"flamewatch-test-{uuid.uuid4().hex[:16]}"
    minio.create_bucket(name)
    yield name
    minio.start()  # a test that stopped MinIO and failed before starting it again
    minio.remove_bucket(name)


# Go targets


@pytest.fixture(scope="session")
def _go_workload() -> Path:
    return gotargets.build("workload")


@pytest.fixture
def go_target(request: pytest.FixtureRequest, _go_workload: Path, tmp_path: Path) -> Iterator[str]:
    _require_marker(request, "go")
    with gotargets.GoTarget(_go_workload, tmp_path / "workload.log") as target:
        yield target.addr


@dataclass(frozen=True)
class _Capture:
    profiles: dict[str, bytes]
    files: dict[str, Path]


@pytest.fixture(scope="session")
def _go_capture(_go_workload: Path, tmp_path_factory: pytest.TempPathFactory) -> _Capture:
    directory = tmp_path_factory.mktemp("go-profiles")
    with gotargets.GoTarget(_go_workload, directory / "workload.log") as target:
        profiles = gotargets.capture_profiles(target.addr, cpu_seconds=2)
    files = {name: directory / f"{name}.pb.gz" for name in profiles}
    for name, data in profiles.items():
        files[name].write_bytes(data)
    return _Capture(profiles, files)


@pytest.fixture(scope="session")
def go_profiles(_go_capture: _Capture) -> dict[str, bytes]:
    return dict(_go_capture.profiles)


@pytest.fixture(scope="session")
def go_profile_files(_go_capture: _Capture) -> dict[str, Path]:
    return dict(_go_capture.files)


# Helm


@pytest.fixture(scope="session")
def helm_binary() -> Path:
    return helm.binary()


# Kubernetes


@pytest.fixture(scope="session")
def kube_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeAPIServer]:
    with KubeAPIServer(tmp_path_factory.mktemp("kube")) as server:
        yield server


# Alertmanager


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[AlertmanagerServer]:
    with WebhookReceiver() as receiver, AlertmanagerServer(tmp_path / "alertmanager", receiver) as server:
        yield server


# The web UI's npm packages


@pytest.fixture(scope="session")
def ui_node_modules() -> Path:
    path = Path(__file__).resolve().parents[1] / "services" / "frontend" / "ui" / "node_modules"
    if not (path / ".installed").is_file():
        pytest.fail(f"{path} is not installed: `make ui` installs it (npm ci)", pytrace=False)
    return path


# Memory cgroups


@pytest.fixture
def memory_cgroup() -> Iterator[Path]:
    """Where a memory cgroup of a unique name will be (`infra.cgroups`); whatever the test leaves there is
    killed and the cgroup removed, whether the test passed or not."""
    problem = cgroups.can_create()
    if problem:
        pytest.fail(f"this test needs memory cgroups: {problem}", pytrace=False)
    path = cgroups.memory_cgroup(f"flamewatch-test-{uuid.uuid4().hex[:12]}")
    try:
        yield path
    finally:
        cgroups.remove(path)
