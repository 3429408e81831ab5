"""The ingester on real Postgres: a push Postgres cannot store is refused alone while its neighbours in the
same flush are written, a tenant's series are limited, a retried timeless pprof is stored once, and any
push is either stored exactly or refused with a 4xx-class error."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from infra.tinypprof import tiny_pprof

from flamewatch.ingester import service
from flamewatch.ingester.batcher import Batcher
from flamewatch.ingester.config import IngesterConfig, IngestLimits, MaintenanceConfig
from flamewatch.ingester.prepare import prepare
from flamewatch.ingester.service import Ingester
from flamewatch.ingester.writer import BlockWriter, identity
from flamewatch.labels.labelset import fingerprint
from flamewatch.pprof import LimitExceeded
from flamewatch.rpc.errors import RateLimited, status_of
from flamewatch.storage.index import stored_profiles
from flamewatch.storage.objstore import FilesystemConfig, ObjectStore, open_object_store
from flamewatch.storage.postgres import Database

pytestmark = [pytest.mark.postgres]

TENANT = "isolation"


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return open_object_store(FilesystemConfig(str(tmp_path / "objects")))


def _entries(labels: dict[str, str], time_ns: int):
    return prepare(labels, tiny_pprof(time_ns), IngestLimits(), time.time_ns()).entries


def test_a_push_postgres_refuses_fails_alone_and_its_neighbours_in_the_flush_are_stored(db: Database, store):
    """Validation stops a NUL long before this; the flush must still not let one bad push fail the rest."""
    now = time.time_ns()
    good = [_entries({"service_name": "good", "client": str(i)}, now) for i in range(6)]
    [template] = _entries({"service_name": "bad"}, now)
    bad_labels = {**template.labels, "foo": "a\x00b"}  # what a push got past validation with before
    bad = [dataclasses.replace(template, labels=bad_labels, fingerprint=fingerprint(bad_labels))]

    async def main() -> list:
        batcher = Batcher(BlockWriter(store, db).write, interval_s=0.05, max_bytes=1 << 30, max_concurrent=1)
        pushes = [batcher.submit(TENANT, entries, 1) for entries in good]
        pushes.insert(2, batcher.submit(TENANT, bad, 1))
        results = await asyncio.gather(*pushes, return_exceptions=True)
        await batcher.close()
        return results

    results = asyncio.run(main())
    assert [r is None for r in results] == [True, True, False, True, True, True, True]
    assert "0x00" in str(results[2]) or "\\u0000" in str(results[2]), results[2]
    keys = [identity(e) for entries in good for e in entries]
    assert stored_profiles(db, TENANT, keys) == set(keys)


def _ingester(db: Database, store: ObjectStore, tenant_limits=None, **limits) -> Ingester:
    return Ingester(IngesterConfig(flush_interval_s=0.05, limits=IngestLimits(**limits),
                                   maintenance=MaintenanceConfig(interval_s=0), tenant_limits=tenant_limits or {}),
                    store, db)


def _run(db: Database, store: ObjectStore, body: Callable, tenant_limits=None, **limits):
    async def main():
        ingester = _ingester(db, store, tenant_limits, **limits)
        ingester.start()
        try:
            return await body(ingester)
        finally:
            await ingester.stop()

    return asyncio.run(main())


def _count(db: Database, sql: str, *args) -> int:
    with db.connection() as conn:
        return conn.execute(sql, args).fetchone()[0]


def test_a_push_that_would_create_series_over_the_limit_is_refused_whole(db: Database, store):
    now = time.time_ns()

    async def body(ingester: Ingester) -> list:
        for i in range(3):  # three series: the limit is four
            await ingester.push(TENANT, [({"pod": f"p{i}"}, [("", tiny_pprof(now - i))])])
        with pytest.raises(RateLimited) as refused:  # two new series (and one existing): over the limit whole
            await ingester.push(TENANT, [({"pod": f"p{i}"}, [("", tiny_pprof(now + 10 + i))]) for i in (2, 3, 4)])
        existing = await ingester.push(TENANT, [({"pod": "p0"}, [("", tiny_pprof(now + 100))])])
        one_more = await ingester.push(TENANT, [({"pod": "p3"}, [("", tiny_pprof(now + 200))])])
        with pytest.raises(RateLimited):
            await ingester.push(TENANT, [({"pod": "p5"}, [("", tiny_pprof(now + 300))])])
        return [str(refused.value), existing, one_more]

    message, existing, one_more = _run(db, store, body, max_series=4)
    assert message == (f"tenant '{TENANT}' has 3 active series (with a profile in the last hour) and this push would "
                       f"add 2: the limit is 4 (--limits.max-series, or --limits.tenant {TENANT}:max-series=N for "
                       "this tenant); pushes to existing series still pass")
    assert existing[0] == one_more[0] == 1
    assert _count(db, "SELECT count(*) FROM series WHERE tenant = %s", TENANT) == 4
    assert not _count(db, "SELECT count(*) FROM series WHERE tenant = %s AND labels->>'pod' IN ('p4', 'p5')", TENANT)


def _stored(db: Database, tenant: str) -> int:
    return _count(db, "SELECT coalesce(sum(bs.profiles), 0) FROM index_series bs JOIN series s ON s.id = bs.series_id"
                      " WHERE s.tenant = %s", tenant)


def test_a_push_is_limited_in_profiles_and_in_what_they_decompress_to_together(db: Database, store):
    now = time.time_ns()
    size = len(tiny_pprof(now, zipped=False))

    def series(n: int, offset: int, per_series: int = 1):
        return [({"pod": f"p{i}"}, [("", tiny_pprof(now + offset + i * per_series + j)) for j in range(per_series)])
                for i in range(n)]

    async def body(ingester: Ingester) -> list[str]:
        refused = []
        for push in (series(5, 0), series(1, 100, per_series=5), series(4, 200)):
            with pytest.raises(LimitExceeded) as error:
                await ingester.push(TENANT, push)
            refused.append(str(error.value))
        assert await ingester.push(TENANT, series(3, 300)) == (3, 3 * size)  # within both limits
        return refused

    too_many_series, too_many_profiles, too_large = _run(db, store, body, max_profiles_per_push=4,
                                                          max_push_decompressed_bytes=3 * size + size // 2)
    assert too_many_series.startswith("push has 5 series, the limit is 4 per push (--limits.max-profiles-per-push)")
    assert too_many_profiles.startswith("push has 5 profiles, the limit is 4 per push")
    assert too_large == (f"the push's profiles are more than {3 * size + size // 2} bytes decompressed together "
                         "(--limits.max-push-decompressed-bytes); send them in several pushes")
    assert _stored(db, TENANT) == 3  # nothing of the refused pushes


def test_a_tenant_with_its_own_ingestion_rate_is_limited_alone(db: Database, store, monkeypatch):
    now = time.time_ns()
    size = len(tiny_pprof(now, zipped=False))
    prepared = []
    real_prepare = service.prepare
    monkeypatch.setattr(service, "prepare", lambda *args: prepared.append(1) or real_prepare(*args))

    async def body(ingester: Ingester) -> str:
        for i in range(2):
            await ingester.push("slow", [({"pod": f"p{i}"}, [("", tiny_pprof(now + i))])])
        with pytest.raises(RateLimited) as refused:
            await ingester.push("slow", [({"pod": "p2"}, [("", tiny_pprof(now + 2))])])
        decompressed = len(prepared)
        with pytest.raises(RateLimited):  # the bucket is empty: refused on the size its gzip trailer states
            await ingester.push("slow", [({"pod": "p3"}, [("", tiny_pprof(now + 3))])])
        assert len(prepared) == decompressed
        for i in range(20):  # every other tenant has no rate limit
            await ingester.push("fast", [({"pod": f"p{i}"}, [("", tiny_pprof(now + i))])])
        return str(refused.value)

    message = _run(db, store, body, tenant_limits={"slow": {"ingestion_rate_mb": 1e-6,
                                                            "ingestion_burst_mb": 2.5 * size / 1e6}})
    assert message.startswith("tenant 'slow' is over its ingestion rate limit of 1e-06 MB/s")
    assert "--limits.tenant slow:ingestion-rate-mb" in message
    assert (_stored(db, "slow"), _stored(db, "fast")) == (2, 20)


def test_a_timeless_pprof_pushed_again_is_stored_once(db: Database, store):
    timeless = tiny_pprof(0)

    async def body(ingester: Ingester) -> None:
        for _ in range(3):  # a client retrying after it lost the acknowledgement
            assert await ingester.push(TENANT, [({"service_name": "retry"}, [("", timeless)])]) == (1, len(
                tiny_pprof(0, zipped=False)))
            await asyncio.sleep(0.01)
        await ingester.push(TENANT, [({"service_name": "retry"}, [("", tiny_pprof(0, value=20_000_000))])])

    _run(db, store, body)
    assert _count(db, "SELECT coalesce(sum(bs.profiles), 0) FROM index_series bs JOIN series s ON s.id = bs.series_id"
                      " WHERE s.tenant = %s", TENANT) == 2  # the first copy and the other profile


# Any character, with the ones Postgres cannot store (NUL, lone surrogates) often enough to be found
LABEL_TEXT = st.text(st.one_of(st.characters(), st.sampled_from(["\x00", "\ud800", "\udcff"])), max_size=40)
MINUTE = 60 * 10**9
CASES = itertools.count()


@pytest.fixture
def running(db: Database, store: ObjectStore):
    """One ingester on an event loop of its own, shared by every example of a property."""
    loop = asyncio.new_event_loop()
    ingester = Ingester(IngesterConfig(flush_interval_s=0.02, maintenance=MaintenanceConfig(interval_s=0)), store, db)
    loop.run_until_complete(_started(ingester))
    yield lambda *args: loop.run_until_complete(ingester.push(*args))
    loop.run_until_complete(ingester.stop())
    loop.close()


async def _started(ingester: Ingester) -> None:
    ingester.start()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=LABEL_TEXT, when=st.one_of(st.tuples(st.just(0), st.integers(-(2**63), 2**63 - 1)),
                                         st.tuples(st.just(1), st.integers(-MINUTE, 20 * MINUTE))),
       sample_types=st.integers(1, 80))
def test_any_push_is_stored_exactly_or_refused_4xx(db: Database, running, value, when, sample_types):
    """Through the real ingester into Postgres: a label, a time (any int64, or near now), a number of sample types."""
    relative, t = when
    time_ns = time.time_ns() + t if relative else t
    case = next(CASES)  # each example's own series, however hypothesis repeats the other values
    labels = {"service_name": "prop", "k": value, "case": str(case)}
    before = time.time_ns()
    try:
        running(TENANT, [(labels, [("", tiny_pprof(time_ns, sample_types=sample_types))])])
    except Exception as exc:  # noqa: BLE001 - the property is about every error
        assert 400 <= status_of(exc).http_status < 500, repr(exc)
        assert _count(db, "SELECT count(*) FROM series WHERE tenant = %s AND labels->>'case' = %s", TENANT,
                      str(case)) == 0
        return
    with db.connection() as conn:
        stored = conn.execute("SELECT s.labels->>'k', bs.min_time, bs.max_time, bs.profiles FROM series s JOIN"
                              " index_series bs ON bs.series_id = s.id WHERE s.tenant = %s AND s.labels->>'case' = %s",
                              (TENANT, str(case))).fetchall()
    if not time_ns:  # a pprof without a time is dated by the server's clock when it is pushed
        time_ns = stored[0][1]
        assert before <= time_ns <= time.time_ns()
    assert sorted(stored) == [(value, time_ns, time_ns, 1)] * sample_types
