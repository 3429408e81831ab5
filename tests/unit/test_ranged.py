"""An object read in ranges: reads anywhere give the object's bytes, ranges asked for together are fetched
in as few requests as their gaps allow, a range fetched once is not fetched again, and a store that answers
short is an error naming the object."""

from mmap import PAGESIZE

import pytest

from flamewatch.storage.errors import ObjectNotFound, StorageError
from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.ranged import HOLE_BYTES, RangedObject

BODY = bytes(range(256)) * 1000  # 256,000 bytes


class Counted:
    def __init__(self, store, short: bool = False):
        self.store, self.short, self.ranges = store, short, []

    def get_tail(self, key: str, length: int) -> tuple[bytes, int]:
        return self.store.get_tail(key, length)

    def get_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        self.ranges += ranges
        parts = self.store.get_ranges(key, ranges)
        return [data[:-1] for data in parts] if self.short else parts


@pytest.fixture
def store(tmp_path):
    store = FilesystemObjectStore(tmp_path)
    store.put("t/blocks/b", BODY)
    yield store
    store.close()


def test_reads_anywhere_give_the_bytes_and_a_held_range_is_not_fetched_again(store):
    source = Counted(store)
    f = RangedObject(source, "t/blocks/b", tail=1000)
    assert f.size == len(BODY) and source.ranges == []
    assert f.read(len(BODY) - 500, 500) == BODY[-500:]  # within the tail read at open
    assert f.read(10_000, 300) == BODY[10_000:10_300]
    assert f.read(len(BODY) - 1010, 100) == BODY[-1010:-910]  # half held: only the other half is fetched
    assert source.ranges == [(10_000, 300), (len(BODY) - 1010, 10)]
    source.ranges.clear()
    # three ranges, two of them a small gap apart: two requests; one within a held range: none
    f.fetch([(50_000, 1000), (51_000 + HOLE_BYTES, 1000), (100_000, 10), (10_100, 100)])
    assert source.ranges == [(50_000, 2000 + HOLE_BYTES), (100_000, 10)]
    held = bytes(f.buffer)
    assert held[50_000:51_000] == BODY[50_000:51_000] and held[51_000 + HOLE_BYTES:52_000 + HOLE_BYTES] == \
        BODY[51_000 + HOLE_BYTES:52_000 + HOLE_BYTES]
    assert held[51_000:51_000 + HOLE_BYTES] == bytes(HOLE_BYTES)  # the gap came with them and was dropped
    assert f.fetches == 5
    fetched = [(len(BODY) - 1010, len(BODY)), (10_000, 10_300), (50_000, 51_000),
               (51_000 + HOLE_BYTES, 52_000 + HOLE_BYTES), (100_000, 100_010)]
    assert f.held_bytes == sum(-(-end // PAGESIZE) * PAGESIZE - start // PAGESIZE * PAGESIZE for start, end in fetched)
    assert f.read(len(BODY) - 10, 100) == BODY[-10:]  # a read past the end stops at it


def test_a_short_answer_names_the_object_and_a_missing_one_fails_at_open(store):
    f = RangedObject(Counted(store, short=True), "t/blocks/b", tail=10)
    with pytest.raises(StorageError, match="t/blocks/b: asked for 300 bytes at 0 .* got 299"):
        f.read(0, 300)
    with pytest.raises(ObjectNotFound):
        RangedObject(Counted(store), "t/blocks/missing")


def test_an_object_that_comes_whole_with_its_tail_is_kept_as_it_came(store):
    store.put("t/blocks/small", BODY[:5000])
    source = Counted(store)
    f = RangedObject(source, "t/blocks/small", tail=10_000)
    assert f.size == 5000 and f.held_bytes == 5000 and bytes(f.buffer) == BODY[:5000]
    assert f.read(100, 50) == BODY[100:150] and source.ranges == []
    store.put("t/blocks/empty", b"")
    assert RangedObject(source, "t/blocks/empty").size == 0


def test_a_store_whose_requests_cost_more_takes_wider_gaps_in_one_request(store):
    source = Counted(store)
    source.range_hole_bytes = 100_000  # as S3's store says
    f = RangedObject(source, "t/blocks/b", tail=1000)
    f.fetch([(0, 100), (50_000, 100), (180_000, 100)])
    assert source.ranges == [(0, 50_100), (180_000, 100)] and f.fetches == 3
    assert f.read(50_000, 100) == BODY[50_000:50_100] and f.fetches == 3
    assert bytes(f.buffer)[1000:2000] == bytes(1000)  # not asked for: not kept


def test_what_came_at_open_serves_the_first_fetches_and_only_what_they_took_is_kept(store):
    source = Counted(store)
    source.range_open_bytes = len(BODY)  # as S3's store says: the whole object at open
    f = RangedObject(source, "t/blocks/b", tail=1000)
    f.fetch([(0, 100), (200_000, 100)])
    assert source.ranges == [] and f.fetches == 1 and f.read(200_000, 100) == BODY[200_000:200_100]
    assert bytes(f.buffer)[1000:2000] == bytes(1000)  # came, was not asked for: not kept
    f.close_window()
    assert f.read(1000, 10) == BODY[1000:1010] and source.ranges == [(1000, 10)] and f.fetches == 2
