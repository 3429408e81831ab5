"""Configuration shared by every process that stores or reads profiles: where the storage is.

Each service owns its own settings (`flamewatch.ingester.config`, `flamewatch.querier.config`,
`flamewatch.collector.config`, `flamewatch.symbolizer.config`); the command line (`flamewatch.cli`) turns
flags into these frozen dataclasses, and components never read the environment themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flamewatch.storage.objstore import FilesystemConfig, S3Config

if TYPE_CHECKING:
    from flamewatch.storage.postgres import PostgresConfig

MiB = 1 << 20


def _embedded_postgres() -> PostgresConfig:
    # imported when a config is made, not with this module: psycopg is heavy for `flamewatch --help`
    from flamewatch.storage.postgres import PostgresConfig

    return PostgresConfig(data_dir="./data/postgres")


@dataclass(frozen=True)
class StorageConfig:
    object_store: S3Config | FilesystemConfig = FilesystemConfig("./data/objects")
    postgres: PostgresConfig = field(default_factory=_embedded_postgres)
