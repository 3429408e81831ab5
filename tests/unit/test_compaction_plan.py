"""Which blocks a compaction job takes: jobs fit in `max_job_profiles` (the compactor's memory follows
profiles, not bytes), late profiles go beside an hour's or a day's main block, and a day too big for
one job stays in hour blocks without holding up the days after it."""

from flamewatch.storage.compaction import DAY_NS, HOUR_NS, CompactionConfig, StoredBlock, day_job, hour_job
from flamewatch.storage.keys import LEVEL_DAY, LEVEL_FLUSH, LEVEL_HOUR

NOW = 10 * DAY_NS
CONFIG = CompactionConfig(max_job_profiles=100)


def block(name: str, level: int, start: int, profiles: int) -> StoredBlock:
    return StoredBlock(name, f"t/{name}", level, start, start + 60 * 10**9, 1000, profiles)


def names(job: list[StoredBlock]) -> list[str]:
    return sorted(b.id for b in job)


def test_an_hour_job_takes_flushed_blocks_up_to_the_profile_bound():
    flushed = [block(f"f{i}", LEVEL_FLUSH, DAY_NS + i * 10**9, 40) for i in range(4)]
    assert names(hour_job(flushed, NOW, CONFIG)) == ["f0", "f1"]


def test_one_flushed_block_bigger_than_a_job_is_still_compacted():
    assert names(hour_job([block("big", LEVEL_FLUSH, DAY_NS, 500)], NOW, CONFIG)) == ["big"]


def test_late_profiles_go_beside_the_main_block_with_the_side_blocks_earlier_ones_made():
    blocks = [block("main", LEVEL_HOUR, DAY_NS, 80), block("side", LEVEL_HOUR, DAY_NS, 4),
              block("late", LEVEL_FLUSH, DAY_NS + 10**9, 2)]
    assert names(hour_job(blocks, NOW, CONFIG)) == ["late", "side"]


def test_the_main_block_is_rewritten_once_the_side_holds_its_share_and_the_job_has_room():
    blocks = [block("main", LEVEL_HOUR, DAY_NS, 40), block("side", LEVEL_HOUR, DAY_NS, 8),
              block("late", LEVEL_FLUSH, DAY_NS + 10**9, 2)]
    assert names(hour_job(blocks, NOW, CONFIG)) == ["late", "main", "side"]
    blocks[0] = block("main", LEVEL_HOUR, DAY_NS, 95)  # due a rewrite, but no room for it in one job
    assert names(hour_job(blocks, NOW, CONFIG)) == ["late", "side"]


def test_a_day_too_big_for_one_job_stays_in_hour_blocks_and_the_next_day_compacts():
    big = [block(f"a{h}", LEVEL_HOUR, DAY_NS + h * HOUR_NS, 30) for h in range(4)]
    small = [block(f"b{h}", LEVEL_HOUR, 2 * DAY_NS + h * HOUR_NS, 10) for h in range(4)]
    assert names(day_job(big + small, NOW, CONFIG)) == ["b0", "b1", "b2", "b3"]


def test_late_hour_blocks_go_beside_the_day_block():
    blocks = [block("day", LEVEL_DAY, DAY_NS, 90), block("late", LEVEL_HOUR, DAY_NS + HOUR_NS, 3)]
    assert names(day_job(blocks, NOW, CONFIG)) == ["late"]
