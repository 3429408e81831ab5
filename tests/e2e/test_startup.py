"""Starting Flamewatch the wrong way: taken ports, bad flags, bad data directories, user mistakes.

Every mistake a user can fix ends the process with one line naming the problem (and the flag to change)
and a non-zero exit, never a traceback, and leaves nothing running: the embedded Postgres is only started
once the ports are bound, and stopped again when anything after it fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import grpc
import httpx
import pytest
from e2e.cluster import FLAMEWATCH
from infra.ports import free_port

from flamewatch.api.flamewatch.v1 import ingest_pb2, ingest_pb2_grpc, types_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.go]

READY_S = 60


def flamewatch(*argv: str, cwd: Path, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FLAMEWATCH_")}
    return subprocess.run([str(FLAMEWATCH), *argv], cwd=cwd, env={**environ, **(env or {})}, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def start_all(workdir: Path, http_port: int, grpc_port: int) -> subprocess.Popen:
    workdir.mkdir(parents=True, exist_ok=True)
    with (workdir / "all.log").open("ab") as log:
        process = subprocess.Popen([str(FLAMEWATCH), "all", "--http-address", f"127.0.0.1:{http_port}",
                                    "--grpc-address", f"127.0.0.1:{grpc_port}"],
                                   cwd=workdir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        assert process.poll() is None, (workdir / "all.log").read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{http_port}/readyz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.kill()
    raise AssertionError(f"flamewatch all not ready:\n{(workdir / 'all.log').read_text()}")


def stop(process: subprocess.Popen) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(60)


def postgres_running(data_dir: Path, settle_s: float = 10.0) -> bool:
    """Whether a Postgres server still runs on `data_dir/postgres` (its postmaster.pid names a live process)
    once `settle_s` have passed: a server being stopped may take a moment to go."""
    deadline = time.monotonic() + settle_s
    while _postgres_alive(data_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _postgres_alive(data_dir)


def _postgres_alive(data_dir: Path) -> bool:
    pid_file = data_dir / "postgres" / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().split()[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def one_line_error(result: subprocess.CompletedProcess, command: str) -> str:
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"flamewatch {command}: ")]
    assert len(lines) == 1, result.stderr
    return lines[0].removeprefix(f"flamewatch {command}: ")


def push_cpu_profile(grpc_port: int, raw: bytes) -> int:
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        series = ingest_pb2.RawProfileSeries(labels=[types_pb2.LabelPair(name="service_name", value="pushed")],
                                             samples=[ingest_pb2.RawSample(raw_profile=raw)])
        return ingest_pb2_grpc.IngestServiceStub(channel).Push(ingest_pb2.PushRequest(series=[series]),
                                                               timeout=30).profiles


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory):
    """One `flamewatch all` whose ports the tests try to take again."""
    workdir = tmp_path_factory.mktemp("first")
    http_port, grpc_port = free_port(), free_port()
    process = start_all(workdir, http_port, grpc_port)
    yield workdir, http_port, grpc_port
    assert stop(process) == 0, (workdir / "all.log").read_text()


@pytest.mark.parametrize(("kind", "flag"), [("gRPC", "--grpc-address"), ("HTTP", "--http-address")])
def test_a_taken_port_is_refused_before_storage_starts(running, tmp_path: Path, kind: str, flag: str):
    """gRPC's SO_REUSEPORT would let both bind and split the pushes between two stores."""
    _, http_port, grpc_port = running
    taken = {"--http-address": http_port, "--grpc-address": grpc_port}
    ports = {f: (port if f == flag else free_port()) for f, port in taken.items()}
    result = flamewatch("all", *(a for f, port in ports.items() for a in (f, f"127.0.0.1:{port}")), cwd=tmp_path)
    assert one_line_error(result, "all") == (
        f"cannot listen on 127.0.0.1:{taken[flag]} ({kind}): the address is already in use (is another "
        f"Flamewatch running?); stop the other process or choose another port with {flag}")
    assert not postgres_running(tmp_path / "data")
    assert not (tmp_path / "data").exists(), "storage was opened before the ports were bound"


def test_every_push_to_the_grpc_port_reaches_the_one_instance(running, tmp_path: Path, go_profiles: dict[str, bytes]):
    first_dir, first_http, grpc_port = running
    flamewatch("all", "--http-address", f"127.0.0.1:{free_port()}", "--grpc-address", f"127.0.0.1:{grpc_port}",
               cwd=tmp_path)
    for _ in range(10):  # with a shared port, some of these would land in the other process
        assert push_cpu_profile(grpc_port, go_profiles["cpu"]) == 2
    series = httpx.get(f"http://127.0.0.1:{first_http}/api/v1/series",
                       params={"match[]": '{service_name="pushed"}', "from": "now-1d"}, timeout=30).json()
    assert len(series["data"]) == 2


@pytest.mark.parametrize(("command", "flag"), [("all", "--http-address"), ("querier", "--grpc-address"),
                                               ("ingester", "--http-address"), ("frontend", "--http-address")])
def test_a_port_out_of_range_names_the_flag(tmp_path: Path, command: str, flag: str):
    result = flamewatch(command, flag, "127.0.0.1:99999", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (f'flamewatch {command}: error: argument {flag}: invalid address '
                                              '"127.0.0.1:99999": the port must be between 0 and 65535')


@pytest.mark.parametrize("make_bad", ["file", "under-a-file", "proc"])
def test_a_bad_data_dir_is_one_line_and_leaves_nothing_running(tmp_path: Path, make_bad: str):
    bad = {"file": tmp_path / "a-file", "under-a-file": tmp_path / "a-file" / "data",
           "proc": Path("/proc/flamewatch-data")}[make_bad]
    (tmp_path / "a-file").write_text("not a directory")
    result = flamewatch("all", "--data-dir", str(bad), "--http-address", f"127.0.0.1:{free_port()}",
                        "--grpc-address", f"127.0.0.1:{free_port()}", cwd=tmp_path)
    message = one_line_error(result, "all")
    assert str(bad) in message, message
    assert not postgres_running(tmp_path)


def test_a_failure_after_postgres_started_stops_it(tmp_path: Path):
    """The object store fails after the embedded Postgres is up (a bucket on an S3 endpoint that is not
    there): the process exits with the reason and its Postgres is stopped."""
    result = flamewatch("ingester", "--data-dir", str(tmp_path / "data"), "--http-address",
                        f"127.0.0.1:{free_port()}", "--grpc-address", f"127.0.0.1:{free_port()}",
                        "--storage.s3.bucket", "b", "--storage.s3.endpoint", f"127.0.0.1:{free_port()}",
                        "--storage.s3.access-key", "k", "--storage.s3.secret-key", "s", cwd=tmp_path)
    message = one_line_error(result, "ingester")
    assert "127.0.0.1" in message, message
    assert (tmp_path / "data" / "postgres").is_dir(), "the test meant Postgres to start first"
    assert not postgres_running(tmp_path / "data")


@pytest.mark.parametrize(("label", "message"), [
    ("service name=x", 'invalid label argument "service name=x": label name must match [a-zA-Z_][a-zA-Z0-9_]*'),
    ("novalue", 'invalid label argument "novalue": expected name=value'),
])
def test_upload_label_mistakes_are_one_line(tmp_path: Path, label: str, message: str):
    profile = tmp_path / "cpu.pb.gz"
    profile.write_bytes(b"unused")
    result = flamewatch("upload", str(profile), "--label", label, "--url", f"http://127.0.0.1:{free_port()}",
                        cwd=tmp_path)
    assert one_line_error(result, "upload") == message


def test_upload_takes_the_url_with_or_without_ingest_and_explains_a_404(running, tmp_path: Path,
                                                                       go_profiles: dict[str, bytes]):
    _, http_port, _ = running
    profile = tmp_path / "cpu.pb.gz"
    profile.write_bytes(go_profiles["cpu"])
    for url in (f"http://127.0.0.1:{http_port}/ingest", f"http://127.0.0.1:{http_port}/"):
        result = flamewatch("upload", str(profile), "--url", url, cwd=tmp_path)
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
    wrong = f"http://127.0.0.1:{http_port}/api/v1"
    assert one_line_error(flamewatch("upload", str(profile), "--url", wrong, cwd=tmp_path), "upload") == (
        f"{profile}: {wrong} has no /ingest endpoint (404): --url should be the base URL of an ingester or of "
        "flamewatch all, e.g. http://127.0.0.1:4100")


def test_help_never_prints_secrets(tmp_path: Path):
    secrets = {"FLAMEWATCH_STORAGE_S3_SECRET_KEY": "s3-secret-value",
               "FLAMEWATCH_STORAGE_POSTGRES_DSN": "postgresql://u:pg-password@db:5432/x"}
    for command in ("all", "ingester", "querier"):
        result = flamewatch(command, "--help", cwd=tmp_path, env=secrets)
        assert result.returncode == 0, result.stderr
        assert "s3-secret-value" not in result.stdout and "pg-password" not in result.stdout, result.stdout
        assert "set by FLAMEWATCH_STORAGE_S3_SECRET_KEY, not shown" in " ".join(result.stdout.split())


def test_port_zero_picks_free_ports_and_the_built_in_configuration_scrapes_them(tmp_path: Path):
    """The built-in self-scrape is written for the ports actually bound, never for ":0"."""
    log = tmp_path / "all.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(FLAMEWATCH), "all", "--http-address", "127.0.0.1:0", "--grpc-address",
                                    "127.0.0.1:0"], cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + READY_S
        while "Flamewatch is ready: open http://localhost:" not in log.read_text():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        port = int(log.read_text().split("Flamewatch is ready: open http://localhost:")[1].split()[0])
        instances: set[str] = set()
        while not instances and time.monotonic() < deadline:  # discovery runs just after the start
            targets = httpx.get(f"http://127.0.0.1:{port}/api/v1/targets", timeout=10).json()["data"]
            instances = {t["labels"]["instance"] for t in targets["activeTargets"]}
            time.sleep(0.1)
        assert instances == {f"127.0.0.1:{port}"}
    finally:
        assert stop(process) == 0, log.read_text()
