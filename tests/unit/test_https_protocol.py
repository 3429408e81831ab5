"""The HTTP protocol Flamewatch gives uvicorn (`rpc.https`), with a real uvicorn on loopback: a client
on the wrong protocol is told so (and the server says so in its log), a failed handshake is logged with
its reason, a verified client certificate names the caller in the request's scope, and a stopping
server does not wait for an idle client."""

import asyncio
import contextlib
import logging
import socket
import ssl
import time
from pathlib import Path

import httpx
import pytest
import uvicorn
from infra.certs import CertificateAuthority

from flamewatch.auth.webconfig import TLSServerConfig
from flamewatch.rpc.auth import CERTIFICATE_NAME
from flamewatch.rpc.https import http_protocol
from flamewatch.rpc.tls import ServerCertificates


async def whoami(scope, receive, send) -> None:
    body = f"{scope['scheme']} {scope.get(CERTIFICATE_NAME, '-')}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def serving(tls: ServerCertificates | None):
    """A uvicorn on a free loopback port with Flamewatch's protocol: yields the port."""
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(whoami, log_level="warning", lifespan="off", http=http_protocol(tls)))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


@pytest.fixture
def pki(tmp_path: Path) -> tuple[CertificateAuthority, ServerCertificates]:
    ca = CertificateAuthority.create(tmp_path)
    server = ca.issue("server")
    ca.issue("collector", client=True)
    config = TLSServerConfig(str(server.cert), str(server.key), str(ca.cert), "VerifyClientCertIfGiven")
    return ca, ServerCertificates(config, "web.yml")


def client(ca: CertificateAuthority, caller: str | None = None, issuer: CertificateAuthority | None = None
           ) -> httpx.AsyncClient:
    """A client trusting `ca` and showing the certificate `caller` of `issuer` (default: `ca`)."""
    verify = ssl.create_default_context(cafile=str(ca.cert))
    if caller:
        where = (issuer or ca).directory
        verify.load_cert_chain(where / f"{caller}.crt", where / f"{caller}.key")
    return httpx.AsyncClient(verify=verify, timeout=10)


def test_https_names_a_verified_client_certificate(pki):
    ca, tls = pki

    async def run() -> None:
        async with serving(tls) as port, client(ca, "collector") as named, client(ca) as anonymous:
            assert (await named.get(f"https://127.0.0.1:{port}/")).text == "https collector"
            assert (await anonymous.get(f"https://127.0.0.1:{port}/")).text == "https -"

    asyncio.run(run())


def test_plain_http_on_an_https_port_is_told_to_use_https(pki, caplog):
    _, tls = pki

    async def run() -> None:
        async with serving(tls) as port, httpx.AsyncClient() as plain:
            answer = await plain.get(f"http://127.0.0.1:{port}/readyz")
            assert answer.status_code == 400
            assert answer.text.startswith("This port speaks HTTPS: use https://")

    asyncio.run(run())
    assert any("sent plain HTTP to this HTTPS port: it was told to use https://" in r.getMessage()
               for r in caplog.records)


def test_tls_on_a_plain_port_is_closed_and_logged(pki, caplog):
    ca, _ = pki

    async def run() -> None:
        async with serving(None) as port, client(ca) as secure:
            with pytest.raises(httpx.ConnectError):
                await secure.get(f"https://127.0.0.1:{port}/")
            async with httpx.AsyncClient() as plain:
                assert (await plain.get(f"http://127.0.0.1:{port}/")).text == "http -"

    asyncio.run(run())
    assert any("started a TLS handshake on this plain HTTP port: it should use http://" in r.getMessage()
               for r in caplog.records)


def test_a_refused_client_certificate_is_logged_with_the_reason(pki, tmp_path, caplog):
    ca, tls = pki
    stranger = CertificateAuthority.create(tmp_path / "other", "other-ca")
    stranger.issue("collector", client=True)

    async def run() -> None:
        async with serving(tls) as port, client(ca, "collector", issuer=stranger) as foreign:
            with pytest.raises((httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError)):
                await foreign.get(f"https://127.0.0.1:{port}/")

    caplog.set_level(logging.WARNING, "flamewatch.rpc.https")
    asyncio.run(run())
    assert any("TLS handshake with 127.0.0.1:" in r.getMessage() and "CERTIFICATE_VERIFY_FAILED" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_a_stopping_server_does_not_wait_for_an_idle_client(pki):
    ca, tls = pki

    async def run() -> float:
        async with client(ca) as idle:
            async with serving(tls) as port:
                assert (await idle.get(f"https://127.0.0.1:{port}/")).status_code == 200
                started = time.monotonic()
            return time.monotonic() - started

    assert asyncio.run(run()) < 5


def test_a_client_that_waits_before_its_first_bytes_is_still_told_or_served(pki):
    """The first byte is looked at at once when it is there (most clients send it with the connection)
    and waited for otherwise: a client that connects and pauses is answered as one that does not."""
    ca, tls = pki

    async def run() -> None:
        async with serving(tls) as port, client(ca) as secure:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            await asyncio.sleep(0.3)  # the server has looked, found nothing and waits
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            assert answer.startswith(b"HTTP/1.0 400 Bad Request") and b"This port speaks HTTPS" in answer
            raw_reader, raw_writer = await asyncio.open_connection("127.0.0.1", port)
            await asyncio.sleep(0.3)
            context = ssl.create_default_context(cafile=str(ca.cert))
            await raw_writer.start_tls(context, server_hostname="127.0.0.1")
            raw_writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert (await asyncio.wait_for(raw_reader.read(), 10)).endswith(b"https -")
            raw_writer.close()
            assert (await secure.get(f"https://127.0.0.1:{port}/")).text == "https -"

    asyncio.run(run())
