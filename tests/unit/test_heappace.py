"""The heap's scrape pace (`heappace.py`): fast while the in-use heap keeps rising or nears the memory
limit, back to the job's interval when a reading shows it stopped, or when none shows news for long."""

from __future__ import annotations

from infra.tinypprof import tiny_pprof

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from flamewatch.collector.heappace import HOLD_S, HeapPace, inuse_bytes
from flamewatch.pprof import decode

MiB = 2**20


def readings(pace: HeapPace, values: list[int], step_s: float = 15.0, limit: int = 0) -> list[float]:
    out = []
    for i, value in enumerate(values):
        pace.observe(i * step_s, value, limit)
        out.append(pace.interval_s)
    return out


def test_three_rising_readings_make_it_fast_and_a_flat_collection_ends_it():
    pace = HeapPace(15.0, 5.0)
    assert readings(pace, [10 * MiB, 20 * MiB, 40 * MiB]) == [15.0, 15.0, 5.0]
    assert pace.reason == "in-use heap growing: 10.0 MiB to 40.0 MiB over 2 rises"
    # Identical readings are no news (no collection since): still fast. A collection that finds the
    # same heap (within 1 %) ends the growth.
    assert pace.observe(50.0, 40 * MiB) is None and pace.interval_s == 5.0
    assert pace.observe(55.0, 40 * MiB + 1000) == "in-use heap stopped growing at 40.0 MiB"
    assert pace.interval_s == 15.0


def test_a_fall_breaks_the_rises():
    pace = HeapPace(15.0, 5.0)
    assert readings(pace, [10 * MiB, 20 * MiB, 15 * MiB, 30 * MiB]) == [15.0] * 4
    assert readings(pace, [60 * MiB]) == [5.0]  # 15 -> 30 -> 60


def test_growth_with_no_news_for_longer_than_the_hold_ends():
    pace = HeapPace(15.0, 5.0)
    readings(pace, [10 * MiB, 20 * MiB, 40 * MiB])
    assert pace.observe(30.0 + HOLD_S, 40 * MiB) is None and pace.interval_s == 5.0
    assert pace.observe(31.0 + HOLD_S, 40 * MiB) == "in-use heap stopped growing at 40.0 MiB"


def test_near_the_memory_limit_it_is_fast_whatever_the_trend():
    pace = HeapPace(15.0, 5.0)
    assert pace.observe(0.0, 210 * MiB, 256 * MiB) == "in-use heap 210.0 MiB is 82% of the memory limit 256.0 MiB"
    assert pace.interval_s == 5.0
    assert pace.observe(15.0, 150 * MiB, 256 * MiB) == "in-use heap stopped growing at 150.0 MiB"


def test_small_changes_are_noise():
    pace = HeapPace(15.0, 5.0)
    assert readings(pace, [100 * MiB + i * 1000 for i in range(6)]) == [15.0] * 6


def heap_pprof(inuse: list[int]) -> bytes:
    """A Go-shaped heap profile: alloc_objects, alloc_space, inuse_objects, inuse_space per sample."""
    profile = pb.Profile(string_table=["", "alloc_objects", "count", "alloc_space", "bytes", "inuse_objects",
                                       "inuse_space", "main.leak"])
    for type_, unit in ((1, 2), (3, 4), (5, 2), (6, 4)):
        profile.sample_type.add(type=type_, unit=unit)
    profile.function.add(id=1, name=7)
    profile.location.add(id=1, line=[pb.Line(function_id=1)])
    for value in inuse:
        profile.sample.add(location_id=[1], value=[9, 9 * value, 1, value])
    return profile.SerializeToString()


def test_inuse_bytes_sums_the_inuse_space_column():
    assert inuse_bytes(decode(heap_pprof([3 * MiB, 4 * MiB, 5]))) == 7 * MiB + 5
    assert inuse_bytes(decode(tiny_pprof())) is None  # a CPU profile
