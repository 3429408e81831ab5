"""Server TLS: the web configuration file's `tls_server_config` as the HTTPS and gRPC servers of a
process use it, read again when its files change.

Both servers ask `ServerCertificates.current()` at the handshake of each new connection: HTTPS through
its SSLContext's `sni_callback` (OpenSSL calls it for every ClientHello, with or without a server name,
and it may hand the connection another context), gRPC through the fetcher of
`grpc.dynamic_ssl_server_credentials`. `current()` looks at the files' inode, size and modification
time at most every `RECHECK_S` seconds, so a handshake costs no file access; when they changed, it loads
them anew and logs one line. Files that cannot be used (half written, a key that is not the
certificate's) keep the certificate loaded before, with a warning that says why; connections already
open keep theirs. No request is refused while certificates rotate.

Replace the files by writing new ones beside them and renaming them over, as Kubernetes secret mounts
and cert-manager do. A certificate and key renamed one after the other may be seen mismatched by one
check; that is logged, and the pair is loaded at the next check.

`client_auth_type`, as Prometheus's exporter-toolkit names it, maps to what Python's ssl and gRPC can do:

| client_auth_type | HTTPS | gRPC |
|---|---|---|
| NoClientCert, RequestClientCert | no certificate asked | no certificate asked |
| VerifyClientCertIfGiven | verified if given (CERT_OPTIONAL) | not asked: gRPC's Python API requires or does not ask |
| RequireAnyClientCert, RequireAndVerifyClientCert | required and verified (CERT_REQUIRED) | required and verified |

A client certificate names its caller only when the client CA verified it, so RequestClientCert (Go
asks and takes any) asks for none, and RequireAnyClientCert verifies against client_ca_file.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import grpc

from flamewatch.auth.webconfig import TLSServerConfig

log = logging.getLogger(__name__)

RECHECK_S = 5.0
_VERIFY_MODES = {"NoClientCert": ssl.CERT_NONE, "RequestClientCert": ssl.CERT_NONE,
                 "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL, "RequireAnyClientCert": ssl.CERT_REQUIRED,
                 "RequireAndVerifyClientCert": ssl.CERT_REQUIRED}
_MIN_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
_CERTIFICATE, _PRIVATE_KEY = b"-----BEGIN CERTIFICATE-----", b"PRIVATE KEY-----"


class CertificateError(ValueError):
    """A certificate, key or CA file of tls_server_config that cannot be used; the message names the
    file, what is wrong with it and how to fix it."""


@dataclass(frozen=True)
class _Loaded:
    context: ssl.SSLContext
    grpc: grpc.ServerCertificateConfiguration
    generation: int


class ServerCertificates:
    """The certificate, key and client CA a process serves with; safe to use from any thread.

    Made at start, where a file that cannot be used raises `CertificateError` (the process does not
    start); later problems only log, as the servers keep what they have."""

    def __init__(self, config: TLSServerConfig, source: str = "web configuration",
                 recheck_s: float = RECHECK_S) -> None:
        self.config = config
        self._source = source
        self._recheck_s = recheck_s
        self._lock = threading.Lock()
        self._stamps = self._stat()
        self._loaded = self._load(1)
        self._checked = time.monotonic()
        self._problem: str | None = None
        self._listening: ssl.SSLContext | None = None

    # ------------------------------------------------------------------------------ the servers' view

    def http_context(self) -> ssl.SSLContext:
        """The context the HTTPS server listens with (always the same one): each handshake moves to the
        current one in its `sni_callback`."""
        if self._listening is None:
            def switch(ssl_object: ssl.SSLObject, _server_name: str | None, _context: ssl.SSLContext) -> None:
                current = self.current().context
                if ssl_object.context is not current:
                    ssl_object.context = current

            self._listening = self._loaded.context
            self._listening.sni_callback = switch
        return self._listening

    def grpc_credentials(self) -> grpc.ServerCredentials:
        """Credentials whose certificate gRPC asks for before each handshake (None: no change)."""
        served = self._loaded.generation

        def fetch() -> grpc.ServerCertificateConfiguration | None:
            nonlocal served
            loaded = self.current()
            if loaded.generation == served:
                return None
            served = loaded.generation
            return loaded.grpc

        return grpc.dynamic_ssl_server_credentials(self._loaded.grpc, fetch, self.config.requires_client_cert)

    def grpc_limits(self) -> list[str]:
        """What the gRPC port cannot do of this configuration, for one line each at start."""
        limits = []
        if self.config.client_auth_type == "VerifyClientCertIfGiven":
            limits.append("VerifyClientCertIfGiven: the gRPC port does not ask for client certificates (gRPC's "
                          "Python API can only require them or not ask), so gRPC callers authenticate with basic "
                          "auth or a bearer token; RequireAndVerifyClientCert makes both ports require them")
        if self.config.min_version == "TLS13":
            limits.append("min_version TLS13: the gRPC port accepts TLS 1.2 and 1.3 (gRPC's Python API has no "
                          "minimum version); the HTTPS port accepts TLS 1.3 only")
        return limits

    def current(self) -> _Loaded:
        """The certificates new connections get, loaded again first if the files changed. Never waits
        for another thread's check and never raises: a handshake must not fail for a rotation."""
        if time.monotonic() - self._checked >= self._recheck_s and self._lock.acquire(blocking=False):
            try:
                self._checked = time.monotonic()
                self._reload_if_changed()
            except Exception:  # a bug here must not break handshakes; the old certificate stays
                log.exception("TLS: checking %s for new certificates failed", self._source)
            finally:
                self._lock.release()
        return self._loaded

    # ------------------------------------------------------------------------------ files

    @property
    def files(self) -> list[tuple[str, str]]:
        """(field, path) of every file this configuration reads."""
        named = [("cert_file", self.config.cert_file), ("key_file", self.config.key_file),
                 ("client_ca_file", self.config.client_ca_file)]
        return [(name, path) for name, path in named if path]

    def _reload_if_changed(self) -> None:
        try:
            stamps = self._stat()
            if stamps == self._stamps:
                return
            self._stamps = stamps  # recorded before reading: a change while loading is seen next time
            loaded = self._load(self._loaded.generation + 1)
        except CertificateError as exc:
            if str(exc) != self._problem:
                log.warning("TLS: keeping the certificate loaded before: %s; the files are read again when they "
                            "change", exc)
            self._problem = str(exc)
            return
        self._loaded, self._problem = loaded, None
        log.info("TLS: loaded new certificates from %s", ", ".join(path for _, path in self.files))

    def _stat(self) -> tuple:
        stamps = []
        for name, path in self.files:
            try:
                st = os.stat(path)
            except OSError as exc:
                raise self._error(name, f'cannot read "{path}": {exc.strerror}') from exc
            stamps.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(stamps)

    def _load(self, generation: int) -> _Loaded:
        config = self.config
        cert = self._read("cert_file", config.cert_file, _CERTIFICATE)
        key = self._read("key_file", config.key_file, _PRIVATE_KEY)
        ca = self._read("client_ca_file", config.client_ca_file, _CERTIFICATE) if config.client_ca_file else None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = _MIN_VERSIONS[config.min_version]
        try:
            context.load_cert_chain(config.cert_file, config.key_file, password=self._no_password)
        except ssl.SSLError as exc:
            raise self._chain_error(exc) from exc
        if ca is not None:
            try:
                context.load_verify_locations(cadata=ca.decode("ascii", errors="replace"))
            except ssl.SSLError as exc:
                raise self._error("client_ca_file", f'"{config.client_ca_file}" holds no usable CA certificate: '
                                                    f"{exc.reason or exc}") from exc
        context.verify_mode = _VERIFY_MODES[config.client_auth_type]
        asks = config.requires_client_cert
        return _Loaded(context, grpc.ssl_server_certificate_configuration([(key, cert)], ca if asks else None),
                       generation)

    def _read(self, name: str, path: str, marker: bytes) -> bytes:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise self._error(name, f'cannot read "{path}": {exc.strerror}') from exc
        if marker in data:
            return data
        if marker == _CERTIFICATE and _PRIVATE_KEY in data:
            raise self._error(name, f'"{path}" holds a private key, not a certificate (are cert_file and key_file '
                                    "swapped?)")
        if marker == _PRIVATE_KEY and _CERTIFICATE in data:
            raise self._error(name, f'"{path}" holds a certificate, not a private key (are cert_file and key_file '
                                    "swapped?)")
        what = "PEM certificate (-----BEGIN CERTIFICATE-----)" if marker == _CERTIFICATE else \
            "PEM private key (-----BEGIN PRIVATE KEY-----)"
        raise self._error(name, f'"{path}" holds no {what}; a DER file converts with openssl x509 (or openssl '
                                "pkey) -inform der -in FILE -out FILE.pem")

    def _no_password(self) -> str:
        """load_cert_chain asks for a passphrase only for an encrypted key (else it would prompt on a tty)."""
        raise self._error("key_file", f'"{self.config.key_file}" is encrypted: Flamewatch needs the key without '
                                      "a passphrase (openssl pkey -in KEY -out KEY.plain; keep it readable only by "
                                      "the user Flamewatch runs as)")

    def _chain_error(self, exc: ssl.SSLError) -> CertificateError:
        cert, key = self.config.cert_file, self.config.key_file
        if exc.reason == "KEY_VALUES_MISMATCH":
            return self._error("key_file", f'"{key}" is not the private key of the certificate in "{cert}": give '
                                           "the key the certificate was made for")
        return self._error("cert_file", f'cannot use "{cert}" with the key "{key}": {exc.reason or exc}')

    def _error(self, name: str, problem: str) -> CertificateError:
        return CertificateError(f"{self._source}: tls_server_config.{name}: {problem}")
