"""A query reads a block from a real MinIO in the byte ranges of what it takes and keeps only those: over
a compacted block's pre-merged trees, its footer, symbols, trees and profile columns, not its profiles'
entries; the answer is the one the profiles give, and a later query that needs the entries fetches them
into the same block. With S3's own request policy the block comes whole in one request at open, of which
the reader keeps what it reads; with a local store's, only those ranges are fetched."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from infra.minio import MinioServer
from infra.tinypprof import stacks_pprof
from prometheus_client import REGISTRY

from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.merging import Rows
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.premerged import PreMergedTrees
from flamewatch.querier.sources import LocalBlocks
from flamewatch.storage.blockformat import TREE_SPAN_NS
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.blockwrite import compact, write_block
from flamewatch.storage.errors import StorageUnavailable
from flamewatch.storage.instrumented import InstrumentedStore
from flamewatch.storage.objstore import S3Config, open_object_store

pytestmark = pytest.mark.s3

KEY = "t/blocks/1/2026/01/01/01JBLOCKRANGESTEST00000000.parquet"
START = 1_767_225_600 * 10**9  # 2026-01-01 00:00 UTC


class Counted:
    """The store, counting the requests a block cache makes of it and the bytes they bring."""

    def __init__(self, store, policy: str):
        self.store, self.requests, self.bytes = store, 0, 0
        if policy == "s3":  # the store's own: a whole block at open, of which the reader keeps what it reads
            self.range_open_bytes, self.range_hole_bytes = store.range_open_bytes, store.range_hole_bytes

    def get_tail(self, key: str, length: int) -> tuple[bytes, int]:
        data, size = self.store.get_tail(key, length)
        self.requests, self.bytes = self.requests + 1, self.bytes + len(data)
        return data, size

    def get_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        parts = self.store.get_ranges(key, ranges)  # one request each on S3
        self.requests, self.bytes = self.requests + len(parts), self.bytes + sum(len(p) for p in parts)
        return parts


def _block(monkeypatch) -> bytes:
    """Two hours of eight series, a CPU profile a minute each with 200 stacks of random counts, compacted
    with trees into a block whose profiles take several row groups (as a fleet hour block's do)."""
    rng = np.random.default_rng(7)
    entries = []
    for minute in range(120):
        for series in range(8):
            stacks = {("main.main", f"main.worker{k % 6}", f"main.step{k}"): int(n)
                      for k, n in enumerate(rng.poisson(20, 200)) if n}
            time_ns = START + minute * 60 * 10**9 + series
            entries += prepare({"service_name": "shop", "instance": f"pod-{series}"},
                               stacks_pprof(stacks, time_ns), IngestLimits(), time_ns).entries
    monkeypatch.setattr("flamewatch.storage.blockwrite.PROFILE_GROUP_ENTRIES", 65536)
    flushed = BlockReader(write_block(entries))
    return compact([(flushed, np.arange(len(entries)))], trees=True)


@pytest.fixture
def s3(minio: MinioServer, s3_bucket: str):
    store = open_object_store(S3Config(s3_bucket, minio.endpoint, minio.access_key, minio.secret_key, insecure=True))
    yield store
    store.close()


@pytest.mark.parametrize("policy", ["s3", "local"])
def test_a_query_over_trees_keeps_a_fraction_of_the_block_and_answers_as_the_profiles_do(s3, monkeypatch, policy):
    data = _block(monkeypatch)
    s3.put(KEY, data)
    whole = BlockReader(data)
    assert len(whole._sections["profiles"]) >= 3 and whole.has_trees
    rows = Rows({0: KEY}, np.zeros(whole.profiles.num_rows, np.int64), np.arange(whole.profiles.num_rows))
    time = whole.profiles.column("time_ns").to_numpy()
    assert set((time - time % TREE_SPAN_NS).tolist()) == {START, START + TREE_SPAN_NS}  # the rows take whole hours

    counted = Counted(s3, policy)
    cache = BlockCache(counted, max_bytes=1 << 30, concurrency=2, paths=PathIndex())
    try:
        trees = PreMergedTrees(cache).tree(rows, "functions", None)
        block = cache.get_many([KEY])[KEY]
        held = block.reader.nbytes
        assert held < len(data) * 0.4 and block.memory_bytes() > held, (held, len(data))
        if policy == "s3":
            assert counted.requests == 1 and counted.bytes == len(data)  # the block came whole at open
        else:  # the tail (footer and trees), the symbols, the profile columns of each row group of profiles
            assert counted.requests <= 2 + len(whole._sections["profiles"]), counted.requests
            assert counted.bytes <= held < len(data) * 0.4  # held: whole pages

        requests = counted.requests
        profiles = LocalBlocks(cache).tree(rows, "functions", None)  # every entry: the rest of the block
        assert block.reader.nbytes > len(data) * 0.9
        if policy == "s3":  # every row group's entries in one request: their gaps are under a MiB
            assert counted.requests == requests + 1
        else:
            assert counted.requests <= requests + len(whole._sections["profiles"])  # a request a row group at most
        assert int(profiles.values.sum()) == int(whole.profiles.column("total").to_numpy().sum()) > 0
        assert trees.values.tolist() == profiles.values.tolist()
        again = counted.requests
        LocalBlocks(cache).tree(rows, "functions", None)
        assert counted.requests == again  # what a block fetched stays with it
    finally:
        cache.close()


def test_the_requests_the_store_counts_are_the_ones_minio_answered(s3, minio, monkeypatch):
    """`flamewatch_objstore_read_ranges_total` is what a bucket bills: one per GET that MinIO served, through
    the opening of a block, a query over its trees and one over all its entries."""
    data = _block(monkeypatch)
    s3.put(KEY, data)
    n = BlockReader(data).profiles.num_rows
    rows = Rows({0: KEY}, np.zeros(n, np.int64), np.arange(n))
    backend = f"s3-{uuid.uuid4().hex[:8]}"
    counted = InstrumentedStore(s3, backend)
    cache = BlockCache(counted, max_bytes=1 << 30, concurrency=2, paths=PathIndex())
    served = minio.requests("GetObject")
    try:
        PreMergedTrees(cache).tree(rows, "functions", None)
        LocalBlocks(cache).tree(rows, "functions", None)
    finally:
        cache.close()
    ranges = REGISTRY.get_sample_value("flamewatch_objstore_read_ranges_total", {"backend": backend})
    assert ranges == minio.requests("GetObject") - served == 2  # the block whole at open, then its entries
    assert REGISTRY.get_sample_value("flamewatch_objstore_read_bytes_total", {"backend": backend}) > len(data)


def test_a_store_gone_while_a_cached_block_reads_a_new_range_fails_the_query_with_its_error(s3, minio, monkeypatch):
    data = _block(monkeypatch)
    s3.put(KEY, data)
    n = BlockReader(data).profiles.num_rows
    rows = Rows({0: KEY}, np.zeros(n, np.int64), np.arange(n))
    cache = BlockCache(s3, max_bytes=1 << 30, concurrency=1, paths=PathIndex())
    try:
        PreMergedTrees(cache).tree(rows, "functions", None)
        minio.stop()
        try:
            assert PreMergedTrees(cache).tree(rows, "functions", None).values.sum() > 0  # all it needs is held
            with pytest.raises(StorageUnavailable):
                LocalBlocks(cache).tree(rows, "functions", None)  # the entries were never fetched
        finally:
            minio.start()
        assert int(LocalBlocks(cache).tree(rows, "functions", None).values.sum()) > 0
    finally:
        cache.close()
