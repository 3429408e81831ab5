"""The container image's health check (the Dockerfile's HEALTHCHECK: `python3 -m flamewatch.healthcheck`):
GET /readyz on this container's own Flamewatch, exit status 0 when it answers 200.

It finds the service as the service found its settings: the port of `FLAMEWATCH_HTTP_ADDRESS` (8080 when
unset, the port of `all` and `frontend`), and the web configuration file of `FLAMEWATCH_WEB_CONFIG_FILE`.
When that file has `tls_server_config` the port speaks HTTPS, so the check does too, showing the client
certificate of the file's `client.tls_config` (a port that requires client certificates lets it in;
/readyz itself needs no credential). Like the kubelet's https probes it does not verify the server's
certificate: it calls its own container on 127.0.0.1, which a certificate issued for the service's
names (querier, ingester, ...) need not name.

It runs every few seconds in every container, so it imports only the standard library and the web
configuration's reader (about 70 ms of CPU, as much as urllib alone).
"""

from __future__ import annotations

import os
import ssl
import sys
import urllib.request
from collections.abc import Mapping

from flamewatch.auth.webconfig import WebConfig, load_web_config

TIMEOUT_S = 3.0


def readyz_url(environ: Mapping[str, str], config: WebConfig | None) -> str:
    port = environ.get("FLAMEWATCH_HTTP_ADDRESS", ":8080").rpartition(":")[2] or "8080"
    scheme = "https" if config is not None and config.tls is not None else "http"
    return f"{scheme}://127.0.0.1:{port}/readyz"


def tls_context(config: WebConfig) -> ssl.SSLContext:
    """Trusts the server it calls (itself) without checking; shows the client certificate, if any."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    tls = config.client.tls
    if tls is not None and tls.cert_file:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    return context


def check(environ: Mapping[str, str]) -> str | None:
    """None when the service is ready, else what went wrong (printed to the container's health log)."""
    path = environ.get("FLAMEWATCH_WEB_CONFIG_FILE")
    try:
        config = load_web_config(path) if path else None
        url = readyz_url(environ, config)
        context = tls_context(config) if url.startswith("https:") else None
        with urllib.request.urlopen(url, timeout=TIMEOUT_S, context=context) as answer:
            return None if answer.status == 200 else f"{url} answered {answer.status}"
    except Exception as exc:  # noqa: BLE001  (any failure is "unhealthy", said in one line)
        return f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    problem = check(os.environ)
    if problem:
        print(problem, file=sys.stderr)
    sys.exit(1 if problem else 0)
