"""What Flamewatch adds to uvicorn's HTTP protocol (`http_protocol(tls)` gives the class for a server).

- **A client on the wrong protocol is told so.** asyncio drops a TLS port's connection whose first
  bytes are plain HTTP without a word (curl says "Empty reply from server"), and uvicorn answers a TLS
  ClientHello on a plain port with "Invalid HTTP request". So an HTTPS port looks at a connection's
  first byte before its handshake (a TLS record starts with 0x16, a request line with a letter):
  plain HTTP gets `400 This port speaks HTTPS` (Go's servers answer the same), and a plain port closes
  a connection that starts a TLS handshake; both log one line (rate-limited) that says what to change.
  The look is a peek (MSG_PEEK on a duplicate of the socket): the bytes stay for the handshake, which
  runs through `loop.start_tls` as any asyncio server's would.
- **Handshake failures are logged** (rate-limited) with the reason: a client that showed no certificate
  where one is required, or one the client CA did not sign.
- **The verified client certificate names its caller.** The common name of a certificate the client
  CA verified goes into every request's scope (`CERTIFICATE_NAME`), so the credential check
  (`rpc.auth.AuthMiddleware`) takes a service's certificate as the gRPC interceptor does.
- **A stop does not wait for idle clients**: asyncio closes a TLS connection by waiting up to 30 s for
  the client's close_notify, which an idle keep-alive client never sends; idle connections are cut
  after ours is sent, as Go's servers do.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.rpc.auth import CERTIFICATE_NAME
from flamewatch.rpc.tls import ServerCertificates

log = logging.getLogger(__name__)
_rate_log = RateLimitedLog(log)

TLS_RECORD = 0x16  # the first byte of a TLS handshake record (a ClientHello)
FIRST_BYTE_TIMEOUT_S = 60.0  # a connection that sends nothing is closed after this
_PLAIN_ON_HTTPS = (b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
                   b"This port speaks HTTPS: use https:// (Flamewatch's web configuration file has "
                   b"tls_server_config).\n")


def http_protocol(tls: ServerCertificates | None) -> type[asyncio.Protocol]:
    """The protocol class for uvicorn's `http=`: HTTPS with these certificates, or plain HTTP."""
    if tls is None:
        return PlainHTTPProtocol
    return type("HTTPSProtocol", (HTTPSProtocol,), {"certificates": tls})


class PlainHTTPProtocol(AutoHTTPProtocol):
    """uvicorn's HTTP protocol (httptools or h11, as uvicorn chooses), closing a connection that starts TLS."""

    _first = True

    def data_received(self, data: bytes) -> None:
        if self._first:
            self._first = False
            if data[:1] == bytes([TLS_RECORD]):
                _rate_log.log(logging.WARNING, "tls on plain", "a client at %s started a TLS handshake on this plain "
                              "HTTP port: it should use http://, or this server https:// (tls_server_config in "
                              "--web.config.file)", _peer(self.transport))
                self.transport.close()
                return
        super().data_received(data)


class HTTPSProtocol(AutoHTTPProtocol):
    """uvicorn's HTTP protocol on a connection it is given once the connection's TLS handshake is done."""

    certificates: ServerCertificates  # set per server by `http_protocol`

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._secure = False
        self._early: list[bytes] = []  # what TLS decrypted before uvicorn's protocol had the connection
        self._lost_early = False
        self._starting: asyncio.Task | None = None

    def connection_made(self, transport) -> None:  # uvicorn's signature; the raw TCP transport
        transport.pause_reading()
        self._starting = asyncio.get_running_loop().create_task(self._start(transport))

    async def _start(self, raw: asyncio.Transport) -> None:
        try:
            _stop_reading(raw)
            first = await _first_byte(raw)
            if first is None:
                raw.abort()
            elif first != TLS_RECORD:
                _refuse_plain(raw)
            else:
                await self._handshake(raw)
        except Exception:  # a bug here costs this connection only, and is seen
            log.exception("serving a connection from %s failed", _peer(raw))
            raw.abort()

    async def _handshake(self, raw: asyncio.Transport) -> None:
        peer = _peer(raw)
        try:
            secure = await asyncio.get_running_loop().start_tls(raw, self, self.certificates.http_context(),
                                                                 server_side=True)
        except OSError as exc:  # ssl.SSLError and TimeoutError are OSErrors
            _log_handshake_failure(peer, exc)
            raw.abort()
            return
        self._secure = True
        super().connection_made(secure)
        name = verified_common_name(secure.get_extra_info("ssl_object"))
        if name is not None:
            self.app = _Named(self.app, name)
        for data in self._early:
            super().data_received(data)
        if self._lost_early:
            super().connection_lost(None)

    def data_received(self, data: bytes) -> None:
        if self._secure:
            super().data_received(data)
        else:
            self._early.append(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._secure:
            super().connection_lost(exc)
        else:
            self._lost_early = True

    def shutdown(self) -> None:  # uvicorn's, when the server stops
        if not self._secure:
            return
        idle = self.cycle is None or self.cycle.response_complete
        super().shutdown()
        if idle:
            self.transport.abort()


def _stop_reading(raw: asyncio.Transport) -> None:
    """Make the transport read nothing until the handshake, on every Python 3.11.

    Python 3.11.2 (Debian 12's) starts reading after `connection_made` even when it paused the
    transport (later versions honour the pause): the ClientHello would go to `data_received` instead of
    the handshake, and the peek would find the socket empty. Resuming and pausing again, once the
    transport has started, removes its reader and cancels a read already queued (this runs before the
    loop hands it any event: the task was scheduled by `connection_made`)."""
    raw.resume_reading()
    raw.pause_reading()


async def _first_byte(raw: asyncio.Transport) -> int | None:
    """The connection's first byte, left in the socket; None if the client closed or sent nothing in time.

    A client sends its first bytes (a ClientHello, a request line) right after connecting, so they are
    mostly there already: looked at without waiting, which spares a reader, a timer and a turn of the
    loop per connection, and waited for only when they are not. The look is on a duplicate of the socket:
    the loop refuses a reader on the transport's own."""
    sock = raw.get_extra_info("socket")
    with socket.socket(sock.family, sock.type, sock.proto, os.dup(sock.fileno())) as peeker:
        try:
            return _peeked(peeker.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except BlockingIOError:
            return await _wait_and_peek(peeker)
        except OSError:
            return None


async def _wait_and_peek(peeker: socket.socket) -> int | None:
    loop = asyncio.get_running_loop()
    readable = loop.create_future()
    loop.add_reader(peeker.fileno(), lambda: readable.done() or readable.set_result(None))
    try:
        await asyncio.wait_for(readable, FIRST_BYTE_TIMEOUT_S)
        return _peeked(peeker.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:  # TimeoutError too
        return None
    finally:
        loop.remove_reader(peeker.fileno())


def _peeked(head: bytes) -> int | None:
    return head[0] if head else None  # empty: the client closed


def _refuse_plain(raw: asyncio.Transport) -> None:
    peer = _peer(raw)
    _rate_log.log(logging.WARNING, "plain on tls", "a client at %s sent plain HTTP to this HTTPS port: it was told to "
                  "use https://", peer)
    sock = raw.get_extra_info("socket")
    try:  # read what the client sent, so closing does not reset the connection before it reads the answer
        with socket.socket(fileno=os.dup(sock.fileno())) as drain:
            drain.recv(65536)
    except OSError:
        pass
    raw.write(_PLAIN_ON_HTTPS)
    raw.close()


def _log_handshake_failure(peer: str, exc: BaseException) -> None:
    reason = getattr(exc, "reason", None) or type(exc).__name__
    hint = _HANDSHAKE_HINTS.get(reason, "")
    _rate_log.log(logging.WARNING, f"handshake {reason}", "TLS handshake with %s failed: %s%s", peer,
                  getattr(exc, "strerror", None) or exc or reason, hint)


_HANDSHAKE_HINTS = {
    "PEER_DID_NOT_RETURN_A_CERTIFICATE": " (the client showed no certificate; tls_server_config.client_auth_type "
                                         "requires one: give the client one the client CA signed)",
    "CERTIFICATE_VERIFY_FAILED": " (the client's certificate is not signed by tls_server_config.client_ca_file)",
    "TLSV1_ALERT_UNKNOWN_CA": " (the client does not trust this server's certificate: give it the CA that signed "
                              "cert_file)",
    "SSLV3_ALERT_BAD_CERTIFICATE": " (the client refused this server's certificate: does it name the address the "
                                   "client dials? see server_name)",
    "TimeoutError": " (the client did not finish the handshake in time)",
}


class _Named:
    """The app as one connection calls it: every request's scope carries the connection's client name."""

    __slots__ = ("app", "name")

    def __init__(self, app, name: str) -> None:
        self.app, self.name = app, name

    async def __call__(self, scope, receive, send) -> None:
        scope[CERTIFICATE_NAME] = self.name
        await self.app(scope, receive, send)


def verified_common_name(ssl_object: ssl.SSLObject | None) -> str | None:
    """The subject's common name of the peer's certificate, if it showed one and it was verified
    (`getpeercert()` is empty for a certificate the context did not verify)."""
    certificate = ssl_object.getpeercert() if ssl_object is not None else None
    for relative_name in (certificate or {}).get("subject", ()):
        for key, value in relative_name:
            if key == "commonName":
                return value
    return None


def _peer(transport: asyncio.BaseTransport) -> str:
    peer = transport.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "an unknown address"
