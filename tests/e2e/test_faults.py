"""Faults injected into the split services while profiles keep coming: nothing acknowledged is lost,
nothing is stored twice.

Threads push one profile after another (`load.PushLoad`, each push with a `seq` label of its own)
while a fault is injected: the ingester killed with SIGKILL, MinIO stopped and crashed, Postgres
stopped and crashed (a server of this module's own, run with pg_ctl), two ingesters on one store, the
querier killed in the middle of a merge, and a disk that fills up (a real tmpfs). After each fault
the index holds exactly one profile per acknowledged push and none twice; a push cut off without an
answer may or may not have been stored, but never twice. The querier must read every stored profile
back, and every indexed block must have its object.

The same faults check how the services behave meanwhile: pushes fail fast with 503 naming the
problem, Postgres' return is noticed within 2 s, `/readyz` follows the dependencies while `/healthz`
stays up, a full disk is logged once per interval, and a block object lost from the store fails a
query with a message naming its key (REST and gRPC).
"""

from __future__ import annotations

import io
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
import pytest
from e2e.calls import Window, grpc_error, ingest, metadata
from e2e.cluster import FLAMEWATCH, Cluster, Service, Storage
from e2e.load import Outcome, PushLoad, stored_per_seq
from e2e.pushes import profile_time_ns
from infra import postgres, tmpfs
from infra.minio import MinioServer
from infra.pgctl import PostgresProcess
from infra.ports import free_port

from flamewatch.api.flamewatch.v1 import query_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

TENANT = "faults"
GOROUTINE = "goroutine:goroutine:count:goroutine:count"
SETTLE_ACKS = 6  # acknowledged pushes before a fault and after recovery
FAIL_FAST_S = 1.0  # a push while a backend is down; the pool used to make it wait 10 s
RECOVERY_S = 2.0  # from Postgres accepting connections to the first acknowledged push
READY_WITHIN_S = 10.0


@pytest.fixture(scope="module")
def e2e_storage(stoppable_postgres: PostgresProcess, minio: MinioServer) -> Iterator[Storage]:
    """The module's `cluster` runs on a Postgres of its own, so the tests can stop and crash it."""
    bucket = f"flamewatch-faults-{uuid.uuid4().hex[:12]}"
    with postgres.fresh_database(stoppable_postgres.dsn) as dsn:
        minio.create_bucket(bucket)
        try:
            yield Storage(dsn, minio, bucket)
        finally:
            minio.start()
            minio.remove_bucket(bucket)
            stoppable_postgres.start()  # to drop the database


@pytest.fixture(scope="module")
def body(go_profiles: dict[str, bytes]) -> bytes:
    return go_profiles["goroutine"]


@pytest.fixture(scope="module")
def window(body: bytes) -> Window:
    return Window.around(profile_time_ns(body))


def load(cluster: Cluster, fault: str, body: bytes, *services: Service, tenant: str = TENANT) -> PushLoad:
    return PushLoad([s.url for s in services or (cluster.ingester,)], tenant, fault, body, "goroutine")


def acked(o: Outcome) -> bool:
    return o.acked


def wait_for(check: Callable[[], object], timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------ the ledger


@dataclass(frozen=True)
class Kept:
    acked: int
    stored: int
    unanswered_but_stored: int


def assert_kept(dsn: str, outcomes: list[Outcome], fault: str, *, maybe_stored: Callable[[Outcome], bool],
                tenant: str = TENANT) -> Kept:
    """Every acknowledged push stored exactly once; anything else stored only if `maybe_stored` allows it."""
    stored = stored_per_seq(dsn, tenant, fault)
    acked = {o.seq for o in outcomes if o.acked}
    attempted = {o.seq: o for o in outcomes}
    assert {s: n for s, n in stored.items() if n != 1} == {}, "pushes stored more than once"
    assert sorted(acked - set(stored)) == [], "acknowledged pushes lost"
    extra = set(stored) - acked
    assert sorted(s for s in extra if s not in attempted or not maybe_stored(attempted[s])) == [], \
        "pushes stored although their answer said they were not"
    return Kept(len(acked), len(stored), len(extra))


def crash_ambiguous(o: Outcome) -> bool:
    """A push cut off by a crash: the client cannot know whether it was stored."""
    return not o.acked


def definite(o: Outcome) -> bool:
    """Every answer was definite: nothing but acknowledged pushes may be stored."""
    return False


def assert_readable(cluster: Cluster, querier: Service, fault: str, stored: int, window: Window, unit: int,
                    tenant: str = TENANT) -> None:
    """The querier merges exactly the stored profiles of the fault, reading every block."""
    r = cluster.http.get(f"{querier.url}/api/v1/query", headers={"X-Scope-OrgID": tenant},
                         params={"query": f'{GOROUTINE}{{fault="{fault}"}}', "format": "top", **window.rest()})
    assert r.status_code == 200, r.text
    assert (r.json()["profiles"], r.json()["top"]["total"]) == (stored, stored * unit)


def assert_blocks_have_objects(cluster: Cluster) -> None:
    assert {key for _, key, _ in cluster.blocks()} <= set(cluster.objects())


@pytest.fixture(scope="module")
def unit(cluster: Cluster, body: bytes, window: Window) -> int:
    """The total of one pushed profile, as the querier reads it back."""
    r = ingest(cluster, TENANT, {"__name__": "goroutine", "fault": "unit"}, body)
    assert r.status_code == 200, r.text
    answer = cluster.http.get(f"{cluster.querier_url}/api/v1/query", headers={"X-Scope-OrgID": TENANT},
                              params={"query": f'{GOROUTINE}{{fault="unit"}}', "format": "top", **window.rest()})
    return answer.json()["top"]["total"]


def check_after(cluster: Cluster, outcomes: list[Outcome], fault: str, window: Window, unit: int,
                maybe_stored: Callable[[Outcome], bool]) -> Kept:
    kept = assert_kept(cluster.storage.dsn, outcomes, fault, maybe_stored=maybe_stored)
    assert_readable(cluster, cluster.querier, fault, kept.stored, window, unit)
    assert_blocks_have_objects(cluster)
    print(f"\n{fault}: {len(outcomes)} pushes, {kept.acked} acknowledged, {kept.stored} stored "
          f"({kept.unanswered_but_stored} cut off without an answer but stored)")
    return kept


# ------------------------------------------------------------------------------------------ readiness


def not_ready(service: Service) -> str | None:
    """The reasons /readyz gives, or None while it answers ready."""
    r = httpx.get(f"{service.url}/readyz", timeout=10)
    return r.text if r.status_code == 503 else None


def assert_not_ready(services: list[Service], problem: str) -> None:
    """Each service turns not ready naming `problem`, while staying live."""
    for service in services:
        reasons = wait_for(lambda s=service: not_ready(s), READY_WITHIN_S, f"{service.name} to turn not ready")
        assert problem in reasons, reasons
        assert httpx.get(f"{service.url}/healthz", timeout=10).status_code == 200


def assert_ready_again(services: list[Service]) -> None:
    for service in services:
        wait_for(lambda s=service: not_ready(s) is None, READY_WITHIN_S, f"{service.name} to be ready again")


# ------------------------------------------------------------------------------------------ faults


def test_ingester_killed_with_sigkill_loses_no_acknowledged_push(cluster: Cluster, body, window, unit):
    with load(cluster, "ingester-kill", body) as pushes:
        pushes.wait(acked, SETTLE_ACKS, 30, "acknowledged pushes")
        cluster.kill(cluster.ingester)
        pushes.wait(lambda o: o.status is None, 3, 30, "pushes to find the ingester gone")
        cluster.ingester.start()
        pushes.wait(acked, SETTLE_ACKS, 30, "acknowledged pushes after the restart")
    check_after(cluster, pushes.outcomes(), "ingester-kill", window, unit, crash_ambiguous)


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_minio_stopped_or_crashed_fails_pushes_fast_and_loses_nothing(cluster: Cluster, e2e_storage, body, window,
                                                                      unit, how):
    minio, fault = e2e_storage.minio, f"minio-{how}"
    where = f"S3 endpoint {minio.endpoint} bucket {e2e_storage.bucket}"
    with load(cluster, fault, body) as pushes:
        pushes.wait(acked, SETTLE_ACKS, 30, "acknowledged pushes")
        getattr(minio, how)()
        try:
            pushes.wait(lambda o: o.status == 503, 5, 30, "pushes refused while MinIO is down")
            assert_not_ready([cluster.ingester, cluster.querier], f"object store: {where} unreachable")
        finally:
            minio.start()
        assert_ready_again([cluster.ingester, cluster.querier])
        pushes.wait(acked, SETTLE_ACKS, 30, "acknowledged pushes after MinIO is back")
    refused = [o for o in pushes.outcomes() if not o.acked]
    assert {o.status for o in refused} == {503}, {o.error for o in refused}
    assert all(o.error.startswith(where) for o in refused), {o.error for o in refused}
    check_after(cluster, pushes.outcomes(), fault, window, unit, definite)


def time_push(cluster: Cluster, body: bytes, fault: str) -> tuple[float, httpx.Response]:
    started = time.monotonic()
    r = ingest(cluster, TENANT, {"__name__": "goroutine", "fault": f"{fault}-timed"}, body)
    return time.monotonic() - started, r


@pytest.mark.parametrize("crash", [pytest.param(lambda pg: pg.stop("fast"), id="stopped"),
                                   pytest.param(PostgresProcess.kill, id="killed")])
def test_postgres_down_fails_pushes_fast_and_its_return_is_noticed_within_2_s(
        cluster: Cluster, stoppable_postgres: PostgresProcess, body, window, unit, crash, request):
    pg, fault = stoppable_postgres, f"postgres-{request.node.callspec.id}"
    with load(cluster, fault, body) as pushes:
        pushes.wait(acked, SETTLE_ACKS, 30, "acknowledged pushes")
        crash(pg)
        try:
            pushes.wait(lambda o: o.status == 503, 5, 30, "pushes refused while Postgres is down")
            during = [time_push(cluster, body, fault) for _ in range(5)]
            assert {r.status_code for _, r in during} == {503}, [r.text for _, r in during]
            unavailable = f"Postgres at 127.0.0.1:{pg.port}/"
            assert all(r.json()["error"].startswith(unavailable) for _, r in during), [r.text for _, r in during]
            slowest = max(seconds for seconds, _ in during)
            assert slowest < FAIL_FAST_S, f"a push while Postgres was down took {slowest:.1f} s to fail"
            assert_not_ready([cluster.ingester, cluster.querier], f"postgres: {unavailable}")
        finally:
            pg.start()
        # timed from the server accepting connections; nothing asks /readyz meanwhile, so what notices the
        # return is the ingester's own probe on the pushes' path
        back = time.monotonic()
        recovery = wait_for(lambda: (r := time_push(cluster, body, fault)[1]).status_code == 200 and r, 30,
                            "a push to succeed")
        recovered_s = time.monotonic() - back
        assert_ready_again([cluster.ingester, cluster.querier])
        pushes.wait(acked, SETTLE_ACKS, 30, "acknowledged pushes after Postgres is back")
    print(f"\n{fault}: pushes while Postgres was down failed in at most {slowest * 1e3:.0f} ms; the first "
          f"push after it was back succeeded {recovered_s * 1e3:.0f} ms later")
    assert recovery.json()["profiles"] == 1
    assert recovered_s < RECOVERY_S
    kept = check_after(cluster, pushes.outcomes(), fault, window, unit, crash_ambiguous)
    assert kept.stored >= 2 * SETTLE_ACKS


def test_two_ingesters_on_one_store_lose_and_duplicate_nothing(cluster: Cluster, body, window, unit):
    second = cluster.add_ingester("second")
    with load(cluster, "two-ingesters", body, cluster.ingester, second) as pushes:
        pushes.wait(lambda o: o.acked and o.url == second.url, SETTLE_ACKS, 30, "pushes acknowledged by the second")
        pushes.wait(lambda o: o.acked and o.url == cluster.ingester.url, SETTLE_ACKS, 30,
                    "pushes acknowledged by the first")
    kept = check_after(cluster, pushes.outcomes(), "two-ingesters", window, unit, definite)
    assert kept.stored == len(pushes.outcomes())  # nothing failed


def test_querier_killed_mid_merge_answers_the_same_after_restart(cluster: Cluster, body, window):
    params = {"query": GOROUTINE, "format": "top", "max_nodes": "100", **window.rest()}

    def query() -> dict:
        r = cluster.http.get(f"{cluster.querier_url}/api/v1/query", params=params,
                             headers={"X-Scope-OrgID": TENANT})
        assert r.status_code == 200, r.text
        return r.json()

    cluster.restart_querier()  # a cold cache: the merge fetches every block
    started = time.monotonic()
    expected = query()
    cold_s = time.monotonic() - started
    assert expected["profiles"] > 50

    cut = merge_cut_by_kill(cluster, params, cold_s)
    cluster.querier.start()
    assert query() == expected
    print(f"\nquerier killed {cut * 1e3:.0f} ms into a {cold_s * 1e3:.0f} ms cold merge of {expected['profiles']} "
          "profiles; the same answer after its restart")


def merge_cut_by_kill(cluster: Cluster, params: dict, cold_s: float) -> float:
    """Start a cold merge and SIGKILL the querier while it runs; returns when, into the merge, it died."""
    for fraction in (0.5, 0.25, 0.1, 0.05):
        if cluster.querier.process is None:
            cluster.querier.start()
        else:
            cluster.restart_querier()
        failures: list[BaseException] = []
        asker = threading.Thread(target=ask, args=(cluster.querier_url, params, failures))
        asker.start()
        time.sleep(cold_s * fraction)
        cluster.kill(cluster.querier)
        asker.join(30)
        if failures:  # the answer never came: the merge was cut off
            assert isinstance(failures[0], httpx.RemoteProtocolError | httpx.ReadError), repr(failures[0])
            return cold_s * fraction
    raise AssertionError(f"every merge finished before the querier was killed ({cold_s:.3f} s cold)")


def ask(querier_url: str, params: dict, failures: list[BaseException]) -> None:
    try:
        with httpx.Client(timeout=30) as client:
            client.get(f"{querier_url}/api/v1/query", params=params, headers={"X-Scope-OrgID": TENANT})
    except httpx.HTTPError as exc:
        failures.append(exc)


@dataclass
class StorelessService(Service):
    """A service that takes no storage flags (frontend, collector), started with `arguments`."""

    arguments: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        return [str(FLAMEWATCH), self.command, "--http-address", f"127.0.0.1:{self.http_port}", *self.arguments]


def test_frontend_readiness_follows_its_querier_and_the_collector_needs_no_ingester(
        cluster: Cluster, tmp_path: Path):
    config = tmp_path / "empty.yaml"
    config.write_text("scrape_configs: []\n")
    frontend = StorelessService("frontend", "frontend", cluster.storage, tmp_path / "frontend.log",
                                arguments=("--querier.url", cluster.querier_url, "--ui.dir", str(tmp_path)))
    collector = StorelessService("collector", "collector", cluster.storage, tmp_path / "collector.log")
    collector.arguments = ("--grpc-address", collector.grpc_address, "--config.file", str(config),
                           "--ingester.address", f"127.0.0.1:{free_port()}")
    try:
        frontend.start()
        collector.start()  # ready although no ingester listens at its address
        cluster.kill(cluster.querier)
        assert_not_ready([frontend], f"querier: {cluster.querier_url}/healthz unreachable")
        cluster.querier.start()
        assert_ready_again([frontend])
        assert not_ready(collector) is None
    finally:
        if cluster.querier.process is None:
            cluster.querier.start()
        codes = [frontend.stop(), collector.stop()]
    assert codes == [0, 0]


def test_a_block_object_lost_from_the_store_fails_queries_naming_it(cluster: Cluster, e2e_storage, body, window):
    tenant = "faults-lost"
    for seq in range(3):  # one push at a time: one block each
        r = ingest(cluster, tenant, {"__name__": "goroutine", "seq": str(seq)}, body)
        assert r.status_code == 200, r.text
    keys = [key for t, key, _ in cluster.blocks() if t == tenant]
    assert len(keys) == 3
    client = e2e_storage.minio.client()
    lost = client.get_object(e2e_storage.bucket, keys[1])
    data = lost.read()
    lost.close()
    client.remove_object(e2e_storage.bucket, keys[1])
    marks = cluster.log_marks()
    message = (f"the object store is missing 1 block this query needs, so it cannot be answered in full: {keys[1]}. "
               "The Postgres index still lists them: restore the objects, or delete their rows from the index to "
               "query without them")
    try:
        r = cluster.http.get(f"{cluster.querier_url}/api/v1/query", headers={"X-Scope-OrgID": tenant},
                             params={"query": GOROUTINE, **window.rest()})
        assert (r.status_code, r.json()) == (500, {"error": message})
        error = grpc_error(cluster.query.Query, query_pb2.QueryRequest(query=GOROUTINE, range=window.grpc()), tenant)
        assert (error.code(), error.details()) == (grpc.StatusCode.DATA_LOSS, message)
        assert "Traceback" not in cluster.logs_since(marks)
    finally:
        client.put_object(e2e_storage.bucket, keys[1], io.BytesIO(data), len(data))
    response = cluster.query.Query(query_pb2.QueryRequest(query=GOROUTINE, range=window.grpc()),
                                   metadata=metadata(tenant), timeout=30)
    assert response.profiles == 3


# ------------------------------------------------------------------------------------------ a full disk


@dataclass
class FilesystemService(Service):
    """A service on the filesystem object store under `data_dir` (the S3 flags left out)."""

    data_dir: Path = field(default_factory=Path)

    def storage_flags(self) -> list[str]:
        return ["--storage.postgres-dsn", self.storage.dsn, "--data-dir", str(self.data_dir)]


@pytest.fixture(scope="module")
def full_disk_cluster(stoppable_postgres: PostgresProcess, e2e_storage: Storage,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    """An ingester and a querier on their own database, with their objects on a 2 MiB tmpfs."""
    workdir = tmp_path_factory.mktemp("full-disk")
    with postgres.fresh_database(stoppable_postgres.dsn) as dsn, \
            tmpfs.mounted(workdir / "data" / "objects", "2m") as objects:
        storage = Storage(dsn, e2e_storage.minio, e2e_storage.bucket)
        disk = Cluster(storage, workdir)
        for name in ("ingester", "querier"):
            setattr(disk, name, FilesystemService(name, f"fs-{name}", storage, workdir / f"fs-{name}.log",
                                                  getattr(disk, name).flags, data_dir=workdir / "data"))
        try:
            disk.start()
            yield disk, objects
        finally:
            codes = disk.stop()
        assert set(codes.values()) <= {0}, codes


@pytest.mark.root
def test_a_full_disk_answers_503_logged_once_per_interval_and_loses_nothing(full_disk_cluster, body, window, unit):
    disk, objects = full_disk_cluster
    fault = "full-disk"
    with load(disk, fault, body) as pushes:
        pushes.wait(acked, SETTLE_ACKS, 30, "acknowledged pushes")
        marks = disk.log_marks()
        filler = tmpfs.fill(objects)
        pushes.wait(lambda o: o.status == 503, 30, 30, "pushes refused on the full disk")
        log = disk.logs_since(marks)
        filler.unlink()
        pushes.wait(acked, SETTLE_ACKS, 30, "acknowledged pushes once space is free")
    refused = [o for o in pushes.outcomes() if not o.acked]
    assert len(refused) >= 30 and {o.status for o in refused} == {503}, {o.error for o in refused}
    full = re.compile(rf"object directory {re.escape(str(objects))} is full: cannot write object "
                      rf"{TENANT}/blocks/0/\d{{4}}/\d\d/\d\d/\w{{26}}\.parquet: No space left on device")
    assert all(full.fullmatch(o.error) for o in refused), {o.error for o in refused}
    # once per 10 s interval: the failed flush (ingester) and the refused request (HTTP); not once per push
    lines = [line for line in log.splitlines() if "No space left on device" in line]
    assert 1 <= len(lines) <= 4, "\n".join(lines)
    assert "Traceback" not in log
    kept = assert_kept(disk.storage.dsn, pushes.outcomes(), fault, maybe_stored=definite)
    assert_readable(disk, disk.querier, fault, kept.stored, window, unit)
    print(f"\n{fault}: {len(pushes.outcomes())} pushes, {len(refused)} refused with 503, {kept.stored} stored, "
          f"{len(lines)} log lines about it")
