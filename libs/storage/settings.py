"""Tenant settings in Postgres: a value per tenant and name, and when it was last changed (`settings`
table). A write older than the stored value is refused, so two clients that race cannot undo the
newer change: the API that serves them (Pyroscope's `settings.v1`) says so to the older one."""

from __future__ import annotations

from dataclasses import dataclass

from flamewatch.rpc.errors import AlreadyExistsError
from flamewatch.storage.postgres import Database

MAX_NAME_BYTES = 256
MAX_VALUE_BYTES = 1 << 20
MAX_SETTINGS = 1000  # per tenant


@dataclass(frozen=True)
class Setting:
    name: str
    value: str
    modified_at: int  # ms since the epoch


class NewerSettingStored(AlreadyExistsError):
    """A write of a setting older than the value stored."""


def settings(db: Database, tenant: str) -> list[Setting]:
    """The tenant's settings, by name."""
    with db.connection() as conn:
        rows = conn.execute("SELECT name, value, modified_at FROM settings WHERE tenant = %s ORDER BY name",
                            (tenant,)).fetchall()
    return [Setting(*row) for row in rows]


def store(db: Database, tenant: str, setting: Setting) -> Setting:
    """Store the setting unless a newer value of it is (`NewerSettingStored`); ValueError when its name
    or value is too long, or the tenant has `MAX_SETTINGS` others already."""
    if not setting.name or len(setting.name.encode()) > MAX_NAME_BYTES:
        raise ValueError(f"a setting needs a name of 1 to {MAX_NAME_BYTES} bytes")
    if len(setting.value.encode()) > MAX_VALUE_BYTES:
        raise ValueError(f'the value of setting "{setting.name}" is over {MAX_VALUE_BYTES >> 20} MiB')
    with db.connection() as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('settings:' || %s))", (tenant,))
        stored = conn.execute("SELECT modified_at FROM settings WHERE tenant = %s AND name = %s",
                              (tenant, setting.name)).fetchone()
        if stored is not None and stored[0] > setting.modified_at:
            raise NewerSettingStored(f"failed to update {setting.name}: newer update already written")
        if stored is None:
            (count,) = conn.execute("SELECT count(*) FROM settings WHERE tenant = %s", (tenant,)).fetchone()
            if count >= MAX_SETTINGS:
                raise ValueError(f"tenant {tenant} has {MAX_SETTINGS} settings already, the most it may keep")
        conn.execute("INSERT INTO settings (tenant, name, value, modified_at) VALUES (%s, %s, %s, %s)"
                     " ON CONFLICT (tenant, name) DO UPDATE SET value = excluded.value,"
                     " modified_at = excluded.modified_at", (tenant, setting.name, setting.value, setting.modified_at))
    return setting
