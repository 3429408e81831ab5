"""A real Prometheus Alertmanager for the tests, and the webhook receiver it notifies.

The binary is built by `make` (`ALERTMANAGER_VERSION`, from its Go module) into `.cache/bin/alertmanager`.
`AlertmanagerServer` runs it on a free port with clustering off, its data and log under `workdir`, and a
configuration with one route to one webhook receiver (short group_wait and group_interval, so a test sees
a notification within a second or two). `stop()` and `start()` can be called repeatedly: it comes back on
the same port, so a test can take it away while Flamewatch sends.
"""

from __future__ import annotations

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import bcrypt
import httpx

from . import CACHE_DIR
from .ports import free_port
from .waiting import terminate, wait_for

ALERTMANAGER = CACHE_DIR / "bin" / "alertmanager"
START_TIMEOUT_S = 30.0


def binary() -> Path:
    if not ALERTMANAGER.exists():
        raise FileNotFoundError(f"{ALERTMANAGER} is missing: `make test` (or `make .cache/bin/alertmanager`) builds it")
    return ALERTMANAGER


class WebhookReceiver:
    """An HTTP server on a free port that keeps every notification Alertmanager posts to it (`/hook`)."""

    def __init__(self) -> None:
        self.notifications: list[dict] = []
        received = self.notifications

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def alerts(self) -> list[dict]:
        """Every alert of every notification so far."""
        return [a for n in list(self.notifications) for a in n["alerts"]]

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def config(webhook_url: str, group_wait: str = "200ms") -> str:
    """One route, grouped by incident so each incident is its own notification, to one webhook."""
    return json.dumps({
        "route": {"receiver": "test", "group_by": ["alertname", "incident"], "group_wait": group_wait,
                  "group_interval": "1s", "repeat_interval": "1h",
                  "routes": [{"receiver": "test", "matchers": ['alertname=~"Flamewatch.*"']}]},
        "receivers": [{"name": "test", "webhook_configs": [{"url": webhook_url, "send_resolved": False}]}],
    }, indent=2)  # JSON is YAML


class AlertmanagerServer:
    """One Alertmanager on 127.0.0.1 that notifies `receiver`."""

    def __init__(self, workdir: Path, receiver: WebhookReceiver, config_text: str | None = None,
                 basic_auth: tuple[str, str] | None = None) -> None:
        """`config_text`: a configuration of the test's own instead of the route to `receiver`;
        `basic_auth`: (user, password) it asks of every request (its `--web.config.file`)."""
        self.binary = binary()
        self.receiver = receiver
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "alertmanager.log"
        self.config_path = workdir / "alertmanager.yml"
        self.config_path.write_text(config_text or config(receiver.url))
        self._process: subprocess.Popen | None = None
        self.auth = basic_auth
        self._web_config = workdir / "web.yml" if basic_auth else None
        if basic_auth and self._web_config:
            user, password = basic_auth
            hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
            self._web_config.write_text(json.dumps({"basic_auth_users": {user: hashed}}))

    def start(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        (self.workdir / "data").mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [str(self.binary), f"--config.file={self.config_path}", f"--storage.path={self.workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address=", "--log.level=debug",
                 *([f"--web.config.file={self._web_config}"] if self._web_config else [])],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        wait_for(self._ready, START_TIMEOUT_S, "Alertmanager to be ready", self.log_path, self._process,
                 interval_s=0.1)

    def _ready(self) -> bool:
        return httpx.get(f"{self.url}/-/ready", auth=self.auth, timeout=1).status_code == 200

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            terminate(process, 15)

    def alerts(self, **filters: str) -> list[dict]:
        """`GET /api/v2/alerts` (filters such as `filter='alertname="X"'`)."""
        response = httpx.get(f"{self.url}/api/v2/alerts", params=filters, auth=self.auth, timeout=10)
        response.raise_for_status()
        return response.json()

    def __enter__(self) -> AlertmanagerServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
