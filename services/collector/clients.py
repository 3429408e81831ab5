"""One HTTP client per job, carrying the job's authentication and TLS settings."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx

from flamewatch.scrapeconfig import ScrapeConfig, TLSConfig


def client_for(job: ScrapeConfig) -> httpx.AsyncClient:
    headers = {"User-Agent": "flamewatch-collector"}
    auth = None
    if job.basic_auth:
        password = job.basic_auth.password or _read(job.basic_auth.password_file)
        auth = httpx.BasicAuth(job.basic_auth.username, password)
    if job.authorization:
        credentials = job.authorization.credentials or _read(job.authorization.credentials_file)
        headers["Authorization"] = f"{job.authorization.type} {credentials}"
    return httpx.AsyncClient(auth=auth, headers=headers, verify=_tls(job.tls_config), follow_redirects=True,
                             limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))


def _read(path: str) -> str:
    return Path(path).read_text().strip() if path else ""


def _tls(tls: TLSConfig | None) -> ssl.SSLContext | bool:
    if tls is None:
        return True
    context = ssl.create_default_context(cafile=tls.ca_file or None)
    if tls.cert_file:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    if tls.insecure_skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
