"""Pyroscope's `settings.v1.SettingsService` over Connect: the tenant settings Grafana's Profiles
Drilldown app reads at start and writes when its user changes them (`POST /settings.v1.SettingsService/Get`
and `/Set`), kept in Postgres (`flamewatch.storage.settings`). Get reads the tenant; Set writes it, and
is refused with ALREADY_EXISTS ("newer update already written", as Pyroscope says it) when the stored
value is newer than the one sent; a setting sent without `modifiedAt` is stamped with the time it
arrives."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter

from flamewatch.api.settings.v1 import setting_pb2
from flamewatch.auth.caller import Action
from flamewatch.rpc import connect
from flamewatch.storage import settings as stored
from flamewatch.storage.postgres import Database

SERVICE = setting_pb2.DESCRIPTOR.services_by_name["SettingsService"]


def _message(s: stored.Setting) -> setting_pb2.Setting:
    return setting_pb2.Setting(name=s.name, value=s.value, modifiedAt=s.modified_at)


def service(db: Database) -> connect.Service:
    async def get(_: setting_pb2.GetSettingsRequest, call: connect.Call) -> setting_pb2.GetSettingsResponse:
        found = await asyncio.to_thread(stored.settings, db, call.tenant)
        return setting_pb2.GetSettingsResponse(settings=[_message(s) for s in found])

    async def set_(request: setting_pb2.SetSettingsRequest, call: connect.Call) -> setting_pb2.SetSettingsResponse:
        if not request.HasField("setting"):
            raise ValueError("SetSettingsRequest needs a setting: {\"setting\": {\"name\": ..., \"value\": ...}}")
        s = request.setting
        setting = stored.Setting(s.name, s.value, s.modifiedAt or time.time_ns() // 10**6)
        return setting_pb2.SetSettingsResponse(setting=_message(await asyncio.to_thread(
            stored.store, db, call.tenant, setting)))

    return connect.Service(SERVICE, Action.READ, {"Get": get, "Set": set_}, actions={"Set": Action.WRITE})


def router(db: Database) -> APIRouter:
    """`POST /settings.v1.SettingsService/<Method>` for the querier's HTTP app."""
    return connect.router(service(db))
