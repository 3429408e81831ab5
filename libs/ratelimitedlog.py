"""Log a failure that repeats (every push while a disk is full) once per interval, not once per request.

The first occurrence of each kind is logged at once; later ones within `interval_s` are only counted,
and the next line logged for that kind says how many were held back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

INTERVAL_S = 10.0


class RateLimitedLog:
    def __init__(self, logger: logging.Logger, interval_s: float = INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logger, self._interval, self._clock = logger, interval_s, clock
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, int]] = {}  # kind -> (last logged at, held back since)

    def log(self, level: int, kind: str, message: str, *args: object) -> bool:
        """Log `message % args` unless `kind` was logged less than an interval ago; True if logged."""
        now = self._clock()
        with self._lock:
            logged_at, held = self._seen.get(kind, (float("-inf"), 0))
            if now - logged_at < self._interval:
                self._seen[kind] = (logged_at, held + 1)
                return False
            self._seen[kind] = (now, 0)
        if held:
            message += f" (and {held} more like it since the last time this was logged)"
        self._logger.log(level, message, *args)
        return True
