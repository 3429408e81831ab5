"""`RateLimitedLog` and `log_failure`: a failure that repeats is logged once per interval per kind."""

import logging

import grpc
import pytest

from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.rpc.errors import log_failure, message_of, status_of
from flamewatch.storage.errors import BlocksMissing, StorageError, StorageFull, StorageUnavailable


def test_once_per_interval_per_kind_counting_what_was_held_back(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    limited = RateLimitedLog(logging.getLogger("test.limited"), interval_s=10, clock=lambda: now[0])
    caplog.set_level(logging.INFO, logger="test.limited")
    logged = []
    for t in range(25):
        now[0] = float(t)
        logged.append(limited.log(logging.ERROR, "disk", "push %d failed", t))
        limited.log(logging.ERROR, "other", "other %d", t)
    assert [t for t, ok in enumerate(logged) if ok] == [0, 10, 20]
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("push")] == [
        "push 0 failed",
        "push 10 failed (and 9 more like it since the last time this was logged)",
        "push 20 failed (and 9 more like it since the last time this was logged)",
    ]
    assert len([r for r in caplog.records if r.getMessage().startswith("other")]) == 3


def test_a_full_disk_is_unavailable_with_its_message() -> None:
    full = StorageFull("object directory /data is full: cannot write object a/b: No space left on device")
    assert isinstance(full, StorageUnavailable)
    assert (status_of(full).grpc_code, status_of(full).http_status) == (grpc.StatusCode.UNAVAILABLE, 503)
    assert message_of(full) == "object directory /data is full: cannot write object a/b: No space left on device"


def test_missing_blocks_are_data_loss_naming_the_keys() -> None:
    lost = BlocksMissing([f"t/blocks/0/2026/01/0{i}/b{i}.parquet" for i in range(7, 0, -1)])
    assert (status_of(lost).grpc_code, status_of(lost).http_status) == (grpc.StatusCode.DATA_LOSS, 500)
    assert message_of(lost) == (
        "the object store is missing 7 blocks this query needs, so it cannot be answered in full: "
        "t/blocks/0/2026/01/01/b1.parquet, t/blocks/0/2026/01/02/b2.parquet, t/blocks/0/2026/01/03/b3.parquet, "
        "t/blocks/0/2026/01/04/b4.parquet, t/blocks/0/2026/01/05/b5.parquet and 2 more. The Postgres index still "
        "lists them: restore the objects, or delete their rows from the index to query without them")


def test_log_failure_is_loud_for_bugs_and_quiet_for_repeated_outages(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.failures")
    caplog.set_level(logging.INFO, logger="test.failures")
    for _ in range(20):
        log_failure(logger, StorageFull("disk full"), "request failed: %s", "disk full")
        log_failure(logger, StorageUnavailable("minio down"), "request failed: %s", "minio down")
    for _ in range(2):
        log_failure(logger, KeyError("bug"), "request failed: %s", "bug")
    log_failure(logger, ValueError("bad"), "request failed: %s", "bad")
    log_failure(logger, StorageError("odd"), "request failed: %s", "odd")
    seen = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert seen == [
        ("ERROR", "request failed: disk full", False),
        ("ERROR", "request failed: minio down", False),
        ("ERROR", "request failed: bug", True),
        ("ERROR", "request failed: bug", True),
        ("INFO", "request failed: bad", False),
        ("ERROR", "request failed: odd", True),
    ]
