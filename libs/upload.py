"""Push pprof files to an ingester's HTTP endpoint (`flamewatch upload`)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx

from flamewatch.labels.labelset import parse_label_args

# Go's profile endpoints, as they usually appear in saved file names.
_NAMES = {"cpu": "process_cpu", "profile": "process_cpu", "heap": "memory", "allocs": "memory",
          "goroutine": "goroutine", "mutex": "mutex", "block": "block"}


class UploadError(Exception):
    """A file could not be read or the server refused it."""


def name_from_file(path: Path) -> str | None:
    """process_cpu for cpu.pb.gz, memory for heap.pprof, ...; None when the name says nothing."""
    words = re.split(r"[^a-z]+", path.name.lower())
    return next((_NAMES[w] for w in words if w in _NAMES), None)


def upload_files(files: Sequence[Path], url: str, labels: Sequence[str], tenant: str, name: str | None,
                 timeout: float) -> Iterator[str]:
    base = parse_label_args(labels)
    with httpx.Client(base_url=url.rstrip("/"), timeout=timeout) as client:
        for path in files:
            yield _upload_one(client, path, base, tenant, name or name_from_file(path))


def _upload_one(client: httpx.Client, path: Path, labels: dict, tenant: str, name: str | None) -> str:
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise UploadError(f"{path}: {exc.strerror}") from exc
    params = {**labels, **({"__name__": name} if name else {})}
    try:
        response = client.post("/ingest", params=params, content=body, headers={"X-Scope-OrgID": tenant})
    except httpx.HTTPError as exc:
        raise UploadError(f"{path}: cannot reach {client.base_url}: {exc}") from exc
    if response.status_code != 200:
        raise UploadError(f"{path}: refused ({response.status_code}): {_message(response)}")
    result = response.json()
    return f"{path}: stored {result['profiles']} profiles ({result['bytes']} bytes)"


def _message(response: httpx.Response) -> str:
    try:
        return response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return response.text.strip()[:500]
