"""Server TLS (`rpc.tls`): certificate files that cannot be used stop the start with a message naming the
file; HTTPS and gRPC handshakes on loopback get the certificate on disk once its files change, and keep
the old one while the new files are bad. The CA and certificates are the test's own (`infra.certs`)."""

import asyncio
import logging
import ssl
from pathlib import Path

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from infra.certs import CertificateAuthority

from flamewatch.auth.webconfig import TLSServerConfig
from flamewatch.rpc.tls import CertificateError, ServerCertificates

SOURCE = "web.yml"


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return CertificateAuthority.create(tmp_path)


def server_config(ca: CertificateAuthority, **kwargs) -> TLSServerConfig:
    issued = ca.issue("server")
    return TLSServerConfig(str(issued.cert), str(issued.key), **kwargs)


def start_error(config: TLSServerConfig) -> str:
    with pytest.raises(CertificateError) as info:
        ServerCertificates(config, SOURCE)
    return str(info.value)


def test_a_key_of_another_certificate_is_named(ca):
    config = server_config(ca)
    other = ca.issue("other")
    assert start_error(TLSServerConfig(config.cert_file, str(other.key))) == (
        f'web.yml: tls_server_config.key_file: "{other.key}" is not the private key of the certificate in '
        f'"{config.cert_file}": give the key the certificate was made for')


def test_swapped_files_are_named(ca):
    config = server_config(ca)
    assert start_error(TLSServerConfig(config.key_file, config.cert_file)) == (
        f'web.yml: tls_server_config.cert_file: "{config.key_file}" holds a private key, not a certificate (are '
        "cert_file and key_file swapped?)")


def test_a_missing_file_and_one_that_is_not_pem(ca, tmp_path):
    config = server_config(ca)
    (tmp_path / "server.key").unlink()
    assert start_error(config) == f'web.yml: tls_server_config.key_file: cannot read "{config.key_file}": No such ' \
                                  "file or directory"
    garbage = tmp_path / "garbage.crt"
    garbage.write_bytes(b"\x30\x82 not pem")
    assert "holds no PEM certificate (-----BEGIN CERTIFICATE-----)" in start_error(
        TLSServerConfig(str(garbage), config.cert_file))


def test_an_encrypted_key_is_refused_without_asking_for_a_passphrase(ca, tmp_path):
    config = server_config(ca)
    key = serialization.load_pem_private_key(Path(config.key_file).read_bytes(), None)
    encrypted = tmp_path / "encrypted.key"
    encrypted.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.BestAvailableEncryption(b"passphrase")))
    assert start_error(TLSServerConfig(config.cert_file, str(encrypted))).startswith(
        f'web.yml: tls_server_config.key_file: "{encrypted}" is encrypted: Flamewatch needs the key without a '
        "passphrase")


def test_a_client_ca_that_is_no_certificate(ca):
    config = server_config(ca)
    assert start_error(TLSServerConfig(config.cert_file, config.key_file, config.key_file,
                                       "RequireAndVerifyClientCert")) == (
        f'web.yml: tls_server_config.client_ca_file: "{config.key_file}" holds a private key, not a certificate '
        "(are cert_file and key_file swapped?)")


async def _https_serial(context: ssl.SSLContext, ca: CertificateAuthority, client: Path | None = None) -> int:
    """The serial number of the certificate a new HTTPS-like connection to a server on `context` gets."""

    async def answer(_reader, writer):
        writer.write(b"ok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    try:
        trust = ssl.create_default_context(cafile=str(ca.cert))
        if client is not None:
            trust.load_cert_chain(client.with_suffix(".crt"), client.with_suffix(".key"))
        reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1], ssl=trust)
        if await reader.read() != b"ok":  # TLS 1.3: a refused client certificate closes the connection
            raise ConnectionResetError("the server closed the connection")
        serial = int(writer.get_extra_info("ssl_object").getpeercert()["serialNumber"], 16)
        writer.close()
        return serial
    finally:
        server.close()
        await server.wait_closed()


def test_https_handshakes_get_the_new_certificate_and_keep_the_old_one_while_the_new_files_are_bad(ca, caplog):
    first = ca.issue("server")
    certificates = ServerCertificates(TLSServerConfig(str(first.cert), str(first.key)), SOURCE, recheck_s=0)
    context = certificates.http_context()
    assert asyncio.run(_https_serial(context, ca)) == first.serial

    second = ca.issue("server")  # renamed over the first pair
    caplog.set_level(logging.INFO, "flamewatch.rpc.tls")
    assert asyncio.run(_https_serial(context, ca)) == second.serial
    assert [r.getMessage() for r in caplog.records] == [
        f"TLS: loaded new certificates from {first.cert}, {first.key}"]

    caplog.clear()
    first.key.write_bytes(ca.issue("other", file_name="other").key.read_bytes())  # a key of another certificate
    assert asyncio.run(_https_serial(context, ca)) == second.serial
    assert asyncio.run(_https_serial(context, ca)) == second.serial
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and warnings[0].startswith(
        f'TLS: keeping the certificate loaded before: web.yml: tls_server_config.key_file: "{first.key}" is not the '
        "private key of the certificate")


def test_files_are_looked_at_only_every_recheck_interval(ca):
    first = ca.issue("server")
    certificates = ServerCertificates(TLSServerConfig(str(first.cert), str(first.key)), SOURCE, recheck_s=3600)
    ca.issue("server")
    assert certificates.current().generation == 1
    assert asyncio.run(_https_serial(certificates.http_context(), ca)) == first.serial


def test_https_verifies_client_certificates_as_client_auth_type_says(ca, tmp_path):
    required = server_config(ca, client_ca_file=str(ca.cert), client_auth_type="RequireAndVerifyClientCert")
    context = ServerCertificates(required, SOURCE).http_context()
    collector = ca.issue("collector", client=True)
    assert asyncio.run(_https_serial(context, ca, collector.cert.with_suffix("")))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        asyncio.run(_https_serial(context, ca))  # TLS 1.3: the refusal arrives with the first read

    stranger = CertificateAuthority.create(tmp_path / "other", "stranger-ca").issue("collector", client=True)
    optional = ServerCertificates(server_config(ca, client_ca_file=str(ca.cert),
                                                client_auth_type="VerifyClientCertIfGiven"), SOURCE).http_context()
    assert asyncio.run(_https_serial(optional, ca))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        asyncio.run(_https_serial(optional, ca, stranger.cert.with_suffix("")))


def test_min_version_tls13_refuses_tls12_on_https(ca):
    context = ServerCertificates(server_config(ca, min_version="TLS13"), SOURCE).http_context()
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3


async def _grpc_call(port: int, ca: CertificateAuthority, client=None) -> bytes:
    """The common name of the client certificate the server verified ("-": none)."""
    key = client.key.read_bytes() if client else None
    chain = client.cert.read_bytes() if client else None
    credentials = grpc.ssl_channel_credentials(ca.cert.read_bytes(), key, chain)
    async with grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials) as channel:
        return await channel.unary_unary("/test.Echo/Name")(b"", timeout=10)


def _echo_server(certificates: ServerCertificates) -> tuple[grpc.aio.Server, int]:
    def name(_request, context):
        return (context.auth_context().get("x509_common_name") or [b"-"])[0]

    server = grpc.aio.server()
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        "test.Echo", {"Name": grpc.unary_unary_rpc_method_handler(name)})])
    return server, server.add_secure_port("127.0.0.1:0", certificates.grpc_credentials())


def test_grpc_requires_verified_client_certificates_and_takes_new_certificates(ca, tmp_path):
    config = server_config(ca, client_ca_file=str(ca.cert), client_auth_type="RequireAndVerifyClientCert")
    certificates = ServerCertificates(config, SOURCE, recheck_s=0)
    collector = ca.issue("collector", client=True)

    async def run() -> None:
        server, port = _echo_server(certificates)
        await server.start()
        try:
            assert await _grpc_call(port, ca, collector) == b"collector"
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await _grpc_call(port, ca)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            # A new CA: the server's certificate and the clients' both move to it.
            new_ca = CertificateAuthority.create(tmp_path / "new", "new-ca")
            new_ca.issue("server", file_name="server", directory=tmp_path)
            (tmp_path / "ca.crt").write_bytes(new_ca.cert.read_bytes())
            assert certificates.current().generation == 2
            assert await _grpc_call(port, new_ca, new_ca.issue("ingester", client=True)) == b"ingester"
            with pytest.raises(grpc.aio.AioRpcError):
                await _grpc_call(port, ca, collector)  # the old CA is trusted no more
        finally:
            await server.stop(0)

    asyncio.run(run())


def test_grpc_limits_are_said(ca):
    config = server_config(ca, client_ca_file=str(ca.cert), client_auth_type="VerifyClientCertIfGiven",
                           min_version="TLS13")
    limits = ServerCertificates(config, SOURCE).grpc_limits()
    assert [limit.split(":")[0] for limit in limits] == ["VerifyClientCertIfGiven", "min_version TLS13"]
