"""The time budget of one query (`--query.timeout`), kept in Python and in Postgres.

An engine call opens the budget (`bounded`); the loops that grow with the data (series, blocks, row
groups, matchers) call `check`, and every Postgres statement of the call runs with a
`statement_timeout` of what is left (`TimedDatabase`), so neither a slow selection in Postgres nor a
long merge in Python holds a worker past the budget. Running out raises `QueryTimeout`: gRPC
DEADLINE_EXCEEDED, HTTP 504, Connect `deadline_exceeded` (the mapping in `flamewatch.rpc.errors`).
The budget is a context variable, so it follows the call on its own thread and needs no parameter.
A query whose caller goes away (an HTTP client that disconnects, `flamewatch.rpc.disconnect`; the
querier that asked a piece of its merge) stops at its next check with `QueryCancelled`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

import psycopg

from flamewatch.rpc.errors import CancelledError, DeadlineExceededError
from flamewatch.storage.postgres import Database


class QueryTimeout(DeadlineExceededError):
    """A query ran out of its time budget and was stopped."""


@dataclass(frozen=True)
class _Budget:
    timeout_s: float
    until: float  # time.monotonic()
    cancelled: threading.Event | None = None  # set when the caller has gone


_budget: ContextVar[_Budget | None] = ContextVar("flamewatch_query_budget", default=None)


class QueryCancelled(CancelledError):
    """The caller of a query went away (an HTTP client that disconnected, a peer querier's merge it no longer
    waits for), so it was stopped."""


@contextlib.contextmanager
def bounded(timeout_s: float | None, cancelled: threading.Event | None = None) -> Iterator[None]:
    """Run the block within `timeout_s` (None or 0: unbounded), and until `cancelled` is set. An inner call
    keeps the outer budget."""
    if (not timeout_s and cancelled is None) or _budget.get() is not None:
        yield
        return
    token = _budget.set(_Budget(timeout_s or 0.0, time.monotonic() + timeout_s if timeout_s else float("inf"),
                                cancelled))
    try:
        yield
    finally:
        _budget.reset(token)


def check() -> None:
    """Raise `QueryTimeout` when the current budget is spent."""
    budget = _budget.get()
    if budget is None:
        return
    if budget.cancelled is not None and budget.cancelled.is_set():
        raise QueryCancelled("the caller of this query went away; it was stopped")
    if time.monotonic() >= budget.until:
        raise _timeout(budget)


def remaining() -> float | None:
    """Seconds left of the current budget (None: unbounded), for a call made on the query's behalf."""
    budget = _budget.get()
    return None if budget is None or budget.until == float("inf") else max(0.001, budget.until - time.monotonic())


def _timeout(budget: _Budget) -> QueryTimeout:
    return QueryTimeout(f"the query ran for longer than --query.timeout ({budget.timeout_s:g} s) allows and was "
                        "stopped: narrow its selector or time range, or raise --query.timeout")


class TimedDatabase:
    """A `Database` whose statements stop when the current query's budget is spent."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def __getattr__(self, name: str):
        return getattr(self._db, name)

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        budget = _budget.get()
        if budget is not None:
            check()
        with self._db.connection() as conn:
            if budget is None:
                yield conn
                return
            left_ms = max(1, int((budget.until - time.monotonic()) * 1000))
            # Local to the transaction: the pooled connection goes back with the server's default.
            conn.execute("SELECT set_config('statement_timeout', %s, true)", (str(left_ms),))
            try:
                yield conn
            except psycopg.errors.QueryCanceled as exc:
                raise _timeout(budget) from exc
