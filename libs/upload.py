"""Push pprof files to an ingester's HTTP endpoint (`flamewatch upload`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

import httpx

from flamewatch.clientconfig import server_name_extensions, ssl_context
from flamewatch.labels.labelset import parse_label_args
from flamewatch.rpc.channels import CREDENTIAL_HINT, http_headers, identity

# Sent with each file; the server takes a hint for the profile's name from it (`flamewatch.pprof.naming`).
FILE_NAME_HEADER = "X-Flamewatch-File-Name"


class UploadError(Exception):
    """A file could not be read or the server refused it."""


def base_url(url: str) -> str:
    """The server's base URL; a URL given with its /ingest path works too."""
    return url.rstrip("/").removesuffix("/ingest")


def upload_files(files: Sequence[Path], url: str, labels: Sequence[str], tenant: str | None, name: str | None,
                 timeout: float) -> Iterator[str]:
    """Uploads with this process's client identity (`rpc.channels`): its credential and TLS."""
    base = parse_label_args(labels)
    me = identity()
    with httpx.Client(base_url=base_url(url), timeout=timeout, headers=http_headers(),
                      verify=ssl_context(me.tls)) as client:
        for path in files:
            yield _upload_one(client, path, base, tenant, name)


def _upload_one(client: httpx.Client, path: Path, labels: dict, tenant: str | None, name: str | None) -> str:
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise UploadError(f"{path}: {exc.strerror}") from exc
    params = {**labels, **({"__name__": name} if name else {})}
    try:
        headers = {FILE_NAME_HEADER: quote(path.name), **({"X-Scope-OrgID": tenant} if tenant else {})}
        response = client.post("/ingest", params=params, content=body, headers=headers,
                               extensions=server_name_extensions(identity().tls))
    except httpx.HTTPError as exc:
        raise UploadError(f"{path}: cannot reach {client.base_url}: {exc}") from exc
    if response.status_code == 404:
        where = str(client.base_url).rstrip("/")
        raise UploadError(f"{path}: {where} has no /ingest endpoint (404): --url should be the base URL of an "
                          "ingester or of flamewatch all, e.g. http://127.0.0.1:4100")
    if response.status_code == 401:
        raise UploadError(f"{path}: {client.base_url} asks for credentials (401): {error_message(response)}; "
                          f"{CREDENTIAL_HINT}")
    if response.status_code == 403:
        raise UploadError(f"{path}: {client.base_url} refused this credential (403): {error_message(response)}")
    if response.status_code != 200:
        raise UploadError(f"{path}: refused ({response.status_code}): {error_message(response)}")
    result = response.json()
    return f"{path}: stored {result['profiles']} profiles ({result['bytes']} bytes)"


def error_message(response: httpx.Response) -> str:
    """The error a Flamewatch server answered with (its JSON `error`, else the start of the body)."""
    try:
        return response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return response.text.strip()[:500]
