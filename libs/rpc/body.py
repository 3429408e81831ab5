"""Reading an HTTP request body up to a size limit, the one way every push endpoint reads one.

A body whose `Content-Length` already says it is too large is refused before a byte of it is read;
otherwise it is read as a stream and refused as soon as it passes the limit, so an oversize push never
sits whole in memory. Decompression, where a format allows it, is the caller's (with its own limit).
"""

from __future__ import annotations

from starlette.requests import Request

from flamewatch.pprof import LimitExceeded


async def read_limited(request: Request, limit: int) -> bytes:
    """The raw body; LimitExceeded (413 / RESOURCE_EXHAUSTED) naming the limit when it is larger."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _too_large(limit)
    return bytes(body)


def _too_large(limit: int) -> LimitExceeded:
    return LimitExceeded(f"request body is larger than {limit} bytes, the limit")
