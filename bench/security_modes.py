"""The modes of `security_cost.py`: each one's web configuration file, credentials and push clients.

    plain HTTP                    no file: POST /ingest as today
    plain HTTP, another server    the same, on a server of its own: an A/A control, what two servers of
                                  one mode differ by with nothing else different
    basic auth                    basic_auth_users (bcrypt, cost 10) and access
    bearer token                  bearer_tokens (sha256) and access
    HTTPS                         tls_server_config (an EC P-256 certificate of a CA made here; for
                                  what a connection costs, also an RSA 2048 one)
    HTTPS + basic auth            both
    plain gRPC                    no file: IngestService.Push, one pprof per call
    gRPC over TLS + bearer token  tls_server_config, bearer_tokens and access
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import ssl
from dataclasses import dataclass
from pathlib import Path

import allinone
import bcrypt
import grpc
import httpx
from infra.certs import CertificateAuthority

from flamewatch.api.flamewatch.v1 import ingest_pb2, ingest_pb2_grpc

TENANT = "bench"
USER, TOKEN_NAME, ADMIN = "pusher", "pusher-token", "bench-admin"
CLIENTS = ("keep-alive", "new per push")
CONTROL = "plain HTTP, another server"  # A/A: what two servers of one mode differ by, with nothing else different


@dataclass(frozen=True)
class Mode:
    name: str
    protocol: str  # "http" or "grpc"
    tls: bool = False
    credential: str | None = None  # "basic", "bearer" or None
    key: str = "server"  # the server certificate's files: server (EC P-256) or server-rsa (RSA 2048)

    @property
    def baseline(self) -> str:
        return "plain gRPC" if self.protocol == "grpc" else "plain HTTP"

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")


MODES = (Mode("plain HTTP", "http"), Mode(CONTROL, "http"), Mode("basic auth", "http", credential="basic"),
         Mode("bearer token", "http", credential="bearer"), Mode("HTTPS", "http", tls=True),
         Mode("HTTPS + basic auth", "http", tls=True, credential="basic"), Mode("plain gRPC", "grpc"),
         Mode("gRPC over TLS + bearer token", "grpc", tls=True, credential="bearer"))
# Measured for what a connection costs only (connection_cost.py): the handshake with the key most guides give
RSA_MODES = (Mode("HTTPS, RSA 2048 key", "http", tls=True, key="server-rsa"),
             Mode("gRPC over TLS, RSA 2048 key", "grpc", tls=True, key="server-rsa"))


# ------------------------------------------------------------------------------------- secrets and files


@dataclass(frozen=True)
class Secrets:
    """The credentials of every mode and the CA the servers' certificate comes from, made once a run."""

    directory: Path
    password: str
    password_hash: str
    token: str
    admin_token: str
    ca: CertificateAuthority

    @staticmethod
    def create(directory: Path) -> Secrets:
        password = secrets.token_urlsafe(16)
        ca = CertificateAuthority.create(directory)
        ca.issue("server")
        ca.issue("server-rsa", rsa_bits=2048)
        return Secrets(directory, password, bcrypt.hashpw(password.encode(), bcrypt.gensalt(10)).decode(),
                       secrets.token_urlsafe(32), secrets.token_urlsafe(32), ca)

    def web_config(self, mode: Mode) -> Path | None:
        """The mode's web configuration file; None for the plain modes (no file: Flamewatch as before)."""
        if not mode.tls and mode.credential is None:
            return None
        lines = []
        if mode.tls:
            lines += [f"tls_server_config: {{cert_file: {mode.key}.crt, key_file: {mode.key}.key}}",
                      "client: {tls_config: {ca_file: ca.crt}}"]
        if mode.credential is not None:  # the admin token fetches /debug/pprof in the profiled rounds
            lines += [f"bearer_tokens: {{{ADMIN}: {_sha256(self.admin_token)}}}",
                      f"access: {{{USER}: {{write: [{TENANT}]}}, {TOKEN_NAME}: {{write: [{TENANT}]}}, "
                      f"{ADMIN}: {{admin: true}}}}"]
        if mode.credential == "basic":
            lines.append(f"basic_auth_users: {{{USER}: '{self.password_hash}'}}")
        if mode.credential == "bearer":
            lines[-2] = (f"bearer_tokens: {{{ADMIN}: {_sha256(self.admin_token)}, "
                         f"{TOKEN_NAME}: {_sha256(self.token)}}}")
        path = self.directory / f"{mode.slug}.web.yml"
        path.write_text("\n".join(lines) + "\n")
        return path

    def ca_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca.cert))

    def authorization(self, mode: Mode) -> str | None:
        if mode.credential == "basic":
            return "Basic " + _b64(f"{USER}:{self.password}")
        if mode.credential == "bearer":
            return f"Bearer {self.token}"
        return None

    def admin_headers(self, mode: Mode) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"} if mode.credential else {}


def _sha256(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# ------------------------------------------------------------------------------------- clients


class HttpPusher:
    """POST /ingest, one pprof per request, through one httpx client."""

    def __init__(self, node: allinone.AllInOne, authorization: str | None, reuse: bool) -> None:
        headers = {"X-Scope-OrgID": TENANT, **({"Authorization": authorization} if authorization else {})}
        if not reuse:  # the server closes after its answer, and the client keeps no connection either
            headers["Connection"] = "close"
        limits = httpx.Limits() if reuse else httpx.Limits(max_keepalive_connections=0)
        self._client = httpx.AsyncClient(timeout=60, headers=headers, limits=limits, verify=node.tls or True)
        self._url = f"{node.url}/ingest"

    async def push(self, labels: dict[str, str], payload: bytes) -> int:
        answer = await self._client.post(self._url, params=labels, content=payload)
        answer.raise_for_status()
        return answer.json()["profiles"]

    async def close(self) -> None:
        await self._client.aclose()


class GrpcPusher:
    """IngestService.Push, one pprof per call: one channel, or a channel of its own per push (its own
    subchannel pool, so no connection is shared with another channel of this process)."""

    def __init__(self, node: allinone.AllInOne, ca: Path | None, authorization: str | None, reuse: bool) -> None:
        self._address, self._reuse = node.grpc, reuse
        self._credentials = grpc.ssl_channel_credentials(ca.read_bytes()) if ca else None
        self._metadata = (("x-scope-orgid", TENANT),) + ((("authorization", authorization),) if authorization else ())
        self._shared = self._channel() if reuse else None

    def _channel(self) -> grpc.aio.Channel:
        options = [("grpc.max_send_message_length", 64 << 20), ("grpc.use_local_subchannel_pool", 1)]
        if self._credentials is None:
            return grpc.aio.insecure_channel(self._address, options=options)
        return grpc.aio.secure_channel(self._address, self._credentials, options=options)

    async def push(self, labels: dict[str, str], payload: bytes) -> int:
        channel = self._shared or self._channel()
        try:
            request = ingest_pb2.PushRequest(series=[ingest_pb2.RawProfileSeries(
                labels=[{"name": k, "value": v} for k, v in labels.items()],
                samples=[ingest_pb2.RawSample(raw_profile=payload)])])
            reply = await ingest_pb2_grpc.IngestServiceStub(channel).Push(request, metadata=self._metadata,
                                                                          timeout=60)
            return reply.profiles
        finally:
            if not self._reuse:
                await channel.close()

    async def close(self) -> None:
        if self._shared is not None:
            await self._shared.close()


def pusher(mode: Mode, node: allinone.AllInOne, keys: Secrets, client: str):
    reuse = client == "keep-alive"
    if mode.protocol == "grpc":
        return GrpcPusher(node, keys.ca.cert if mode.tls else None, keys.authorization(mode), reuse)
    return HttpPusher(node, keys.authorization(mode), reuse)
