"""Tenant settings on a real Postgres (`flamewatch.storage.settings`): per tenant, the newer write wins
whatever order writes arrive in, and a setting over a limit is refused with nothing written."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from flamewatch.rpc.errors import AlreadyExistsError
from flamewatch.storage import settings
from flamewatch.storage.postgres import Database
from flamewatch.storage.settings import MAX_SETTINGS, MAX_VALUE_BYTES, Setting

pytestmark = pytest.mark.postgres


def test_the_newest_write_wins_whatever_order_racing_writes_arrive_in(db: Database) -> None:
    writes = [Setting("theme", f"v{t}", t) for t in range(1, 41)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda s: _try(db, "race", s), writes[::-1] + writes))
    assert settings.settings(db, "race") == [Setting("theme", "v40", 40)]
    assert any(isinstance(r, AlreadyExistsError) for r in results)  # the older ones, once v40 was in
    assert settings.settings(db, "another-tenant") == []


def test_a_setting_over_a_limit_is_refused_and_nothing_is_written(db: Database) -> None:
    with pytest.raises(ValueError, match="over 1 MiB"):
        settings.store(db, "limits", Setting("big", "x" * (MAX_VALUE_BYTES + 1), 1))
    with pytest.raises(ValueError, match="a name of 1 to 256 bytes"):
        settings.store(db, "limits", Setting("n" * 257, "x", 1))
    assert settings.settings(db, "limits") == []
    with db.connection() as conn:  # a tenant at its limit, written in one statement
        conn.execute("INSERT INTO settings SELECT 'limits', 's' || i, '', 1 FROM generate_series(1, %s) i",
                     (MAX_SETTINGS,))
    with pytest.raises(ValueError, match=f"has {MAX_SETTINGS} settings already"):
        settings.store(db, "limits", Setting("one-more", "x", 1))
    assert settings.store(db, "limits", Setting("s1", "changed", 2)).value == "changed"  # its own may change
    assert len(settings.settings(db, "limits")) == MAX_SETTINGS


def _try(db: Database, tenant: str, setting: Setting):
    try:
        return settings.store(db, tenant, setting)
    except AlreadyExistsError as exc:
        return exc
