"""The ingester: validate pushes, batch them into blocks, acknowledge once durable.

Inputs: gRPC IngestService.Push and HTTP POST /ingest, in our form (a pprof body, labels as query
parameters) or the Pyroscope SDKs' (`name=app{k=v}`; converted in `pyroscope_ingest`); Pyroscope's
push.v1.PusherService/Push over gRPC and Connect (`pyroscope.py`); OTLP profiles (`otlp_receiver`).
Outputs: block objects in the object store and their index rows in Postgres.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import threading
import time

import grpc
from fastapi import APIRouter, Request
from prometheus_client import Counter
from pydantic import BaseModel, ConfigDict, Field

from flamewatch.api.flamewatch.v1 import ingest_pb2, ingest_pb2_grpc
from flamewatch.auth.caller import Action
from flamewatch.ingester import pyroscope, pyroscope_ingest
from flamewatch.ingester.batcher import Batcher
from flamewatch.ingester.compactor import Maintenance
from flamewatch.ingester.config import IngesterConfig, IngestLimits
from flamewatch.ingester.otlp_receiver import grpc_handler as otlp_grpc_handler
from flamewatch.ingester.otlp_receiver import http_router as otlp_http_router
from flamewatch.ingester.prepare import Prepared, prepare
from flamewatch.ingester.ratelimit import SeriesLimiter, TenantRateLimiter
from flamewatch.ingester.writer import BlockWriter
from flamewatch.periodic import every
from flamewatch.pprof import LimitExceeded, decompressed_size_hint, hint_from_file_name
from flamewatch.rpc.auth import WriteTenant, grpc_tenant
from flamewatch.rpc.body import read_limited
from flamewatch.rpc.errors import RateLimited
from flamewatch.rpc.grpc_server import handled
from flamewatch.rpc.labelpairs import labels_of_pairs
from flamewatch.rpc.openapi import ERROR_RESPONSES
from flamewatch.storage.blockwrite import BlockEntry
from flamewatch.storage.index import twin_times
from flamewatch.storage.objstore import ObjectStore
from flamewatch.storage.postgres import Database
from flamewatch.storage.sweeper import sweep_orphans
from flamewatch.upload import FILE_NAME_HEADER

log = logging.getLogger(__name__)

PROFILES = Counter("flamewatch_ingested_profiles", "Typed profiles stored", ["tenant"])
BYTES = Counter("flamewatch_ingested_bytes", "Decompressed pprof bytes accepted", ["tenant"])
REJECTED = Counter("flamewatch_rejected_profiles", "Pushed pprof profiles refused", ["reason"])

Series = list[tuple[dict[str, str], list[tuple[str, bytes]]]]  # labels, [(client id, raw pprof)]

# A pprof without a time is dated by the server's clock, so a client retrying it would store it twice. Such
# a profile takes the time of the same series' profile with the same content stored in the last minute
# instead, and the writer's retry check then leaves it out. Without a time nothing tells a retry from a
# new profile with byte-identical content: one in the same series within a minute is taken as the retry,
# a loss only where a timeless client sends the very same profile twice a minute (an idle program's
# empty profile, whose values are nothing). A pprof dated by the protocol (Pyroscope's `from`) or by
# itself needs none of this.
TIMELESS_RETRY_WINDOW_NS = 60 * 10**9
# Pushed pprofs up to this size (as sent, mostly gzipped) decode one at a time; larger ones beside them.
SERIAL_DECODE_BYTES = 256 * 1024


class Ingester:
    def __init__(self, config: IngesterConfig, store: ObjectStore, db: Database):
        self.config = config
        self._store, self._db = store, db
        self._batcher = Batcher(BlockWriter(store, db).write, config.flush_interval_s, config.flush_bytes,
                                config.max_concurrent_flushes)
        self._maintenance = Maintenance(config.maintenance, store, db)
        self._rate = TenantRateLimiter()
        self._series = SeriesLimiter(db)
        self._loops: list[asyncio.Task] = []
        # One pprof decoded at a time, whatever the number of pushes in flight: under the GIL only one thread
        # runs Python at once anyway, and the decoder's many small numpy calls each release and retake it, so
        # decoders running together spend CPU handing it back and forth (bench/ingest_cpu.py's small Go CPU
        # profiles, 16 clients: 5.2 against 6.5 ms of ingester CPU per profile). Waiting here sleeps, and the
        # push's Postgres round trips stay outside. A large pprof decodes outside the lock: holding it for its
        # whole decoding would stop every small push behind it, where the GIL only slows them.
        self._decoding = threading.Lock()
        # A tenant's limits are the same for every push (the config is frozen); building them took a few
        # percent of a small push's CPU (`dataclasses.replace` twice per push).
        self._limits_for = functools.lru_cache(maxsize=4096)(config.limits_for)

    def start(self) -> None:
        self._batcher.start()
        self._loops.append(asyncio.create_task(
            every(self.config.sweep_interval_s, self._sweep, "sweeping orphaned blocks", log), name="sweeper"))
        if self.config.maintenance.interval_s > 0:
            self._loops.append(asyncio.create_task(
                every(self.config.maintenance.interval_s, self._maintenance.run_now, "compaction and retention round",
                      log), name="compaction"))

    async def stop(self) -> None:
        for loop in self._loops:
            loop.cancel()
        await self._batcher.close()

    async def push(self, tenant: str, series: Series, name_hint: str | None = None,
                   span: tuple[int, int] | None = None) -> tuple[int, int]:
        """Store every profile of the push or none; returns (typed profiles, bytes) once durable.
        `span` (start, end ns) dates the pprofs that carry no time of their own."""
        limits = self._limits_for(tenant)
        _check_push_size(series, limits)
        rate = limits.ingestion_rate()
        if rate is not None:  # refused before decompressing when the sizes the pprofs state cannot fit
            self._rate_limited(self._rate.check, tenant,
                               sum(decompressed_size_hint(raw) for _, raws in series for _, raw in raws), rate,
                               len(series))
        prepared = await asyncio.to_thread(self._prepare_all, tenant, series, name_hint, span)
        entries = [e for p in prepared for e in p.entries]
        nbytes = sum(p.nbytes for p in prepared)
        if rate is not None:
            self._rate_limited(self._rate.take, tenant, nbytes, rate, len(prepared))
        await self._batcher.submit(tenant, entries, nbytes)
        PROFILES.labels(tenant).inc(len(entries))
        BYTES.labels(tenant).inc(nbytes)
        return len(entries), nbytes

    @staticmethod
    def _rate_limited(take, tenant: str, nbytes: int, rate: tuple[float, float], profiles: int) -> None:
        try:
            take(tenant, nbytes, *rate)
        except RateLimited:
            REJECTED.labels("RateLimited").inc(profiles)
            raise

    def _prepare_all(self, tenant: str, series: Series, name_hint: str | None,
                     span: tuple[int, int] | None) -> list[Prepared]:
        self._db.check_available()  # while Postgres is down, refuse at once rather than after the flush
        now = time.time_ns()
        limits = self._limits_for(tenant)
        out = []
        budget = limits.max_push_decompressed_bytes  # what the rest of the push may still decompress to
        for labels, samples in series:
            for client_id, raw in samples:
                try:
                    with self._decoding if len(raw) <= SERIAL_DECODE_BYTES else contextlib.nullcontext():
                        prepared = prepare(labels, raw, limits, now, name_hint, span, budget)
                except ValueError as exc:
                    REJECTED.labels(type(exc).__name__).inc()
                    raise type(exc)(f"{client_id}: {exc}" if client_id else str(exc)) from exc
                out.append(prepared)
                budget -= prepared.nbytes
        try:
            self._series.check(tenant, {e.fingerprint for p in out for e in p.entries}, limits.max_series, now)
        except RateLimited:
            REJECTED.labels("SeriesLimit").inc(len(out))
            raise
        return [self._dated_as_stored(tenant, p, now) if p.dated_by_server else p for p in out]

    def _dated_as_stored(self, tenant: str, prepared: Prepared, now: int) -> Prepared:
        """A timeless pprof retried: its profiles take the times of their stored twins (see above)."""
        twins = twin_times(self._db, tenant, [(e.fingerprint, e.content_hash) for e in prepared.entries],
                           now - TIMELESS_RETRY_WINDOW_NS, now)
        if not twins:
            return prepared
        return Prepared([_dated(e, twins.get((e.fingerprint, e.content_hash))) for e in prepared.entries],
                        prepared.nbytes, dated_by_server=True)

    def _sweep(self) -> None:
        sweep_orphans(self._store, self._db, grace_ns=int(self.config.orphan_grace_s * 1e9), now_ns=time.time_ns())


def _check_push_size(series: Series, limits: IngestLimits) -> None:
    """However a push arrives, it holds at most max_profiles_per_push series and as many profiles."""
    profiles = sum(len(samples) for _, samples in series)
    for count, what in ((len(series), "series"), (profiles, "profiles")):
        if count > limits.max_profiles_per_push:
            REJECTED.labels("LimitExceeded").inc(profiles)
            raise LimitExceeded(f"push has {count} {what}, the limit is {limits.max_profiles_per_push} per push "
                                "(--limits.max-profiles-per-push); send them in several pushes")


def _dated(entry: BlockEntry, time_ns: int | None) -> BlockEntry:
    return entry if time_ns is None else dataclasses.replace(entry, time_ns=time_ns)


class IngestServicer(ingest_pb2_grpc.IngestServiceServicer):
    def __init__(self, ingester: Ingester):
        self._ingester = ingester

    @handled
    async def Push(self, request: ingest_pb2.PushRequest, context: grpc.aio.ServicerContext):
        tenant = grpc_tenant(context, Action.WRITE)
        series = [(labels_of_pairs(s.labels), [(r.id, r.raw_profile) for r in s.samples])
                  for s in request.series]
        profiles, nbytes = await self._ingester.push(tenant, series)
        return ingest_pb2.PushResponse(profiles=profiles, bytes=nbytes)


class IngestAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    profiles: int = Field(description="typed profiles stored: one per sample type of the pprof")
    bytes: int = Field(description="decompressed pprof size")


# The body is read as a stream (to stop at the size limit), so FastAPI cannot see it: declare it here.
_PYROSCOPE_PARAMETERS = [
    ("name", "Pyroscope SDK form: `app{k=v,...}`, optionally `app.cpu{...}` (a type suffix); the application "
     "becomes service_name, the tags labels (\".\" in a tag name becomes \"_\"). Its presence selects this form."),
    ("from", "Pyroscope SDK form: start of the profile (epoch s/ms/us/ns by size, RFC 3339, now-1h), used when "
     "the pprof has no time"),
    ("until", "Pyroscope SDK form: end of the profile, as from"),
    ("format", "Pyroscope SDK form: pprof (raw body, or a multipart form); jfr and the other Pyroscope formats "
     "answer 415"),
    ("spyName", "Pyroscope SDK form: the profiler, kept as the pyroscope_spy label"),
    ("sampleRate", "Pyroscope SDK form: samples per second, a whole number (0: not given)"),
    ("units", "Pyroscope SDK form: accepted and ignored (the pprof names its units)"),
    ("aggregationType", "Pyroscope SDK form: accepted and ignored (the sample type decides)"),
]
_INGEST_OPENAPI = {
    "requestBody": {"required": True, "description": "a pprof profile, gzip-compressed or raw; in the Pyroscope "
                    "SDK form also a multipart form", "content": {
        "application/octet-stream": {"schema": {"type": "string", "format": "binary", "minLength": 1}},
        "multipart/form-data": {"schema": {"type": "object", "required": ["profile"], "properties": {
            "profile": {"type": "string", "format": "binary", "description": "the pprof, gzip or raw"},
            "sample_type_config": {"type": "string", "format": "binary", "description":
                                   "JSON: sample type -> {units, aggregation, display-name, sampled, cumulative}"},
            "prev_profile": {"type": "string", "format": "binary",
                             "description": "sent by old SDKs only; answered 422 (update the SDK)"}}}}}},
    "parameters": [*({"name": name, "in": "query", "required": False, "description": text,
                      "schema": {"type": "string"}} for name, text in _PYROSCOPE_PARAMETERS)],
}
_INGEST_DESCRIPTION = """Two forms share this path.

Our own: the body is one pprof (gzip or raw); every query parameter becomes a series label, `__name__`
names the profile (process_cpu, memory, ...).

The Pyroscope SDKs' (pyroscope-go and the SDKs sharing its upload code), chosen by a `name` parameter:
`name=app.cpu{k=v}&from=...&until=...&format=pprof&spyName=...&sampleRate=...`, the pprof as the body
or as the `profile` field of a multipart form with `sample_type_config`. Answers: 400 bad metadata (a
bad `name=`, time, sampleRate or sample_type_config, an unknown format), 413 over a size limit, 415 a
format other than pprof (jfr, ...), 422 a malformed multipart form. A body that is not a pprof is 400
in both forms.
Every parameter other than these is ignored in this form."""


def http_router(ingester: Ingester) -> APIRouter:
    router = APIRouter(responses=ERROR_RESPONSES)

    @router.post("/ingest", summary="Push one pprof profile, in our form (query parameters are labels) or the "
                 "Pyroscope SDKs' (name=app{k=v})", description=_INGEST_DESCRIPTION, response_model=IngestAnswer,
                 openapi_extra=_INGEST_OPENAPI)
    async def ingest(request: Request, tenant: WriteTenant) -> dict:
        body = await _read_body(request, ingester.config.limits.max_compressed_bytes)
        if pyroscope_ingest.is_pyroscope_request(request.query_params):
            profiles, nbytes = await pyroscope_ingest.ingest(ingester.push, tenant, request.query_params,
                                                             request.headers.get("content-type"), body)
        else:
            file_name = request.headers.get(FILE_NAME_HEADER)
            profiles, nbytes = await ingester.push(tenant, [(dict(request.query_params), [("", body)])],
                                                   hint_from_file_name(file_name) if file_name else None)
        return {"profiles": profiles, "bytes": nbytes}

    # Pyroscope's push over Connect; a push may hold many profiles, so its body may be as large as one
    # decompressed profile (the gRPC message limit too), and each profile still meets the profile limits.
    limits = ingester.config.limits
    router.include_router(pyroscope.connect_router(ingester.push, limits.max_decompressed_bytes,
                                                   limits.max_profiles_per_push))
    router.include_router(otlp_http_router(ingester))
    return router


async def _read_body(request: Request, limit: int) -> bytes:
    body = await read_limited(request, limit)
    if not body:
        raise ValueError("empty request body: send a pprof profile, e.g. curl --data-binary @cpu.pb.gz")
    return bytes(body)


def register_grpc(ingester: Ingester):
    def register(server) -> None:
        ingest_pb2_grpc.add_IngestServiceServicer_to_server(IngestServicer(ingester), server)
        pyroscope.register_grpc(ingester.push, server, ingester.config.limits.max_profiles_per_push)
        server.add_generic_rpc_handlers((otlp_grpc_handler(ingester),))

    return register
