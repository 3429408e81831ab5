"""A process's security, read once at start from `--web.config.file`: the `Authenticator` its servers
check every request with, and the identity its own clients show the other services (`rpc.channels`).

`flamewatch all` calls itself over gRPC (the collector pushes to its ingester, the querier asks its
symbolizer) and scrapes itself over HTTP. With credentials required, it makes a random token at start
that only it knows and accepts, with access to everything, and its clients send it; a split process
uses the file's `client`. With `tls_server_config` its own ports speak TLS, so its clients use the
file's `client.tls_config` (the CA that signed its certificate, and a client certificate when it
requires one), which it must then give.

The server certificates are loaded here, at start, so a file that cannot be used stops the process
with a message that names it (`rpc.tls.CertificateError`).
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import secrets
from dataclasses import dataclass, replace

from flamewatch.auth.caller import Authenticator
from flamewatch.auth.webconfig import Access, WebConfig, load_web_config
from flamewatch.clientconfig import authorization_header
from flamewatch.configreader import ConfigError
from flamewatch.rpc.channels import ClientIdentity, use_identity
from flamewatch.rpc.tls import ServerCertificates

log = logging.getLogger(__name__)

IN_PROCESS = "flamewatch:in-process"  # a colon: no name in the file can be this one


@dataclass
class WebSecurity:
    config: WebConfig
    authenticator: Authenticator
    server_tls: ServerCertificates | None = None

    @staticmethod
    def load(path: str | None, in_process: bool = False) -> WebSecurity:
        config = load_web_config(path) if path else WebConfig()
        if path:
            log.info("web configuration %s: %s", path, _summary(config))
        server_tls = ServerCertificates(config.tls, config.source) if config.tls else None
        identity = ClientIdentity(authorization_header(config.client.basic_auth, config.client.authorization),
                                  config.client.tls)
        if in_process:
            _check_calls_itself(config)
            identity = replace(identity, tls=config.client.tls if config.tls else None)
        if in_process and config.authenticates:
            token = secrets.token_urlsafe(32)
            access = None if config.access is None else {**config.access, IN_PROCESS: Access.everything()}
            config = replace(config, tokens={**config.tokens, hashlib.sha256(token.encode()).digest(): IN_PROCESS},
                             access=access)
            identity = replace(identity, authorization=f"Bearer {token}")
        use_identity(identity)
        return WebSecurity(config, Authenticator(config), server_tls)

    def warn_if_open(self, *addresses: str | None) -> None:
        """One line when anyone who reaches a port beyond this machine may read and write every tenant."""
        open_to = [a for a in addresses if a and not _loopback(a)]
        if open_to and not self.config.authenticates:
            log.warning("listening on %s without credentials: anyone who reaches these ports may read and write "
                        "every tenant; give --web.config.file (README, Security) or listen on 127.0.0.1",
                        " and ".join(open_to))


def _check_calls_itself(config: WebConfig) -> None:
    """A process that calls its own TLS ports must be able to: trust them, and show a certificate if
    they require one."""
    if config.tls is None:
        return
    client = config.client.tls
    if client is None:
        raise ConfigError(f"{config.source}: client.tls_config: required with tls_server_config in flamewatch all, "
                          "which calls its own ports over TLS: give ca_file, the CA that signed "
                          f'"{config.tls.cert_file}" (and server_name if that certificate does not name the '
                          "address Flamewatch listens on)", config.source)
    if config.tls.requires_client_cert and not client.cert_file:
        raise ConfigError(f"{config.source}: client.tls_config.cert_file: required, as tls_server_config."
                          f"client_auth_type {config.tls.client_auth_type} asks every client for a certificate, "
                          "flamewatch all's calls to itself too: give a certificate (and key_file) the client CA "
                          "signed", config.source)


def _summary(config: WebConfig) -> str:
    parts = [f"{len(config.users)} users", f"{len(config.tokens)} bearer tokens"]
    parts.append("TLS" + (f" with client certificates ({config.tls.client_auth_type})"
                          if config.tls.client_auth_type != "NoClientCert" else "") if config.tls else "no TLS")
    parts.append("access per credential" if config.access is not None else "every credential may do everything")
    return ", ".join(parts)


def _loopback(address: str) -> bool:
    host = address.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # empty (every interface) or a name
