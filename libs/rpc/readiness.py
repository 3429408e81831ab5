"""Readiness: whether this process can do its work now, judged by the dependencies it needs.

`/readyz` answers from a `Readiness`: named checks, each raising when its dependency cannot be used,
run together at most once per `ttl_s` so frequent probes cost little and an outage or its end shows
within seconds. Liveness (`/healthz`) never looks at dependencies: a process that is up but cannot
reach Postgres should be taken out of rotation, not restarted.

What each service needs:

    ingester, querier, all   Postgres and the object store (every push and query uses both)
    ingester, all            room on the local disks they write to (the filesystem object store's
                             directory, the embedded Postgres' data directory): a push on a full disk
                             can only fail, so the process leaves rotation until space is freed. The
                             querier only reads: a full disk does not stop it answering
    frontend                 a querier that answers (its /healthz): the querier reports its own storage,
                             and a frontend taken out of rotation would hide the querier's error messages
    collector                nothing: scrapes go on and queue while the ingester is away, and what it
                             serves (targets, reload) does not need the ingester
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flamewatch.storage.objstore import ObjectStore
    from flamewatch.storage.postgres import Database

log = logging.getLogger(__name__)

TTL_S = 2.0
HTTP_TIMEOUT_S = 2.0
MiB = 1 << 20
# A disk with less free space than this (or than 1% of its size, whichever is smaller: a small disk
# would otherwise never be ready) counts as full: a block flush (up to 8 MiB) would likely not fit.
MIN_FREE_BYTES = 16 * MiB
_PROBE = b"\0" * 4096  # one page, so the probe asks the filesystem for a block


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[], None]  # raises when the dependency cannot be used


class Readiness:
    """Callable: the problems that keep the process from being ready, empty when it is ready."""

    def __init__(self, checks: Sequence[Check], ttl_s: float = TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._checks, self._ttl, self._clock = list(checks), ttl_s, clock
        self._lock = threading.Lock()
        self._problems: list[str] = []
        self._checked_at = float("-inf")

    def __call__(self) -> list[str]:
        with self._lock:
            if self._clock() - self._checked_at >= self._ttl:
                self._record([p for check in self._checks if (p := _problem(check)) is not None])
                self._checked_at = self._clock()
            return list(self._problems)

    def _record(self, problems: list[str]) -> None:
        if problems and problems != self._problems:
            log.warning("not ready: %s", "; ".join(problems))
        elif self._problems and not problems:
            log.info("ready again")
        self._problems = problems


def _problem(check: Check) -> str | None:
    try:
        check.run()
    except Exception as exc:  # noqa: BLE001 - any failure of a dependency means not ready, with its reason
        return f"{check.name}: {exc}"
    return None


def storage_readiness(store: ObjectStore, db: Database, disks: Sequence[str | Path] = ()) -> Readiness:
    """Ready while Postgres and the object store both answer and each of the local `disks` (directories
    this process writes to) has room (`disk_has_room`)."""
    checks = [Check("postgres", db.ping), Check("object store", store.ping)]
    directories = dict.fromkeys(Path(d).absolute() for d in disks)  # absolute, to name them in messages
    return Readiness(checks + [Check("data disk", disk_has_room(d)) for d in directories])


def disk_has_room(directory: Path, min_free_bytes: int = MIN_FREE_BYTES) -> Callable[[], None]:
    """A check that raises when `directory`'s filesystem has less than `min_free_bytes` (or 1% of its
    size, if less) free, or refuses a small write (no free inodes, mounted read-only, quota)."""

    def check() -> None:
        stat = os.statvfs(directory)
        free, size = stat.f_bavail * stat.f_frsize, stat.f_blocks * stat.f_frsize
        threshold = min(min_free_bytes, size // 100)
        if free < threshold:
            raise OSError(f"{directory} is full: {_size(free)} free of {_size(size)} (under {_size(threshold)}); "
                          "free some space on it")
        try:
            with tempfile.TemporaryFile(dir=directory) as probe:  # unnamed where the OS allows (O_TMPFILE)
                probe.write(_PROBE)
                probe.flush()
        except OSError as exc:
            raise OSError(f"{directory} refuses writes: {exc.strerror or exc}") from exc

    return check


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def upstream_readiness(name: str, base_url: str) -> Readiness:
    """Ready while the service at `base_url` answers its liveness check (over TLS with the process's
    client identity, as its other calls to the service)."""
    import httpx  # here, not at the top: only the frontend checks an upstream, and `cli` imports this module

    from flamewatch.clientconfig import server_name_extensions, ssl_context
    from flamewatch.rpc.channels import identity

    url = base_url.rstrip("/") + "/healthz"
    verify, extensions = ssl_context(identity().tls), server_name_extensions(identity().tls)

    def answers() -> None:
        try:
            with httpx.Client(timeout=HTTP_TIMEOUT_S, verify=verify) as client:
                response = client.get(url, extensions=extensions)
        except httpx.HTTPError as exc:
            raise ConnectionError(f"{url} unreachable: {exc}") from exc
        if response.status_code != 200:
            raise ConnectionError(f"{url} answered {response.status_code}")

    return Readiness([Check(name, answers)])


def no_dependencies() -> Readiness:
    return Readiness([])
