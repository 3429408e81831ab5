"""A MinIO server process for the tests.

The binary is built by `make test-deps` (`go install github.com/minio/minio@<pinned>`) into `.cache/bin`.
`stop()` (or `kill()`, a crash) and `start()` can be called repeatedly: the server comes back on the same
port with the same data directory, so tests can take the object store away in the middle of a write and restore it.
"""

import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import urllib3
from minio import Minio
from minio.deleteobjects import DeleteObject

from . import CACHE_DIR
from .ports import free_port
from .waiting import terminate

MINIO_BINARY = CACHE_DIR / "bin" / "minio"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0


class MinioServer:
    """One MinIO server on 127.0.0.1 with its data and log under `workdir`."""

    def __init__(
        self,
        workdir: Path,
        *,
        binary: Path = MINIO_BINARY,
        access_key: str = "flamewatch",
        secret_key: str = "flamewatch-secret",
    ) -> None:
        if not binary.is_file():
            raise FileNotFoundError(f"MinIO binary not found at {binary}: run `make test-deps` to build it")
        self.binary = binary
        self.data_dir = workdir / "data"
        self.log_path = workdir / "minio.log"
        self.endpoint = f"127.0.0.1:{free_port()}"
        self.console_endpoint = f"127.0.0.1:{free_port()}"
        self.access_key = access_key
        self.secret_key = secret_key
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (for reading its CPU time from /proc)."""
        return self._process.pid if self.running and self._process is not None else None

    def start(self) -> None:
        """Start the server (again) and return once it answers its liveness check."""
        if self.running:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [str(self.binary), "server", str(self.data_dir),
                 "--address", self.endpoint, "--console-address", self.console_endpoint],
                env=self._environment(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )
        self._wait_until_live()

    def stop(self) -> None:
        """Terminate the server and wait for it to exit (kill it if it does not)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        terminate(process, STOP_TIMEOUT_S)

    def kill(self) -> None:
        """SIGKILL the server, as a crash would; `start()` brings it back on the same data."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def client(self, *, retries: bool = True) -> Minio:
        """A client for this server; `retries=False` makes calls fail at once while it is down."""
        http = None if retries else urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(5, 30))
        return Minio(self.endpoint, access_key=self.access_key, secret_key=self.secret_key,
                     secure=False, http_client=http)

    def requests(self, api: str = "GetObject") -> int:
        """How many requests of an S3 API (`GetObject`, `PutObject`, ...) the server has answered since it
        started, as its own metrics count them (`minio_api_requests_total`)."""
        url = f"http://{self.endpoint}/minio/metrics/v3/api/requests"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        prefix = f'minio_api_requests_total{{name="{api}",'
        return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines() if line.startswith(prefix))

    def create_bucket(self, name: str) -> None:
        self.client().make_bucket(name)

    def remove_bucket(self, name: str) -> None:
        """Delete every object in the bucket, then the bucket."""
        client = self.client()
        objects = client.list_objects(name, recursive=True)
        errors = list(client.remove_objects(name, (DeleteObject(obj.object_name) for obj in objects)))
        if errors:
            raise RuntimeError(f"could not empty bucket {name}: {errors[:3]}")
        client.remove_bucket(name)

    def _environment(self) -> dict[str, str]:
        return {
            **os.environ,
            "MINIO_ROOT_USER": self.access_key,
            "MINIO_ROOT_PASSWORD": self.secret_key,
            "MINIO_UPDATE": "off",
            "MINIO_PROMETHEUS_AUTH_TYPE": "public",  # its metrics readable without a token (`requests`)
        }

    def _wait_until_live(self) -> None:
        url = f"http://{self.endpoint}/minio/health/live"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise RuntimeError(f"MinIO exited with {self._process.returncode}:\n{self._log_tail()}")
            if _answers_ok(url):
                return
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"MinIO not live at {url} after {START_TIMEOUT_S}s:\n{self._log_tail()}")

    def _log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> "MinioServer":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _answers_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False
