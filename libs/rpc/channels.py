"""Every gRPC channel one Flamewatch process opens to another is made here, with the process's client
identity: the `Authorization` every call sends and the TLS it uses (the web configuration file's
`client` section, or the CLI's `--token` / `--basic-auth` / `--tls.*` flags). HTTP clients to other
services take the same identity (`http_headers`, `http_client_options`).

The identity is the process's, set once at start by the CLI (`use_identity`), so the services that
call others (the collector's sender, the querier's symbolizer client, `debuginfo upload`) need not
carry it through their constructors: they ask this module for a channel to an address.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from pathlib import Path

import grpc

from flamewatch.clientconfig import TLSConfig, server_name_hooks, ssl_context

# What a command that takes the client flags (`upload`, `debuginfo upload`) tells a user a server refused.
CREDENTIAL_HINT = "give --token or --basic-auth (or FLAMEWATCH_TOKEN, FLAMEWATCH_BASIC_AUTH)"


@dataclass(frozen=True)
class ClientIdentity:
    authorization: str | None = None  # the Authorization header value, e.g. "Bearer ..." or "Basic ..."
    tls: TLSConfig | None = None  # None: plain text


_identity = ClientIdentity()


def use_identity(identity: ClientIdentity) -> None:
    global _identity
    _identity = identity


def identity() -> ClientIdentity:
    return _identity


def http_headers() -> dict[str, str]:
    """Headers for an HTTP call to another service (the frontend forwards its user's instead)."""
    return {"Authorization": _identity.authorization} if _identity.authorization else {}


def http_client_options() -> dict:
    """httpx.AsyncClient settings for HTTP calls to another service (the frontend's to the querier and
    the collectors): the CA it trusts, the client certificate it shows, the server name it checks."""
    return {"verify": ssl_context(_identity.tls), "event_hooks": server_name_hooks(_identity.tls)}


def grpc_channel(address: str, options: list[tuple[str, object]] | None = None) -> grpc.aio.Channel:
    """An asyncio channel to `address` with this process's identity."""
    options = [*(options or []), *_tls_options()]
    interceptors = [_AsyncAuthorization(_identity.authorization)] if _identity.authorization else None
    credentials = _channel_credentials()
    if credentials is None:
        return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)
    return grpc.aio.secure_channel(address, credentials, options=options, interceptors=interceptors)


def grpc_blocking_channel(address: str, options: list[tuple[str, object]] | None = None) -> grpc.Channel:
    """A blocking channel to `address` with this process's identity (for calls from worker threads)."""
    options = [*(options or []), *_tls_options()]
    credentials = _channel_credentials()
    channel = (grpc.insecure_channel(address, options=options) if credentials is None
               else grpc.secure_channel(address, credentials, options=options))
    if _identity.authorization:
        return grpc.intercept_channel(channel, _BlockingAuthorization(_identity.authorization))
    return channel


# What gRPC says of a connection that failed on TLS, and what to change.
_TLS_FAILURES = (
    ("WRONG_VERSION_NUMBER", "the server does not speak TLS: remove client.tls_config (or --tls.*), or give the "
                             "server tls_server_config"),
    ("CERTIFICATE_VERIFY_FAILED", "the server's certificate is not signed by the CA this client trusts "
                                  "(client.tls_config.ca_file)"),
    ("Peer name", "the server's certificate does not name the address dialled: set client.tls_config.server_name "
                  "to a name it carries"),
)


def describe_failure(error: grpc.RpcError) -> str:
    """A failed call's status and details, with what to change when the connection failed on TLS."""
    details = error.details() or ""
    for marker, advice in _TLS_FAILURES:
        if marker in details:
            return f"{error.code().name}: {details} ({advice})"
    if error.code() == grpc.StatusCode.UNAVAILABLE and "Socket closed" in details and _identity.tls is None:
        return (f"{error.code().name}: {details} (if the server speaks TLS, give client.tls_config with the CA "
                "that signed its certificate; if it requires client certificates, a cert_file and key_file)")
    return f"{error.code().name}: {details}"


def _channel_credentials() -> grpc.ChannelCredentials | None:
    tls = _identity.tls
    if tls is None:
        return None
    return grpc.ssl_channel_credentials(root_certificates=_read(tls.ca_file), private_key=_read(tls.key_file),
                                        certificate_chain=_read(tls.cert_file))


def _tls_options() -> list[tuple[str, object]]:
    tls = _identity.tls
    return [("grpc.ssl_target_name_override", tls.server_name)] if tls is not None and tls.server_name else []


def _read(path: str) -> bytes | None:
    return Path(path).read_bytes() if path else None


def _with_authorization(details, authorization: str):
    metadata = [*(details.metadata or ()), ("authorization", authorization)]
    return details._replace(metadata=metadata) if hasattr(details, "_replace") else _Details(
        details.method, details.timeout, metadata, details.credentials, details.wait_for_ready,
        getattr(details, "compression", None))


class _Details(collections.namedtuple("_Details", ("method", "timeout", "metadata", "credentials",
                                                   "wait_for_ready", "compression")), grpc.ClientCallDetails):
    pass


class _AsyncAuthorization(grpc.aio.UnaryUnaryClientInterceptor, grpc.aio.StreamUnaryClientInterceptor):
    def __init__(self, authorization: str) -> None:
        self._authorization = authorization

    async def intercept_unary_unary(self, continuation, details, request):
        return await continuation(_aio_details(details, self._authorization), request)

    async def intercept_stream_unary(self, continuation, details, request_iterator):
        return await continuation(_aio_details(details, self._authorization), request_iterator)


def _aio_details(details: grpc.aio.ClientCallDetails, authorization: str) -> grpc.aio.ClientCallDetails:
    metadata = grpc.aio.Metadata(*(details.metadata or ()), ("authorization", authorization))
    return grpc.aio.ClientCallDetails(details.method, details.timeout, metadata, details.credentials,
                                      details.wait_for_ready)


class _BlockingAuthorization(grpc.UnaryUnaryClientInterceptor, grpc.StreamUnaryClientInterceptor):
    def __init__(self, authorization: str) -> None:
        self._authorization = authorization

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(_with_authorization(details, self._authorization), request)

    def intercept_stream_unary(self, continuation, details, request_iterator):
        return continuation(_with_authorization(details, self._authorization), request_iterator)
