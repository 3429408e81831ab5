"""Where blocks live in the object store: `<tenant>/blocks/<level>/<yyyy>/<mm>/<dd>/<ulid>.parquet`."""

from __future__ import annotations

import time

LEVEL_FLUSH, LEVEL_HOUR, LEVEL_DAY = 0, 1, 2  # a flushed batch; compacted per hour; compacted per day


def block_key(tenant: str, level: int, min_time_ns: int, block_id: str) -> str:
    day = time.strftime("%Y/%m/%d", time.gmtime(min_time_ns // 10**9))
    return f"{tenant}/blocks/{level}/{day}/{block_id}.parquet"


def tenant_of(key: str) -> str:
    """The tenant whose block a key names (its first part)."""
    return key.split("/", 1)[0]
