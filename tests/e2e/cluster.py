"""Flamewatch services as separate processes for the e2e tests, and a look into their storage.

A `Service` is one `flamewatch ingester|querier` process on free ports that keeps its ports across
restarts and logs to a file. A `Cluster` is an ingester and a querier (plus any extra ingesters) on one
Postgres database and one MinIO bucket, with an HTTP client, gRPC stubs and helpers that count index
rows and list the bucket.
"""

from __future__ import annotations

import contextlib
import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
import psycopg
from infra.minio import MinioServer
from infra.ports import free_port
from infra.waiting import answers, wait_for

from flamewatch.api.flamewatch.v1 import ingest_pb2_grpc, query_pb2_grpc

FLAMEWATCH = Path(sys.executable).with_name("flamewatch")
FLUSH_INTERVAL_S = 0.2
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
HTTP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Storage:
    dsn: str
    minio: MinioServer
    bucket: str


@dataclass
class Service:
    """One `flamewatch <command>` process; keeps its ports across restarts."""

    command: str
    name: str
    storage: Storage
    log_path: Path
    flags: tuple[str, ...] = ()
    http_port: int = field(default_factory=free_port)
    grpc_port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    tls: ssl.SSLContext | None = None  # how the test reaches a service that serves HTTPS (its CA, a client cert)
    grpc: bool = True  # False: the frontend, with an HTTP port only
    storage_flagged: bool = True  # False: the collector and the frontend, which open no storage

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.http_port}"

    @property
    def grpc_address(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def argv(self) -> list[str]:
        grpc = ["--grpc-address", self.grpc_address] if self.grpc else []
        return [str(FLAMEWATCH), self.command, "--http-address", f"127.0.0.1:{self.http_port}", *grpc,
                *self.storage_flags(), *self.flags]

    def storage_flags(self) -> list[str]:
        if not self.storage_flagged:
            return []
        s = self.storage
        return ["--storage.postgres-dsn", s.dsn, "--storage.s3.bucket", s.bucket,
                "--storage.s3.endpoint", s.minio.endpoint, "--storage.s3.access-key", s.minio.access_key,
                "--storage.s3.secret-key", s.minio.secret_key, "--storage.s3.insecure"]

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FLAMEWATCH_")}
        with self.log_path.open("ab") as log:
            log.write(f"---- starting {self.name} ----\n".encode())
            log.flush()
            self.process = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, env=env)
        self._wait_ready()

    def stop(self) -> int | None:
        """SIGTERM and wait; returns the exit code (None if it was not running)."""
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                return -signal.SIGKILL
        return process.returncode

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would: no flush, no clean shutdown."""
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.wait()

    def restart(self) -> None:
        code = self.stop()
        assert code == 0, f"{self.name} exited with {code} on SIGTERM:\n{self.log_text()}"
        self.start()

    def log_text(self, offset: int = 0) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except OSError:
            return "(no log)"

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode} before it was ready:\n"
                                   f"{self.log_text()}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1, verify=self.tls or True).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"{self.name} not ready at {self.url}/readyz after {READY_TIMEOUT_S}s:\n{self.log_text()}")


@contextlib.contextmanager
def running_services(*services: Service) -> Iterator[None]:
    """The services started in order; at the end every one stopped, each of them bound to exit 0 on
    SIGTERM (checked only when the body succeeded, so its own failure stays the one reported)."""
    try:
        for service in services:
            service.start()
        yield
    finally:
        codes = {service.name: service.stop() for service in services}
    unclean = {name: code for name, code in codes.items() if code not in (0, None)}
    assert not unclean, f"services did not exit cleanly on SIGTERM: {unclean}\n" + "\n".join(
        f"==== {service.name} ====\n{service.log_text()}" for service in services if service.name in unclean)


class Cluster:
    """An ingester and a querier (and any extra ingesters) on one Postgres database and one bucket."""

    def __init__(self, storage: Storage, workdir: Path, ingester_flags: tuple[str, ...] = (),
                 flags: tuple[str, ...] = (), headers: dict[str, str] | None = None) -> None:
        """`flags` go to every service (e.g. `--web.config.file`); `headers` go with every request of the
        HTTP client (e.g. an admin's Authorization) unless the request gives its own."""
        self.storage = storage
        self.workdir = workdir
        # No compaction unless a test asks for it: the tests count the blocks they wrote.
        self.ingester = Service("ingester", "ingester", storage, workdir / "ingester.log",
                                ("--flush-interval", str(FLUSH_INTERVAL_S), "--compaction.interval", "0",
                                 *flags, *ingester_flags))
        self.querier = Service("querier", "querier", storage, workdir / "querier.log", flags)
        self.extra: dict[str, Service] = {}
        self._channels: dict[str, grpc.Channel] = {}
        self._headers = headers
        self.http = _http_client(headers)

    # ---------------------------------------------------------------------------- processes

    def start(self) -> None:
        self.ingester.start()
        self.querier.start()

    def stop(self) -> dict[str, int | None]:
        self._close_channels()
        self.http.close()
        return {s.name: s.stop() for s in self.services()}

    def restart_ingester(self) -> None:
        self._close_connections(self.ingester)
        self.ingester.restart()

    def restart_querier(self) -> None:
        self._close_connections(self.querier)
        self.querier.restart()

    def kill(self, service: Service) -> None:
        """SIGKILL one of the services (`Service.kill`); `service.start()` brings it back."""
        self._close_connections(service)
        service.kill()

    def _close_connections(self, service: Service) -> None:
        """Drop pooled connections to a service about to restart, so no request meets a dead socket."""
        self._close_channel(service.grpc_address)
        self.http.close()
        self.http = _http_client(self._headers)

    def add_ingester(self, name: str, *flags: str) -> Service:
        """Start another ingester on the same storage with its own flags; stopped with the cluster."""
        service = Service("ingester", name, self.storage, self.workdir / f"{name}.log",
                          ("--flush-interval", str(FLUSH_INTERVAL_S), *flags))
        service.start()
        self.extra[name] = service
        return service

    def services(self) -> list[Service]:
        return [self.ingester, self.querier, *self.extra.values()]

    # ---------------------------------------------------------------------------- addresses

    @property
    def ingester_url(self) -> str:
        return self.ingester.url

    @property
    def querier_url(self) -> str:
        return self.querier.url

    @property
    def ingester_grpc(self) -> str:
        return self.ingester.grpc_address

    @property
    def querier_grpc(self) -> str:
        return self.querier.grpc_address

    def ingest_stub(self, service: Service | None = None) -> ingest_pb2_grpc.IngestServiceStub:
        return ingest_pb2_grpc.IngestServiceStub(self._channel((service or self.ingester).grpc_address))

    @property
    def ingest(self) -> ingest_pb2_grpc.IngestServiceStub:
        return self.ingest_stub()

    @property
    def query(self) -> query_pb2_grpc.QueryServiceStub:
        return query_pb2_grpc.QueryServiceStub(self._channel(self.querier_grpc))

    def _channel(self, address: str) -> grpc.Channel:
        if address not in self._channels:
            self._channels[address] = grpc.insecure_channel(address)
        return self._channels[address]

    def _close_channel(self, address: str) -> None:
        channel = self._channels.pop(address, None)
        if channel is not None:
            channel.close()

    def _close_channels(self) -> None:
        for address in list(self._channels):
            self._close_channel(address)

    # ---------------------------------------------------------------------------- storage

    def counts(self, tenant: str | None = None) -> dict[str, int]:
        """Indexed profiles and rows in series and blocks (of one tenant, or all)."""
        where, args = ("WHERE tenant = %s", [tenant]) if tenant else ("", [])
        queries = {
            "profiles": "SELECT coalesce(sum(bs.profiles), 0) FROM index_series bs JOIN blocks b ON b.id = bs.block_id",
            "series": "SELECT count(*) FROM series",
            "blocks": "SELECT count(*) FROM blocks",
        }
        with psycopg.connect(self.storage.dsn, autocommit=True) as conn:
            return {name: int(conn.execute(f"{sql} {where}", args).fetchone()[0]) for name, sql in queries.items()}

    def live_block_levels(self, tenant: str) -> list[int]:
        """The level of each block of the tenant that queries read (0 flushed, 1 hour, 2 day)."""
        with psycopg.connect(self.storage.dsn, autocommit=True) as conn:
            return [level for (level,) in conn.execute(
                "SELECT level FROM blocks WHERE tenant = %s AND state = 'live' ORDER BY level", (tenant,))]

    def blocks(self) -> list[tuple[str, str, int]]:
        """(tenant, key, profiles) of every row in blocks, by key."""
        with psycopg.connect(self.storage.dsn, autocommit=True) as conn:
            return conn.execute("SELECT tenant, key, profiles FROM blocks ORDER BY key").fetchall()

    def objects(self, prefix: str = "") -> list[str]:
        """Keys of every object in the bucket under `prefix`, sorted."""
        client = self.storage.minio.client()
        return sorted(o.object_name for o in client.list_objects(self.storage.bucket, prefix=prefix, recursive=True))

    # ---------------------------------------------------------------------------- logs

    def log_marks(self) -> dict[str, int]:
        return {s.name: s.log_size() for s in self.services()}

    def logs_since(self, marks: dict[str, int]) -> str:
        parts = [f"==== {s.name} ({' '.join(s.argv()[1:2])}) ====\n{s.log_text(marks.get(s.name, 0))}"
                 for s in self.services()]
        return "\n".join(parts)


@contextlib.contextmanager
def running(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster started; on leaving, stopped, failing when a service did not exit cleanly on SIGTERM."""
    try:
        cluster.start()
        yield cluster
    finally:
        codes = cluster.stop()
    unclean = {name: code for name, code in codes.items() if code not in (0, None)}
    assert not unclean, f"services did not exit cleanly on SIGTERM: {unclean}\n{cluster.logs_since({})}"


@contextlib.contextmanager
def running_frontend(querier_url: str, workdir: Path, *flags: str) -> Iterator[str]:
    """`flamewatch frontend` in front of a querier on a free port (no UI build); its URL while it runs,
    and on leaving it must exit 0 on SIGTERM."""
    url = f"http://127.0.0.1:{free_port()}"
    log = workdir / "frontend.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(FLAMEWATCH), "frontend", "--http-address", url.removeprefix("http://"),
                                    "--querier.url", querier_url, "--ui.dir", str(workdir / "no-ui"), *flags],
                                   stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: answers(f"{url}/readyz"), 30, "the frontend to be ready", log)
        yield url
    finally:
        process.terminate()
        assert process.wait(30) == 0, log.read_text()


def _http_client(headers: dict[str, str] | None = None) -> httpx.Client:
    """One client for all requests, with keep-alive (a new connection per request costs ~10 ms); error
    answers keep the connection open (test_error_answers_keep_the_connection_open)."""
    return httpx.Client(timeout=HTTP_TIMEOUT_S, headers=headers)

