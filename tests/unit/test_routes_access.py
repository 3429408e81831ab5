"""Every HTTP route of every service declares who may call it (rpc.auth): a tenant it reads or writes,
admin, or any valid credential (a proxy whose upstream decides). The routers are built as the CLI builds
them; their objects are never called, so none needs storage."""

import httpx
import pytest

from flamewatch.cli.allinone import routers_of_all
from flamewatch.collector.service import http_router as collector_router
from flamewatch.frontend.service import api_proxy_router, collector_proxy_router, ui_router
from flamewatch.ingester.config import IngesterConfig
from flamewatch.ingester.service import Ingester
from flamewatch.ingester.service import http_router as ingest_router
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.connect import router as query_connect_router
from flamewatch.querier.pyroscope_render import router as render_router
from flamewatch.querier.rest import router as query_router
from flamewatch.rpc.auth import api_routes, routes_without_access
from flamewatch.rpc.http import build_app
from flamewatch.selfprofile.routes import router as profiling_router


class _Querier:
    config = QuerierConfig()


def _routers() -> dict[str, list]:
    ingester = Ingester(IngesterConfig(), store=None, db=None)
    querier = _Querier()
    client = httpx.AsyncClient()
    return {
        "all": routers_of_all(ingester, querier, object(), ui_dir=None),
        "ingester": [ingest_router(ingester)],
        "querier": [query_router(querier), query_connect_router(querier), render_router(querier)],
        "collector": [collector_router(object())],
        "frontend": [collector_proxy_router(["http://c"], client), api_proxy_router("http://q", client),
                     ui_router(None)],
    }


@pytest.mark.parametrize(("service", "routers"), list(_routers().items()))
def test_every_route_declares_its_access(service, routers):
    app = build_app([*routers, profiling_router(heap_enabled=False)], ready=lambda: [])
    assert routes_without_access(app.routes) == []
    paths = {path for path, _ in api_routes(app.routes)}
    assert {"/metrics", "/debug/pprof/profile", "/healthz"} <= paths  # the walk sees every router's routes
    assert len(paths) > 5, paths
