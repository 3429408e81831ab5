"""What the HTTPS server adds to uvicorn's HTTP protocol.

- The common name of the client certificate a connection showed, when the client CA verified it, in
  every request's scope (`CERTIFICATE_NAME`), so the credential check (`rpc.auth.AuthMiddleware`) can
  take a service's certificate as its credential, as the gRPC interceptor takes it from gRPC's auth
  context. uvicorn passes nothing of the TLS session to the app; the name is read once per connection.
- A stop that does not wait for idle clients: asyncio closes a TLS connection by sending close_notify
  and waiting up to 30 s for the client's, which an idle keep-alive client (a pool, a test's client)
  never sends, so a stopping server would hang past its supervisor's patience. Idle connections are cut
  after their close_notify is sent, as Go's servers do.
"""

from __future__ import annotations

import ssl

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from flamewatch.rpc.auth import CERTIFICATE_NAME


class HTTPSProtocol(AutoHTTPProtocol):
    """uvicorn's HTTP protocol (httptools or h11, as uvicorn chooses) for an HTTPS port."""

    def connection_made(self, transport) -> None:  # uvicorn's signature
        super().connection_made(transport)
        name = verified_common_name(transport.get_extra_info("ssl_object"))
        if name is not None:
            self.app = _Named(self.app, name)

    def shutdown(self) -> None:  # uvicorn's, when the server stops
        idle = self.cycle is None or self.cycle.response_complete
        super().shutdown()
        if idle:
            self.transport.abort()


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
