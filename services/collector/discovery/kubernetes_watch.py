"""List and watch one kind of Kubernetes object in a thread, reporting what changed to the event loop.

An `Informer` lists its objects (one namespace, or all), then watches from the list's resourceVersion;
every watch request ends after `WATCH_TIMEOUT_S` and the next one resumes from the last version seen
(bookmarks included), so nothing is re-listed on the way. It lists again when the server answers 410
Gone (the version is too old) and every `resync_s`, which repairs anything a watch could have missed.
Any other failure, including a client that cannot be built (a bad kubeconfig), is logged at most once
per interval per informer and retried with exponential backoff; the discoverer keeps its last targets.

The thread posts `Replace(informer, objects)` and `Change(informer, deleted, obj)` with
`loop.call_soon_threadsafe`; the event loop owns all state. The thread never touches asyncio objects
otherwise and stops at its next chance once `stop` is set (a watch request in flight ends by its timeout).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import watch
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError as UrllibError

from flamewatch.ratelimitedlog import RateLimitedLog

__all__ = ["BACKOFF_MAX_S", "BACKOFF_MIN_S", "Change", "Informer", "Replace", "WATCH_TIMEOUT_S", "describe"]

logger = logging.getLogger(__name__)
_log = RateLimitedLog(logger)

WATCH_TIMEOUT_S = 30
BACKOFF_MIN_S = 0.5
BACKOFF_MAX_S = 30.0
GONE = 410


@dataclass(frozen=True)
class Replace:
    informer: Informer
    objects: list[Any]


@dataclass(frozen=True)
class Change:
    informer: Informer
    deleted: bool
    obj: Any


ListCall = tuple[Callable[..., Any], tuple[str, ...]]
"""A bound client method such as CoreV1Api.list_namespaced_pod and its positional arguments (the namespace).

Kept apart rather than partial'd: the watch finds the type of the objects from the method's annotation."""


class Informer:
    """One kind of object in one scope. `connect()` builds the list function (and may fail: it is retried)."""

    def __init__(self, name: str, kind: str, namespace: str, connect: Callable[[], ListCall],
                 selectors: dict[str, str], post: Callable[[Replace | Change], None], stop: threading.Event,
                 *, resync_s: float, backoff: tuple[float, float] = (BACKOFF_MIN_S, BACKOFF_MAX_S)):
        self.name, self.kind, self.namespace = name, kind, namespace  # namespace "": every namespace
        self._connect, self._selectors, self._post, self._stop = connect, selectors, post, stop
        self._resync_s, self._backoff = resync_s, backoff

    def __repr__(self) -> str:
        return f"Informer({self.name!r}, {self.kind}, namespace={self.namespace or '*'})"

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name=f"kubernetes {self.name} {self.kind}", daemon=True)
        thread.start()
        return thread

    def _run(self) -> None:
        delay = self._backoff[0]
        list_fn: ListCall | None = None
        version: str | None = None
        next_list = 0.0
        while not self._stop.is_set():
            try:
                list_fn = list_fn or self._connect()
                if version is None or time.monotonic() >= next_list:
                    version, next_list = self._list(list_fn), time.monotonic() + self._resync_s
                version = self._watch(list_fn, version, next_list)
                delay = self._backoff[0]
            except ApiException as exc:
                if exc.status == GONE:  # our version was compacted away: start over from a fresh list
                    version = None
                    continue
                delay = self._failed(exc, delay)
            except Exception as exc:  # unreachable server, bad kubeconfig, bad answer: retry, never die
                list_fn = None if isinstance(exc, ConfigException) else list_fn
                delay = self._failed(exc, delay)

    def _list(self, call: ListCall) -> str:
        method, args = call
        answer = method(*args, **self._selectors)
        if not self._stop.is_set():
            self._post(Replace(self, list(answer.items)))
        return answer.metadata.resource_version

    def _watch(self, call: ListCall, version: str, until: float) -> str:
        timeout = max(1, min(WATCH_TIMEOUT_S, int(until - time.monotonic())))
        method, args = call
        stream = watch.Watch()
        for event in stream.stream(method, *args, resource_version=version, timeout_seconds=timeout,
                                   allow_watch_bookmarks=True, _request_timeout=(10, timeout + 15),
                                   **self._selectors):
            if self._stop.is_set():
                stream.stop()
                break
            if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                self._post(Change(self, event["type"] == "DELETED", event["object"]))
        return stream.resource_version or version

    def _failed(self, exc: Exception, delay: float) -> float:
        scope = f"namespace {self.namespace}" if self.namespace else "all namespaces"
        _log.log(logging.WARNING, f"{self.name}:{self.kind}",
                 "kubernetes discovery %s: cannot list or watch %s in %s: %s; keeping the last targets, "
                 "retrying in %.1f s", self.name, self.kind, scope, describe(exc), delay)
        self._stop.wait(delay)
        return min(delay * 2, self._backoff[1])


def describe(exc: BaseException) -> str:
    """A one-line reason for a failure of the client: HTTP status, connection error or kubeconfig problem."""
    if isinstance(exc, ApiException):
        return f"the API server answered {exc.status} {exc.reason}".strip()
    if isinstance(exc, ConfigException):
        return f"bad Kubernetes client configuration: {exc}"
    if isinstance(exc, UrllibError):
        reason = getattr(exc, "reason", None) or exc
        return f"cannot reach the API server: {reason}"
    return f"{type(exc).__name__}: {exc}"


def poster(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Replace | Change],
           stop: threading.Event) -> Callable[[Replace | Change], None]:
    """Hands events from the informer threads to `queue` on `loop`; quiet once the loop is gone."""
    def post(event: Replace | Change) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, event)
        except RuntimeError:  # the loop closed under a thread that has not seen `stop` yet
            stop.set()
    return post
