"""The image's health check (`flamewatch.healthcheck`) against a server on loopback: plain http without a
web configuration, https with one that has tls_server_config, showing the client certificate of its
`client.tls_config` to a port that requires one, and unhealthy (with the reason) when not ready."""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from infra.certs import CertificateAuthority

from flamewatch.healthcheck import check, readyz_url


class _Readyz(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:  # noqa: N802  (http.server's name)
        self.send_response(self.status if self.path == "/readyz" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def serving(context: ssl.SSLContext | None = None, status: int = 200) -> Iterator[int]:
    handler = type("Handler", (_Readyz,), {"status": status})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def pki(tmp_path: Path) -> Path:
    ca = CertificateAuthority.create(tmp_path)
    ca.issue("server", names=["querier"])
    ca.issue("flamewatch", client=True)
    return tmp_path


def web_config(directory: Path, client_cert: bool) -> Path:
    client = "{ca_file: ca.crt, cert_file: flamewatch.crt, key_file: flamewatch.key}" if client_cert else \
        "{ca_file: ca.crt}"
    path = directory / "web.yml"
    path.write_text(f"tls_server_config: {{cert_file: server.crt, key_file: server.key}}\n"
                    f"client: {{tls_config: {client}}}\n")
    return path


def server_context(pki: Path, require_client_cert: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    if require_client_cert:
        context.load_verify_locations(pki / "ca.crt")
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def test_the_port_comes_from_the_http_address_and_the_scheme_from_the_web_configuration(pki: Path) -> None:
    from flamewatch.auth.webconfig import load_web_config

    assert readyz_url({}, None) == "http://127.0.0.1:8080/readyz"
    assert readyz_url({"FLAMEWATCH_HTTP_ADDRESS": "0.0.0.0:4200"}, None) == "http://127.0.0.1:4200/readyz"
    config = load_web_config(str(web_config(pki, client_cert=False)))
    assert readyz_url({"FLAMEWATCH_HTTP_ADDRESS": ":4100"}, config) == "https://127.0.0.1:4100/readyz"


def test_plain_http_without_a_web_configuration() -> None:
    with serving() as port:
        assert check({"FLAMEWATCH_HTTP_ADDRESS": f":{port}"}) is None


def test_https_without_checking_the_servers_certificate(pki: Path) -> None:
    """Its own process: the certificate may name only the service (querier), as a compose one does."""
    with serving(server_context(pki, require_client_cert=False)) as port:
        env = {"FLAMEWATCH_HTTP_ADDRESS": f":{port}",
               "FLAMEWATCH_WEB_CONFIG_FILE": str(web_config(pki, client_cert=False))}
        assert check(env) is None


def test_https_that_requires_a_client_certificate_gets_the_clients(pki: Path) -> None:
    with serving(server_context(pki, require_client_cert=True)) as port:
        env = {"FLAMEWATCH_HTTP_ADDRESS": f":{port}",
               "FLAMEWATCH_WEB_CONFIG_FILE": str(web_config(pki, client_cert=True))}
        assert check(env) is None
        web_config(pki, client_cert=False)
        assert check(env) is not None  # without one the server refuses the handshake


def test_not_ready_and_unreachable_are_unhealthy_with_the_reason(pki: Path) -> None:
    with serving(status=503) as port:
        assert "503" in check({"FLAMEWATCH_HTTP_ADDRESS": f":{port}"})
    assert "refused" in check({"FLAMEWATCH_HTTP_ADDRESS": f":{port}"}).lower()
    with serving() as port:  # plain http, but the web configuration says https
        env = {"FLAMEWATCH_HTTP_ADDRESS": f":{port}",
               "FLAMEWATCH_WEB_CONFIG_FILE": str(web_config(pki, client_cert=False))}
        assert check(env) is not None
