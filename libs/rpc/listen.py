"""Listening sockets, bound before anything else starts so a taken port fails fast and clearly.

With `tls` (the web configuration file's `tls_server_config`) the gRPC port speaks only TLS; the HTTP
socket is plain here and gets its TLS from the server that runs on it (`rpc.runtime`).

Every socket is exclusive: no SO_REUSEPORT, so a second process on the same port is refused instead of
silently sharing the traffic (gRPC enables SO_REUSEPORT by default; it is turned off here). A failure
names the address and the flag that chooses it.
"""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from flamewatch.rpc.tls import ServerCertificates

log = logging.getLogger(__name__)

MESSAGE_LIMITS = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 256 << 20)]


def grpc_options(max_connection_age_s: float) -> list[tuple[str, int]]:
    """A server's options. A connection is closed (GOAWAY, its calls given as long again to finish) after
    `max_connection_age_s` (`--grpc.max-connection-age`), so clients that balance over a DNS name (the
    collector over a headless Service of ingesters) re-resolve it and spread onto pods added since they
    connected; gRPC adds jitter, so the reconnects do not come at once."""
    age_ms = int(max_connection_age_s * 1000)
    return [("grpc.so_reuseport", 0), *MESSAGE_LIMITS, ("grpc.max_connection_age_ms", age_ms),
            ("grpc.max_connection_age_grace_ms", age_ms)]


class ListenError(OSError):
    """A listen address cannot be used: taken, not local, not permitted, or malformed."""


def parse_address(address: str) -> tuple[str, int]:
    """'host:port', '[v6]:port' or ':port' (all interfaces); ValueError names what is wrong."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f'invalid address "{address}": expected host:port, e.g. 127.0.0.1:4100 or :4100')
    if int(port) > 65535:
        raise ValueError(f'invalid address "{address}": the port must be between 0 and 65535')
    return host.strip("[]") or "0.0.0.0", int(port)


@dataclass
class Listeners:
    """The process's HTTP socket and its gRPC server with its port bound (servicers not yet added)."""

    http: socket.socket
    grpc: grpc.aio.Server | None
    http_address: str
    grpc_address: str | None
    grpc_port: int = 0  # as bound: the one chosen when the address asked for port 0
    tls: ServerCertificates | None = None

    @property
    def http_port(self) -> int:
        return self.http.getsockname()[1]

    def close(self) -> None:
        self.http.close()


def listen(http_address: str, grpc_address: str | None, http_flag: str = "--http-address",
           grpc_flag: str = "--grpc-address", interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
           tls: ServerCertificates | None = None, *, max_connection_age_s: float) -> Listeners:
    """Bind both addresses, or raise ListenError and leave nothing bound. Needs a running event loop.
    `interceptors` see every gRPC call first (the credential check of `rpc.auth`)."""
    http = bind_http(http_address, http_flag)
    try:
        server, port = (bind_grpc(grpc_address, grpc_flag, interceptors, tls, max_connection_age_s=max_connection_age_s)
                        if grpc_address else (None, 0))
    except BaseException:
        http.close()
        raise
    return Listeners(http, server, http_address, grpc_address, port, tls)


def bind_http(address: str, flag: str) -> socket.socket:
    host, port = parse_address(address)
    try:
        family, kind, proto, _, where = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {address} (HTTP): unknown host {host!r}; fix {flag}") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restarts need not wait out TIME_WAIT
        sock.bind(where)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {address} (HTTP): {_reason(exc)}; {_advice(exc, flag)}") from exc
    sock.set_inheritable(True)
    return sock


def bind_grpc(address: str, flag: str, interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
              tls: ServerCertificates | None = None, *, max_connection_age_s: float) -> tuple[grpc.aio.Server, int]:
    """The server with its port bound, and that port."""
    host, port = parse_address(address)
    server = grpc.aio.server(options=grpc_options(max_connection_age_s), interceptors=list(interceptors) or None)
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(target) if tls is None else \
            server.add_secure_port(target, tls.grpc_credentials())
    except RuntimeError as exc:
        reason = _probe(host, port)
        raise ListenError(f"cannot listen on {address} (gRPC): {_reason(reason)}; {_advice(reason, flag)}") from exc
    for limit in tls.grpc_limits() if tls else ():
        log.warning("tls_server_config.%s", limit)
    return server, bound


def _probe(host: str, port: int) -> OSError:
    """gRPC reports a failed bind without its cause; binding the same address once finds it."""
    try:
        with socket.create_server((host, port)):
            return OSError(errno.EADDRINUSE, "the address could not be bound")
    except OSError as exc:
        return exc


def _reason(exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return "the address is already in use (is another Flamewatch running?)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return "the address does not belong to this machine"
    if exc.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges)"
    return exc.strerror or str(exc)


def _advice(exc: OSError, flag: str) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"stop the other process or choose another port with {flag}"
    return f"choose another address with {flag}"
