"""What may name an object file to the symbolizer: a GNU build ID, or a file's base name.

Both come from clients (a profile's mappings, an upload) and become parts of object-store keys and of
debuginfod URLs, so they are checked before either is built: a build ID is hex of a length a
build-id note holds (ld writes 8 to 20 bytes; `--build-id=0x...` any, so 2 to 64 bytes are let in),
and a base name is one path segment a file system could hold. The querier asks only about objects
that pass (a mapping with a build ID that does not keeps its addresses), and the symbolizer refuses
the others with a `ValueError` (INVALID_ARGUMENT, HTTP 400).
"""

from __future__ import annotations

import re

MIN_HEX, MAX_HEX = 4, 128
MAX_NAME_BYTES = 255  # NAME_MAX of Linux file systems
_HEX = re.compile(rf"(?:[0-9a-fA-F]{{2}}){{{MIN_HEX // 2},{MAX_HEX // 2}}}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")


def build_id(text: str) -> str:
    """The build ID in lower case, or a ValueError naming what is wrong with it."""
    if not _HEX.fullmatch(text):  # fullmatch: `$` would let in a final "\n"
        raise ValueError(f"invalid build ID {_shown(text)}: expected {MIN_HEX} to {MAX_HEX} hex digits (an even "
                         "number, as a GNU build-id note holds bytes), e.g. 2d0e1f1a9c3b8e7d")
    return text.lower()


def is_build_id(text: str) -> bool:
    return _HEX.fullmatch(text) is not None


def base_name(file_name: str) -> str:
    """The file's base name (what follows its last `/`), or a ValueError naming what is wrong with it."""
    base = file_name.rsplit("/", 1)[-1]
    problem = _name_problem(base)
    if problem:
        raise ValueError(f"invalid file name {_shown(file_name)}: {problem}")
    return base


def is_file_name(file_name: str) -> bool:
    return not _name_problem(file_name.rsplit("/", 1)[-1])


def _name_problem(base: str) -> str:
    if not base:
        return "it ends without a base name (a file, not a folder, e.g. /usr/lib/libc.so.6)"
    if base in (".", ".."):
        return "its base name is . or .."
    if _CONTROL.search(base):
        return "its base name holds a control character or a backslash"
    if len(base.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"its base name is longer than {MAX_NAME_BYTES} bytes"
    return ""


def _shown(text: str) -> str:
    """The value as a message quotes it: repr (control characters visible), at most 80 characters."""
    return repr(text) if len(text) <= 80 else repr(text[:80]) + f" (… {len(text)} characters)"
