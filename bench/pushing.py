"""Pushing pprofs to the ingester over gRPC the way a fleet's clients do: several at once, each push
answered only once its profiles are durable, so a push's latency is its acknowledgement latency."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

import grpc
import numpy as np
from corpus import Push

from flamewatch.api.flamewatch.v1 import ingest_pb2, ingest_pb2_grpc

MAX_MESSAGE = 64 << 20


@dataclass
class PushStats:
    pprofs: int = 0
    typed: int = 0  # typed profiles stored, as the ingester counts them (one per sample type)
    decompressed: int = 0
    gzipped: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)

    def latency_ms(self, q: float) -> float:
        return 1e3 * float(np.quantile(self.latencies, q))


def _request(pushes: list[Push]) -> ingest_pb2.PushRequest:
    return ingest_pb2.PushRequest(series=[ingest_pb2.RawProfileSeries(
        labels=[{"name": k, "value": v} for k, v in p.labels.items()],
        samples=[ingest_pb2.RawSample(raw_profile=p.payload)]) for p in pushes])


def _batches(pushes: Iterable[Push], size: int) -> Iterator[list[Push]]:
    it = iter(pushes)
    while batch := list(islice(it, size)):
        yield batch


async def _push(addresses: list[str], pushes: Iterable[Push], concurrency: int, batch: int,
                progress: str | None) -> PushStats:
    stats = PushStats()
    batches = _batches(pushes, batch)
    last_print = began = time.monotonic()

    async def client(stub) -> None:
        nonlocal last_print
        for chunk in batches:  # one shared iterator: each client takes the next batch when it is free
            request = _request(chunk)
            started = time.perf_counter()
            reply = await stub.Push(request, timeout=300)
            stats.latencies.append(time.perf_counter() - started)
            stats.pprofs += len(chunk)
            stats.typed += reply.profiles
            stats.decompressed += reply.bytes
            stats.gzipped += sum(len(p.payload) for p in chunk)
            if progress and time.monotonic() - last_print > 15:
                last_print = time.monotonic()
                rate = stats.pprofs / (last_print - began)
                print(f"  {progress}: {stats.pprofs} pprofs pushed ({rate:.0f}/s)", flush=True)

    options = [("grpc.max_send_message_length", MAX_MESSAGE)]
    channels = [grpc.aio.insecure_channel(address, options=options) for address in addresses]
    try:
        stubs = [ingest_pb2_grpc.IngestServiceStub(channel) for channel in channels]
        await asyncio.gather(*(client(stubs[i % len(stubs)]) for i in range(concurrency)))
        stats.seconds = time.monotonic() - began
    finally:
        for channel in channels:
            await channel.close()
    return stats


def push(addresses: list[str], pushes: Iterable[Push], concurrency: int = 16, batch: int = 1,
         progress: str | None = None) -> PushStats:
    """Push `batch` pprofs per request from `concurrency` clients, spread over the ingesters at
    `addresses`; stats of the acknowledged pushes."""
    return asyncio.run(_push(addresses, pushes, concurrency, batch, progress))
