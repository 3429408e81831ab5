"""One HTTP client per job, carrying the job's authentication and TLS settings."""

from __future__ import annotations

import httpx

from flamewatch.clientconfig import authorization_header, server_name_hooks, ssl_context
from flamewatch.collector.config import ScrapeConfig


def client_for(job: ScrapeConfig) -> httpx.AsyncClient:
    headers = {"User-Agent": "flamewatch-collector"}
    authorization = authorization_header(job.basic_auth, job.authorization)
    if authorization:
        headers["Authorization"] = authorization
    return httpx.AsyncClient(headers=headers, verify=ssl_context(job.tls_config), follow_redirects=True,
                             limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
                             event_hooks=server_name_hooks(job.tls_config))
