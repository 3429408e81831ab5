"""The collector: discover targets, scrape their pprof endpoints, send the profiles to the ingester.

Inputs: the YAML configuration (`scrape_configs`), reloaded on SIGHUP or `POST /-/reload`.
Outputs: profiles pushed to the ingester over gRPC, and the OOM kills and restarts of the pods it watches
(`oomwatch.py`) recorded there as events; target status at `GET /api/v1/targets`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import grpc
from fastapi import APIRouter

from flamewatch.api.flamewatch.v1 import collector_pb2, collector_pb2_grpc, types_pb2
from flamewatch.auth.caller import Action, Caller
from flamewatch.collector.config import FileConfig
from flamewatch.collector.discovery.manager import DiscoveryManager
from flamewatch.collector.eventsender import EventSender
from flamewatch.collector.manager import ScrapeManager, TargetStatus
from flamewatch.collector.oomwatch import OOMWatch
from flamewatch.collector.sender import Sender
from flamewatch.configreader import format_seconds
from flamewatch.rpc.auth import Authenticated, grpc_caller
from flamewatch.rpc.grpc_server import handled
from flamewatch.rpc.labelpairs import label_pairs
from flamewatch.timerange import format_ns

log = logging.getLogger(__name__)


class Collector:
    def __init__(self, load: Callable[[], FileConfig], ingester_address: str, tenant: str = "anonymous"):
        self._load = load
        self.tenant = tenant
        self.sender = Sender(ingester_address, tenant=tenant)
        self.events = EventSender(ingester_address, tenant=tenant)
        self.oomwatch = OOMWatch(self.events.submit)
        self.scrapes = ScrapeManager(self.sender.submit, memory_limit=self.oomwatch.memory_limit)
        self.discovery = DiscoveryManager(self.scrapes.sync)
        self._tasks: list[asyncio.Task] = []

    def start(self) -> None:
        self._apply(self._load())
        self._tasks = [asyncio.create_task(self.sender.run(), name="sender"),
                       asyncio.create_task(self.discovery.run(), name="discovery"),
                       asyncio.create_task(self.events.run(), name="event sender")]

    def reload(self) -> None:
        """Load the configuration again; a bad file is reported and the running one kept."""
        config = self._load()
        self._apply(config)
        log.info("configuration reloaded: %d jobs", len(config.scrape_configs))

    async def stop(self, flush_s: float = 5.0) -> None:
        """Stop scraping and send what is queued; a second call does nothing."""
        tasks, self._tasks = self._tasks, []
        if not tasks:
            return
        tasks[1].cancel()
        await self.oomwatch.close()
        await self.scrapes.close()
        await asyncio.gather(self.sender.flush(flush_s), self.events.flush(flush_s))
        tasks[0].cancel()
        tasks[2].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _apply(self, config: FileConfig) -> None:
        jobs = {j.job_name: j for j in config.scrape_configs}
        self.discovery.apply(jobs)
        self.scrapes.apply(jobs)
        self.oomwatch.apply(jobs)


def _status_json(s: TargetStatus) -> dict:
    h = s.health
    return {
        "scrapePool": s.target.job,
        "profileType": s.target.profile_name,
        "scrapeUrl": s.target.url,
        "labels": s.target.labels,
        "discoveredLabels": s.target.discovered,
        "health": h.health,
        "lastScrape": format_ns(h.last_scrape_ns) if h.last_scrape_ns else None,
        "lastScrapeDuration": round(h.last_duration_s, 6),
        "lastError": h.last_error,
        "scrapeInterval": format_seconds(h.interval_s),
    }


def http_router(collector: Collector) -> APIRouter:
    router = APIRouter()

    @router.get("/api/v1/targets", summary="Every scraped profile endpoint with its labels and health")
    def targets(caller: Authenticated) -> dict:
        _may_see_targets(caller, collector.tenant)
        active = sorted((_status_json(s) for s in collector.scrapes.status()),
                        key=lambda t: (t["scrapePool"], t["scrapeUrl"]))
        return {"status": "success", "data": {"activeTargets": active}}

    return router


def _may_see_targets(caller: Caller, tenant: str) -> None:
    """Targets are seen by whoever may read the tenant their profiles go to, and by an admin."""
    if not caller.access.admin:
        caller.tenant(Action.READ, tenant)


def _pairs(labels: dict[str, str]) -> list[types_pb2.LabelPair]:
    return label_pairs(labels, types_pb2.LabelPair)


def _status_proto(s: TargetStatus) -> collector_pb2.ScrapeTargetStatus:
    t, h = s.target, s.health
    return collector_pb2.ScrapeTargetStatus(
        job=t.job, profile_type=t.profile_name, scrape_url=t.url, labels=_pairs(t.labels),
        discovered_labels=_pairs(t.discovered), health=h.health, last_scrape_ns=h.last_scrape_ns,
        last_scrape_duration_seconds=h.last_duration_s, last_error=h.last_error)


class CollectorServicer(collector_pb2_grpc.CollectorServiceServicer):
    def __init__(self, collector: Collector):
        self._collector = collector

    @handled
    async def Targets(self, request, context: grpc.aio.ServicerContext):
        _may_see_targets(grpc_caller(), self._collector.tenant)
        statuses = sorted(self._collector.scrapes.status(), key=lambda s: (s.target.job, s.target.url))
        return collector_pb2.TargetsResponse(targets=[_status_proto(s) for s in statuses])


def register_grpc(collector: Collector):
    return lambda server: collector_pb2_grpc.add_CollectorServiceServicer_to_server(CollectorServicer(collector),
                                                                                    server)
