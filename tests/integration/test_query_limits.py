"""What bounds the cost of one query, on a real Postgres and real Go profiles: the number of matchers
in a selector (`--query.max-matchers`) and the time a query may run (`--query.timeout`), in Python and
in Postgres."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from integration.test_compaction import BASE, CPU, MIN, TENANT, push

from flamewatch.querier import api, deadline
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.deadline import QueryTimeout, TimedDatabase
from flamewatch.querier.engine import Querier
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.pyroscope_render import router as render_router
from flamewatch.rpc.errors import status_of
from flamewatch.rpc.http import build_app
from flamewatch.storage.objstore import FilesystemConfig, open_object_store

pytestmark = [pytest.mark.postgres, pytest.mark.go]

ALL = (0, 2**62)


def selector(n: int) -> str:
    """n `!=` matchers on labels no series or sample has: every one keeps everything, at a cost."""
    return "{" + ",".join(f'absent_{i}!="x{i}"' for i in range(n)) + "}"


@pytest.fixture
def stored(db, tmp_path: Path, go_profiles):
    store = open_object_store(FilesystemConfig(str(tmp_path / "objects")))
    for i in range(20):  # 20 blocks, each read with every matcher
        push(db, store, go_profiles["cpu"], BASE + i * MIN, "ab"[i % 2])
    return db, store


def querier(stored, **limits) -> Querier:
    db, objects = stored
    return Querier(db, BlockCache(objects, 1 << 30, 4, PathIndex()), QuerierConfig(**limits))


MATCHER_LIMIT_MESSAGE = ("the selector has 6 label matchers, more than the 5 a selector may have "
                         "(--query.max-matchers): combine them, e.g. several != on one label into one !~ regex, "
                         "or raise the limit")


@pytest.mark.parametrize("call", ["merge", "query_range", "pprof", "series", "label_names", "label_values"])
def test_a_selector_over_the_matcher_limit_is_refused_naming_the_limit_and_its_flag(stored, call: str):
    q = querier(stored, max_matchers=5)
    calls = {
        "merge": lambda sel: q.merge(TENANT, CPU + sel, *ALL),
        "query_range": lambda sel: q.query_range(TENANT, CPU + sel, BASE, BASE + 60 * MIN, MIN, []),
        "pprof": lambda sel: q.pprof(TENANT, CPU + sel, *ALL, None),
        "series": lambda sel: q.series(TENANT, [sel], *ALL),
        "label_names": lambda sel: q.label_names(TENANT, ['{service_name="api"}', sel], *ALL),
        "label_values": lambda sel: q.label_values(TENANT, "instance", [sel], *ALL),
    }
    with pytest.raises(ValueError) as caught:
        calls[call](selector(6))
    assert str(caught.value) == MATCHER_LIMIT_MESSAGE
    assert status_of(caught.value).http_status == 400
    assert calls[call](selector(5)) is not None  # at the limit: answered


def test_the_matcher_limit_is_off_at_zero(stored):
    assert querier(stored, max_matchers=0).merge(TENANT, CPU + selector(200), *ALL).profiles == 20


def test_a_query_over_its_time_budget_is_stopped_with_a_timeout_naming_the_flag(stored):
    q = querier(stored, max_matchers=0, query_timeout_s=0.2)
    # answered once before, so that answering it again after the timeout takes milliseconds on a loaded machine
    assert q.merge(TENANT, CPU + '{instance="a"}', *ALL).profiles == 10
    started = time.monotonic()
    with pytest.raises(QueryTimeout) as caught:
        q.merge(TENANT, CPU + selector(2000), *ALL)  # takes seconds without a budget
    took = time.monotonic() - started
    assert str(caught.value) == ("the query ran for longer than --query.timeout (0.2 s) allows and was stopped: "
                                 "narrow its selector or time range, or raise --query.timeout")
    assert (status_of(caught.value).grpc_code.name, status_of(caught.value).http_status) == ("DEADLINE_EXCEEDED", 504)
    assert took < 2.0
    # The budget is per call: the next query is answered.
    assert q.merge(TENANT, CPU + '{instance="a"}', *ALL).profiles == 10


def test_a_postgres_statement_stops_when_the_budget_is_spent(db):
    timed = TimedDatabase(db)
    started = time.monotonic()
    with pytest.raises(QueryTimeout), deadline.bounded(0.3), timed.connection() as conn:
        conn.execute("SELECT pg_sleep(30)")
    assert time.monotonic() - started < 5.0
    # The timeout was local to that transaction: the pooled connections keep the server's default.
    with timed.connection() as conn:
        assert conn.execute("SHOW statement_timeout").fetchone() == ("0",)
        assert conn.execute("SELECT pg_sleep(0.5), 1").fetchone() == ("", 1)


def test_without_a_budget_statements_are_unbounded(db):
    with TimedDatabase(db).connection() as conn:
        assert conn.execute("SHOW statement_timeout").fetchone() == ("0",)


class SlowSelection(Querier):
    """Each selection takes 0.3 s: one engine call stays within a 0.5 s budget, two in a row do not."""

    def _select(self, *args, **kwargs):
        time.sleep(0.3)
        return super()._select(*args, **kwargs)


def slow(stored) -> SlowSelection:
    db, objects = stored
    return SlowSelection(db, BlockCache(objects, 1 << 30, 4, PathIndex()), QuerierConfig(query_timeout_s=0.5))


def test_one_merge_fits_the_budget(stored):
    assert slow(stored).merge(TENANT, CPU + '{instance="a"}', *ALL).profiles == 10


def test_a_diff_s_two_merges_share_one_budget(stored):
    q = slow(stored)
    with pytest.raises(QueryTimeout):
        api.diff(q, TENANT, (CPU + '{instance="a"}', *ALL), (CPU + '{instance="b"}', *ALL), 100)


def test_pyroscope_render_s_merge_and_timeline_share_one_budget(stored):
    app = build_app([render_router(slow(stored))], ready=lambda: [])

    async def get() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://querier") as client:
            return await client.get("/pyroscope/render", params={"query": CPU + '{instance="a"}', "from": "0",
                                                                 "until": str(BASE // 10**6 + 3_600_000)},
                                    headers={"X-Scope-OrgID": TENANT})

    r = asyncio.run(get())
    assert (r.status_code, r.json()) == (504, {"error": "the query ran for longer than --query.timeout (0.5 s) allows "
                                               "and was stopped: narrow its selector or time range, or raise "
                                               "--query.timeout"})
