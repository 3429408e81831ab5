"""The symbolizer's settings, defaults in one place; `flamewatch.cli` builds them from flags."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SymbolizerConfig:
    grpc_address: str = ":4501"
    http_address: str = ":4500"
    debuginfod_urls: tuple[str, ...] = ()  # tried in order after the uploaded files
    debuginfod_timeout_s: float = 30.0
    negative_cache_s: float = 300.0  # a build ID no server has is not asked for again this long
    loaded_objects: int = 32  # symcaches kept open in memory
    max_upload_bytes: int = 2 << 30
