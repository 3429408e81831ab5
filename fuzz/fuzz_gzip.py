"""Fuzz target: the bounded gzip inflater that stops gzip bombs (`flamewatch.pprof.decompress`).

An input is a 3-byte output limit (0 to 16 MiB) followed by the data. Expected: `PprofError`
(`DecodeError` for bad gzip, `LimitExceeded` past the limit).

Checks, against Python's own gzip reader (which follows RFC 1952: a file is one or more members,
zero padding allowed after the last) read up to one byte past the limit:
- never more than the limit comes out; data that is not gzip comes back unchanged;
- what we accept, the reference reads to the same bytes; what we reject as invalid, it rejects too
  (except reserved header flags, which it ignores); we refuse as too large only what inflates past
  the limit.
"""

from __future__ import annotations

import io
import sys
import zlib

import atheris
from harness import check, main

# The reference reader is instrumented too, so inputs that reach its header and member paths are kept.
with atheris.instrument_imports(include=["flamewatch", "gzip"]):
    import gzip

    from flamewatch.pprof import DecodeError, LimitExceeded, PprofError, decompress

EXPECTED = (PprofError,)


def target(data: bytes) -> None:
    limit, data = int.from_bytes(data[:3], "little"), data[3:]
    gzipped = data.startswith(b"\x1f\x8b")
    reference = _reference(data, limit) if gzipped else data
    try:
        out = decompress(data, limit)
    except LimitExceeded:
        # Corrupt data past the limit is refused as too large: we stop reading before the corruption.
        check(not isinstance(reference, bytes) or len(reference) > limit, "refused as too large, but it is not")
        raise
    except DecodeError as exc:
        # Python's reader ignores reserved header flag bits; RFC 1952 (and zlib) say to reject them.
        check(not isinstance(reference, bytes) or len(reference) > limit or "header flags" in str(exc),
              "refused data gzip reads fine")
        raise
    check(len(out) <= limit, f"{len(out)} bytes came out, the limit is {limit}")
    if not gzipped:
        check(out == data, "data that is not gzip was changed")
        return
    check(isinstance(reference, bytes), f"accepted data gzip rejects: {reference}")
    check(out == reference, "inflated bytes differ from gzip's")


def _reference(data: bytes, limit: int) -> bytes | Exception:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            return f.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        return exc


if __name__ == "__main__":
    main("gzip", target, EXPECTED)
    sys.exit(0)
