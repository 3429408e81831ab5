"""What the symbolizer answers for one address: a frame (function, file, line), innermost first when
inlined functions stand at the address."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Frame:
    function: str
    file: str
    line: int
