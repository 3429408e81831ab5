"""The e2e tests' public key infrastructure: a CA of the test's own (`infra.certs`), a server certificate
for 127.0.0.1 that every service serves, a client certificate per caller (named by its common name in
the web configuration file's `access`), and a web configuration file per service that requires and
verifies client certificates and lets each service in by its certificate."""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc
from infra.certs import CertificateAuthority

CALLERS = ("collector", "querier", "frontend", "all", "tester", "stranger")
WEB_CONFIG = """
tls_server_config:
  cert_file: {server}.crt
  key_file: {server}.key
  client_ca_file: ca.crt
  client_auth_type: {client_auth_type}
access:
  collector: {{write: ["*"]}}
  querier: {{read: ["*"], admin: true}}
  frontend: {{read: ["*"]}}
  tester: {{read: ["*"], write: ["*"], admin: true}}
client:
  tls_config: {{ca_file: ca.crt, cert_file: {caller}.crt, key_file: {caller}.key}}
"""


@dataclass
class PKI:
    directory: Path
    ca: CertificateAuthority

    @staticmethod
    def create(directory: Path) -> PKI:
        ca = CertificateAuthority.create(directory)
        ca.issue("server")
        for caller in CALLERS:  # "stranger": signed by the CA, but not in access
            ca.issue(caller, client=True)
        return PKI(directory, ca)

    def web_config(self, caller: str, server: str = "server",
                   client_auth_type: str = "RequireAndVerifyClientCert") -> Path:
        """A web configuration file for a process that serves `server`.crt and calls others as `caller`."""
        path = self.directory / f"{caller}-{server}.web.yml"
        path.write_text(WEB_CONFIG.format(server=server, caller=caller, client_auth_type=client_auth_type))
        return path

    def client_context(self, caller: str | None = "tester") -> ssl.SSLContext:
        """What an HTTPS client trusts (the CA) and shows (the caller's certificate; None: none)."""
        context = ssl.create_default_context(cafile=str(self.ca.cert))
        if caller:
            context.load_cert_chain(self.directory / f"{caller}.crt", self.directory / f"{caller}.key")
        return context

    def grpc_credentials(self, caller: str | None = "tester") -> grpc.ChannelCredentials:
        key = (self.directory / f"{caller}.key").read_bytes() if caller else None
        chain = (self.directory / f"{caller}.crt").read_bytes() if caller else None
        return grpc.ssl_channel_credentials(self.ca.cert.read_bytes(), key, chain)


def served_serial(port: int, ca_file: Path, alpn: str | None = None) -> int:
    """The serial number of the certificate a new TLS connection to 127.0.0.1:port is shown (the gRPC
    port too: `alpn="h2"`). With TLS 1.3 the client's side of the handshake ends before the server
    checks the client's certificate, so this needs none."""
    context = ssl.create_default_context(cafile=str(ca_file))
    if alpn:
        context.set_alpn_protocols([alpn])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        return int(tls.getpeercert()["serialNumber"], 16)
