"""The frontend: the web UI, and `/api/*` passed on to the querier so a browser needs one address.

Inputs: the UI build (`index.html` and `assets/`, made by the UI's build), and the querier's HTTP API.
Outputs: `/` (the UI, or a page pointing at the API while no UI is built), `/assets/*`, and `/api/*`
proxied with its query string and tenant header (`/api/v1/targets` to the collectors when they are given).
In `flamewatch all` the API is served by the same process, so only the UI routes are mounted.
"""

from __future__ import annotations

import asyncio
import re
import urllib.parse
from collections.abc import Sequence
from pathlib import Path

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response

from flamewatch.rpc.auth import AnyCaller
from flamewatch.rpc.channels import http_headers
from flamewatch.rpc.errors import NotFoundError

# The user's credential goes on with the request: the querier (and collector) decide what it may see. A
# request without one (a frontend that lets its users in by their client certificates) goes on with
# the frontend's own (`client` of the web configuration file); its TLS client certificate is shown always.
_FORWARDED_HEADERS = ("x-scope-orgid", "authorization", "accept", "content-type")
# Only what the querier answers, which the frontend passes on in every mode: the scrape targets are
# the collector's (its own address when split), so the page names them without a link.
_NO_UI = """<!doctype html><title>Flamewatch</title>
<h1>Flamewatch</h1>
<p>The web UI is not built in this installation. The query API answers under <code>/api/v1/</code>:
<a href="/api/v1/profile_types">profile types</a>, <a href="/api/v1/labels">labels</a>,
<a href="/api/v1/series">series</a>, and
<code>/api/v1/query?query=&lt;profile type&gt;{selector}&amp;format=flamegraph|top|tree|pprof</code>.
Scrape targets and their health are at the collector's <code>/api/v1/targets</code>.</p>
"""


def ui_router(ui_dir: Path | None) -> APIRouter:
    router = APIRouter(dependencies=[AnyCaller])
    index = ui_dir / "index.html" if ui_dir else None

    @router.get("/", include_in_schema=False)
    def home() -> Response:
        if index and index.is_file():
            return FileResponse(index)
        return HTMLResponse(_NO_UI)

    @router.get("/assets/{path:path}", include_in_schema=False)
    def asset(path: str) -> Response:
        root = (ui_dir / "assets").resolve() if ui_dir else None
        target = (root / path).resolve() if root else None
        if target is None or not target.is_relative_to(root) or not target.is_file():
            raise NotFoundError(f"no UI asset {path!r}")
        return FileResponse(target)

    return router


def api_proxy_router(querier_url: str, client: httpx.AsyncClient) -> APIRouter:
    """`/api/*` passed on to the querier, and nothing else of it: see `upstream_api_path`."""
    router = APIRouter(dependencies=[AnyCaller])
    base = querier_url.rstrip("/")

    @router.api_route("/api/{path:path}", methods=["GET", "POST"], include_in_schema=False)
    async def proxy(path: str, request: Request) -> Response:
        return await _forward(client, base + upstream_api_path(request.scope.get("raw_path") or b""), request)

    return router


# Percent-escapes that could turn into a path separator or a dot segment after one more decoding
# (by us, by httpx or by the querier): `%2F` `/`, `%5C` `\`, `%2E` `.`, and `%25` `%` (double encoding).
_DISGUISED = re.compile(r"%(2f|5c|2e|25)", re.IGNORECASE)


def upstream_api_path(raw_path: bytes) -> str:
    """The querier path for a request's raw path, which must be a plain path under `/api/`.

    The querier also serves `/metrics` and `/debug/pprof/*`, which a browser-facing frontend must not
    expose: `/api/..%2Fmetrics` decodes to `/api/../metrics`, and a client (httpx included) resolves
    the dot segment to `/metrics`. So a path holding an escaped separator, backslash or dot, or a `.` or
    `..` segment, is refused, and the rest is passed on re-escaped segment by segment."""
    text = raw_path.decode("latin-1")
    problem = _path_problem(text)
    if problem:
        raise ValueError(f"refused path {text[:200]!r}: {problem}; the frontend passes on only plain paths "
                         "under /api/, such as /api/v1/query")
    segments = urllib.parse.unquote(text, errors="strict").split("/")
    return "/".join(urllib.parse.quote(s, safe="!$&'()*+,;=:@-._~") for s in segments)


def _path_problem(path: str) -> str | None:
    if _DISGUISED.search(path):
        return "it holds an escaped '/', '\\', '.' or '%'"
    decoded = urllib.parse.unquote(path)
    if "\\" in decoded or "\x00" in decoded:
        return "it holds a backslash or a NUL"
    segments = decoded.split("/")
    if any(s in (".", "..") for s in segments):
        return "it holds a '.' or '..' segment"
    if segments[:2] != ["", "api"] or len(segments) < 3:
        return "it is not under /api/"
    return None


def collector_proxy_router(collector_urls: Sequence[str], client: httpx.AsyncClient) -> APIRouter:
    """`/api/v1/targets` of every collector (mounted before the querier's `/api/*`).

    One collector's answer is passed on as it is. Several (the shards of a collector set, each scraping
    its part of the targets) are asked at once and their targets listed together; a shard that does not
    answer is named in `warnings`, as Prometheus's API reports a partial answer, and the others still show.
    """
    router = APIRouter(dependencies=[AnyCaller])
    urls = [f"{url.rstrip('/')}/api/v1/targets" for url in collector_urls]

    @router.get("/api/v1/targets", include_in_schema=False)
    async def targets(request: Request) -> Response:
        if len(urls) == 1:
            return await _forward(client, urls[0], request)
        answers = await asyncio.gather(*(_targets(client, url, request) for url in urls))
        active = sorted((t for found, _ in answers for t in found), key=lambda t: (t["scrapePool"], t["scrapeUrl"]))
        body: dict = {"status": "success", "data": {"activeTargets": active}}
        warnings = [warning for _, warning in answers if warning]
        if warnings:
            body["warnings"] = warnings
        return JSONResponse(body)

    return router


async def _targets(client: httpx.AsyncClient, url: str, request: Request) -> tuple[list[dict], str | None]:
    """One collector's active targets, or none and why."""
    try:
        upstream = await client.get(url, params=request.query_params, headers=_upstream_headers(request))
        upstream.raise_for_status()
        return upstream.json()["data"]["activeTargets"], None
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        return [], f"the collector at {url} did not list its targets: {exc or type(exc).__name__}"


def _upstream_headers(request: Request) -> dict[str, str]:
    headers = {k.lower(): v for k, v in request.headers.items() if k.lower() in _FORWARDED_HEADERS}
    if "authorization" not in headers:
        headers.update({k.lower(): v for k, v in http_headers().items()})
    return headers


async def _forward(client: httpx.AsyncClient, url: str, request: Request) -> Response:
    headers = _upstream_headers(request)
    upstream = await client.request(request.method, url, params=request.query_params, headers=headers,
                                    content=await request.body())
    kept = {k: v for k, v in upstream.headers.items() if k.lower() in ("content-type", "content-disposition")}
    return Response(upstream.content, status_code=upstream.status_code, headers=kept)
