"""How a client authenticates and checks the server, in Prometheus's words: `basic_auth`,
`authorization` and `tls_config`, as its scrape configs write them.

The collector's scrape configs use them for targets; the web configuration file's `client` section uses
them for the calls between Flamewatch's own services. The readers check a value at its YAML path
(`flamewatch.configreader`); `authorization_header`, `ssl_context` and `server_name_hooks` turn the
result into what a client sends and trusts. Secret files are read when the client is made, so a rotated secret is picked
up by the next client.
"""

from __future__ import annotations

import base64
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flamewatch.configreader import (
    ConfigError,
    boolean,
    fields_of,
    join_path,
    nonempty_string,
    optional,
    required,
    string,
)


@dataclass(frozen=True)
class BasicAuth:
    username: str
    password: str = field(default="", repr=False)
    password_file: str = ""


@dataclass(frozen=True)
class Authorization:
    """Sent as `Authorization: <type> <credentials>`."""

    type: str = "Bearer"
    credentials: str = field(default="", repr=False)
    credentials_file: str = ""


@dataclass(frozen=True)
class TLSConfig:
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    server_name: str = ""
    insecure_skip_verify: bool = False


def check_exclusive(fields: dict[str, Any], path: str, first: str, second: str) -> None:
    if first in fields and second in fields:
        raise ConfigError(f"{join_path(path, second)}: cannot be used together with {first}")


def read_basic_auth(value: Any, path: str) -> BasicAuth:
    fields = fields_of(value, path, ("username", "password", "password_file"))
    check_exclusive(fields, path, "password", "password_file")
    return BasicAuth(required(fields, "username", path, nonempty_string),
                     optional(fields, "password", path, string, ""),
                     optional(fields, "password_file", path, string, ""))


def read_authorization(value: Any, path: str) -> Authorization:
    fields = fields_of(value, path, ("type", "credentials", "credentials_file"))
    check_exclusive(fields, path, "credentials", "credentials_file")
    kind = optional(fields, "type", path, nonempty_string, "Bearer")
    if kind.lower() == "basic":
        raise ConfigError(f"{path}.type: use basic_auth for Basic authorization")
    return Authorization(kind, optional(fields, "credentials", path, string, ""),
                         optional(fields, "credentials_file", path, string, ""))


_TLS_FIELDS = ("ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify")


def read_tls_config(value: Any, path: str) -> TLSConfig:
    fields = fields_of(value, path, _TLS_FIELDS)
    files = {key: optional(fields, key, path, string, "") for key in _TLS_FIELDS[:4]}
    if bool(files["cert_file"]) != bool(files["key_file"]):
        given, missing = ("cert_file", "key_file") if files["cert_file"] else ("key_file", "cert_file")
        raise ConfigError(f"{join_path(path, missing)}: required when {given} is set")
    return TLSConfig(**files, insecure_skip_verify=optional(fields, "insecure_skip_verify", path, boolean, False))


def authorization_header(basic_auth: BasicAuth | None, authorization: Authorization | None) -> str | None:
    """The `Authorization` header value these settings send (secret files read now), or None."""
    if basic_auth is not None:
        password = basic_auth.password or _read(basic_auth.password_file)
        return "Basic " + base64.b64encode(f"{basic_auth.username}:{password}".encode()).decode()
    if authorization is not None:
        return f"{authorization.type} {authorization.credentials or _read(authorization.credentials_file)}"
    return None


def ssl_context(tls: TLSConfig | None) -> ssl.SSLContext | bool:
    """What an HTTP client trusts and shows: True (the system's CAs) without settings."""
    if tls is None:
        return True
    context = ssl.create_default_context(cafile=tls.ca_file or None)
    if tls.cert_file:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    if tls.insecure_skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def server_name_hooks(tls: TLSConfig | None) -> dict[str, list]:
    """httpx.AsyncClient event hooks that check the server's certificate for `server_name` (and send it as
    SNI) instead of the URL's host, as Prometheus does: a target or service reached by IP address."""
    extensions = server_name_extensions(tls)
    if not extensions:
        return {}

    async def name_the_server(request) -> None:
        request.extensions.update(extensions)

    return {"request": [name_the_server]}


def server_name_extensions(tls: TLSConfig | None) -> dict[str, str]:
    """The same for one httpx request (`extensions=`)."""
    return {"sni_hostname": tls.server_name} if tls is not None and tls.server_name else {}


def _read(path: str) -> str:
    return Path(path).read_text().strip() if path else ""
