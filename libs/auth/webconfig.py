"""The web configuration file (`--web.config.file`): Prometheus's exporter-toolkit format, extended with
what a multi-tenant store needs.

    tls_server_config:             # exporter-toolkit's: HTTPS and gRPC over TLS on every port of the process
      cert_file: server.crt
      key_file: server.key
      client_ca_file: ca.crt       # and client_auth_type: mTLS, clients show a certificate this CA signed
      client_auth_type: RequireAndVerifyClientCert
    basic_auth_users:              # exporter-toolkit's: user -> bcrypt hash of the password
      alice: $2y$10$...
    bearer_tokens:                 # Flamewatch's: name -> sha256 of the token (`flamewatch web hash-token`)
      ci: sha256:5e88489...
    access:                        # Flamewatch's: what each user, token or client certificate may do
      alice: {write: [team-a], read: [team-a, team-b]}
      grafana: {read: ["*"]}       # "*": every tenant
      ci: {write: [team-a], admin: true}
      collector: {write: ["*"]}    # a client certificate, by its subject's common name
    client:                        # Flamewatch's: how this process calls the other services, in the words
      basic_auth: {username: collector, password_file: collector.password}   # of Prometheus's scrape configs
      tls_config: {ca_file: ca.crt, cert_file: collector.crt, key_file: collector.key}

Without `access`, every user and token may do everything, as a Prometheus server with this file allows
(the file is then one Prometheus tools accept as it is). With it, each user and token must be listed,
and a client certificate is let in only under a common name it lists. The first tenant a credential may
write (or read) is its tenant when a request names none; `X-Scope-OrgID` chooses among the others.

Passwords are bcrypt hashes (`htpasswd -nBC 10 "" | tr -d ':\n'`, or `flamewatch web hash-password`);
bearer tokens are long random strings, so a sha256 of them is as safe as bcrypt and costs nothing per
request. Every problem is a `ConfigError` whose message starts with its YAML path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from flamewatch.clientconfig import (
    Authorization,
    BasicAuth,
    TLSConfig,
    check_exclusive,
    read_authorization,
    read_basic_auth,
    read_tls_config,
)
from flamewatch.configreader import (
    ConfigError,
    boolean,
    expect,
    fields_of,
    join_path,
    load_yaml,
    nonempty_string,
    optional,
    required,
)

ALL_TENANTS = "*"
CLIENT_AUTH_TYPES = ("NoClientCert", "RequestClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven",
                     "RequireAndVerifyClientCert")
_BCRYPT = re.compile(r"\$2[abxy]?\$\d\d\$[./A-Za-z0-9]{53}")
_SHA256 = re.compile(r"sha256:[0-9a-f]{64}")
_TENANT = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


@dataclass(frozen=True)
class Access:
    """The tenants a credential may read and write, in the order given (the first is its default), and
    whether it may manage what belongs to no tenant: shared debug information, maintenance, /metrics."""

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    admin: bool = False

    @staticmethod
    def everything() -> Access:
        return Access((ALL_TENANTS,), (ALL_TENANTS,), admin=True)


@dataclass(frozen=True)
class TLSServerConfig:
    cert_file: str
    key_file: str
    client_ca_file: str | None = None
    client_auth_type: str = "NoClientCert"
    min_version: str = "TLS12"

    @property
    def verifies_clients(self) -> bool:
        return self.client_auth_type in ("VerifyClientCertIfGiven", "RequireAndVerifyClientCert")

    @property
    def requires_client_cert(self) -> bool:
        return self.client_auth_type in ("RequireAnyClientCert", "RequireAndVerifyClientCert")


@dataclass(frozen=True)
class ClientConfig:
    """What this process shows when it calls another Flamewatch service (collector -> ingester, querier ->
    symbolizer): a credential (`basic_auth` or `authorization`) and TLS settings (`tls_config`)."""

    basic_auth: BasicAuth | None = None
    authorization: Authorization | None = None
    tls: TLSConfig | None = None


@dataclass(frozen=True)
class WebConfig:
    tls: TLSServerConfig | None = None
    users: Mapping[str, bytes] = field(default_factory=dict)  # name -> bcrypt hash
    tokens: Mapping[str, bytes] = field(default_factory=dict)  # sha256 digest of the token -> name
    access: Mapping[str, Access] | None = None  # None: every credential may do everything
    client: ClientConfig = field(default_factory=ClientConfig)
    source: str = "<string>"

    @property
    def authenticates(self) -> bool:
        """Whether requests must carry a credential (a password, a token or a verified certificate)."""
        return bool(self.users or self.tokens or (self.tls and self.tls.verifies_clients and self.access))

    def access_of(self, name: str) -> Access | None:
        if self.access is None:
            return Access.everything()
        return self.access.get(name)


def load_web_config(path: str) -> WebConfig:
    """Read and check the file; relative file names in it are taken from the file's own directory."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the web configuration file: {exc.strerror}", path) from exc
    try:
        return parse_web_config(text, str(Path(path).resolve().parent), source=path)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}", path) from exc


def parse_web_config(text: str, base_dir: str = ".", source: str = "<string>") -> WebConfig:
    document = load_yaml(text)
    if document is None:
        return WebConfig(source=source)
    fields = fields_of(document, "", ("tls_server_config", "basic_auth_users", "bearer_tokens", "access",
                                      "client", "http_server_config"))
    tls = optional(fields, "tls_server_config", "", lambda v, p: _tls(v, p, base_dir), None)
    users = optional(fields, "basic_auth_users", "", _users, {})
    tokens = optional(fields, "bearer_tokens", "", _tokens, {})
    access = optional(fields, "access", "", _access, None)
    client = optional(fields, "client", "", lambda v, p: _client(v, p, base_dir), ClientConfig())
    optional(fields, "http_server_config", "", _http_server_config, None)
    if access is not None:
        _check_listed(users, {name for name in tokens.values()}, access)
    clashes = sorted(set(users) & set(tokens.values()))
    if clashes:
        raise ConfigError(f'bearer_tokens.{clashes[0]}: "{clashes[0]}" is also a user of basic_auth_users: give '
                          "each credential a name of its own, access is given by name")
    if tls is None and access is not None and not users and not tokens:
        raise ConfigError("access: names who may do what, but there is no credential to check: add "
                          "basic_auth_users, bearer_tokens or tls_server_config with client certificates")
    return WebConfig(tls, users, tokens, access, client, source)


def _tls(value: Any, path: str, base_dir: str) -> TLSServerConfig:
    fields = fields_of(value, path, ("cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version",
                                     "max_version", "cipher_suites", "curve_preferences",
                                     "prefer_server_cipher_suites"))
    unsupported = sorted(set(fields) & {"max_version", "cipher_suites", "curve_preferences",
                                        "prefer_server_cipher_suites"})
    if unsupported:
        raise ConfigError(f"{join_path(path, unsupported[0])}: not supported; Flamewatch uses TLS 1.2 or later with "
                          "Python's default ciphers: remove it")
    min_version = optional(fields, "min_version", path, nonempty_string, "TLS12")
    if min_version not in ("TLS12", "TLS13"):
        raise ConfigError(f'{join_path(path, "min_version")}: expected TLS12 or TLS13, got "{min_version}"')
    auth_type = optional(fields, "client_auth_type", path, nonempty_string, "NoClientCert")
    if auth_type not in CLIENT_AUTH_TYPES:
        raise ConfigError(f'{join_path(path, "client_auth_type")}: expected one of {", ".join(CLIENT_AUTH_TYPES)}, '
                          f'got "{auth_type}"')
    ca = optional(fields, "client_ca_file", path, nonempty_string, None)
    if auth_type in ("VerifyClientCertIfGiven", "RequireAndVerifyClientCert") and ca is None:
        raise ConfigError(f"{join_path(path, 'client_auth_type')}: {auth_type} needs client_ca_file, the CA that "
                          "signs the clients' certificates")
    if auth_type == "RequireAnyClientCert" and ca is None:
        # Go takes a certificate it does not verify; Python's ssl and gRPC verify every one they ask for.
        raise ConfigError(f"{join_path(path, 'client_auth_type')}: RequireAnyClientCert needs client_ca_file here: "
                          "Flamewatch's TLS checks every client certificate it asks for, so name the CA that signs "
                          "them (or use NoClientCert)")

    def file(key: str, name: str | None) -> str | None:
        if name is None:
            return None
        resolved = Path(base_dir, name)
        if not resolved.is_file():
            raise ConfigError(f'{join_path(path, key)}: no such file "{resolved}"')
        return str(resolved)

    return TLSServerConfig(cert_file=file("cert_file", required(fields, "cert_file", path, nonempty_string)),
                           key_file=file("key_file", required(fields, "key_file", path, nonempty_string)),
                           client_ca_file=file("client_ca_file", ca), client_auth_type=auth_type,
                           min_version=min_version)


def _client(value: Any, path: str, base_dir: str) -> ClientConfig:
    fields = fields_of(value, path, ("basic_auth", "authorization", "tls_config"))
    check_exclusive(fields, path, "basic_auth", "authorization")
    basic = optional(fields, "basic_auth", path, read_basic_auth, None)
    authorization = optional(fields, "authorization", path, read_authorization, None)
    tls = optional(fields, "tls_config", path, read_tls_config, None)

    def at(name: str) -> str:
        return str(Path(base_dir, name)) if name else ""

    if basic is not None:
        basic = replace(basic, password_file=at(basic.password_file))
    if authorization is not None:
        authorization = replace(authorization, credentials_file=at(authorization.credentials_file))
    if tls is not None:
        tls = replace(tls, ca_file=at(tls.ca_file), cert_file=at(tls.cert_file), key_file=at(tls.key_file))
    return ClientConfig(basic, authorization, tls)


def _named_hashes(value: Any, path: str, what: str, form: re.Pattern, problem: str) -> Iterator[tuple[str, str, str]]:
    """(name, hash, YAML path) of a mapping of names to hashes, each checked for its form."""
    for name, hashed in fields_of(value, path, None).items():
        where = join_path(path, name)
        _check_name(name, where)
        expect(hashed, str, what, where)
        if not form.fullmatch(hashed):
            raise ConfigError(f"{where}: {problem}")
        yield name, hashed, where


def _users(value: Any, path: str) -> dict[str, bytes]:
    problem = ("not a bcrypt hash (expected $2y$10$ and 53 characters, as htpasswd -nBC 10 or flamewatch web "
               "hash-password make): the file holds hashes, never passwords")
    return {name: hashed.encode() for name, hashed, _ in _named_hashes(value, path, "a bcrypt hash", _BCRYPT, problem)}


def _tokens(value: Any, path: str) -> dict[bytes, str]:
    problem = ('expected "sha256:" and 64 lowercase hex digits (flamewatch web hash-token makes it): the file holds '
               "hashes of tokens, never the tokens")
    tokens: dict[bytes, str] = {}
    for name, hashed, where in _named_hashes(value, path, "a token hash", _SHA256, problem):
        digest = bytes.fromhex(hashed.removeprefix("sha256:"))
        if digest in tokens:
            raise ConfigError(f"{where}: the same token as bearer_tokens.{tokens[digest]}: give each its own")
        tokens[digest] = name
    return tokens


def _access(value: Any, path: str) -> dict[str, Access]:
    out = {}
    for name, entry in fields_of(value, path, None).items():
        where = join_path(path, name)
        _check_name(name, where)
        fields = fields_of(entry, where, ("read", "write", "admin"))
        out[name] = Access(read=optional(fields, "read", where, _tenants, ()),
                           write=optional(fields, "write", where, _tenants, ()),
                           admin=optional(fields, "admin", where, boolean, False))
    return out


def _tenants(value: Any, path: str) -> tuple[str, ...]:
    expect(value, list, "a list of tenants", path)
    tenants = []
    for i, tenant in enumerate(value):
        where = f"{path}[{i}]"
        expect(tenant, str, "a tenant", where)
        if tenant != ALL_TENANTS and (not _TENANT.fullmatch(tenant) or tenant in (".", "..")):
            raise ConfigError(f'{where}: invalid tenant "{tenant}": use 1-64 characters of letters, digits, "_", "." '
                              'or "-", or "*" for every tenant')
        tenants.append(tenant)
    return tuple(tenants)


def _http_server_config(value: Any, path: str) -> None:
    """exporter-toolkit's HTTP/2 and header switches: accepted so a Prometheus file loads, and checked."""
    fields = fields_of(value, path, ("http2", "headers"))
    if "http2" in fields:
        boolean(fields["http2"], join_path(path, "http2"))


def _check_name(name: str, path: str) -> None:
    if not name or ":" in name or any(c.isspace() or not c.isprintable() for c in name):
        raise ConfigError(f'{path}: invalid name "{name}": no colons, spaces or control characters')


def _check_listed(users: Mapping[str, bytes], token_names: set[str], access: Mapping[str, Access]) -> None:
    for name in sorted(users):
        if name not in access:
            raise ConfigError(f"basic_auth_users.{name}: not in access: say which tenants {name} may read and write, "
                              f"e.g. access: {{{name}: {{read: [team-a]}}}}")
    for name in sorted(token_names):
        if name not in access:
            raise ConfigError(f"bearer_tokens.{name}: not in access: say which tenants {name} may read and write")
