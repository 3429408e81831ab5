"""A gRPC call that fails on TLS says what to change (`rpc.channels.describe_failure`), against real
gRPC servers on loopback: a TLS client at a plain server, and a client that trusts another CA."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from infra.certs import CertificateAuthority

from flamewatch.clientconfig import TLSConfig
from flamewatch.rpc.channels import ClientIdentity, describe_failure, grpc_blocking_channel, identity, use_identity


@pytest.fixture
def server_credentials(tmp_path: Path) -> grpc.ServerCredentials:
    issued = CertificateAuthority.create(tmp_path / "server-ca").issue("server")
    return grpc.ssl_server_credentials([(issued.key.read_bytes(), issued.cert.read_bytes())])


def failure(credentials: grpc.ServerCredentials | None, client_tls: TLSConfig | None) -> str:
    server = grpc.server(ThreadPoolExecutor(1))
    port = server.add_secure_port("127.0.0.1:0", credentials) if credentials else \
        server.add_insecure_port("127.0.0.1:0")
    server.start()
    before = identity()
    use_identity(ClientIdentity(tls=client_tls))
    try:
        with grpc_blocking_channel(f"127.0.0.1:{port}") as channel, pytest.raises(grpc.RpcError) as info:
            channel.unary_unary("/test.Echo/Name")(b"", timeout=5)
        return describe_failure(info.value)
    finally:
        use_identity(before)
        server.stop(0)


def test_a_tls_client_at_a_plain_server(tmp_path):
    ca = CertificateAuthority.create(tmp_path)
    assert "(the server does not speak TLS: remove client.tls_config" in failure(None, TLSConfig(str(ca.cert)))


def test_a_client_that_trusts_another_ca(tmp_path, server_credentials):
    other = CertificateAuthority.create(tmp_path / "other", "other")
    assert "(the server's certificate is not signed by the CA this client trusts" in failure(
        server_credentials, TLSConfig(str(other.cert)))


def test_a_plain_client_at_a_tls_server(server_credentials):
    assert "(if the server speaks TLS, give client.tls_config" in failure(server_credentials, None)
