"""Totals per step (query_range) when a selector matches no profile in the range."""

import numpy as np
import pytest

from flamewatch.querier.steps import bucket_totals
from flamewatch.storage.index import ProfileRows


def _no_rows() -> ProfileRows:
    empty = np.zeros(0, np.int64)
    return ProfileRows.of(series_id=empty, time=empty, block_id=np.zeros(0, object), row=empty, total=empty,
                       content_hash=empty)


@pytest.mark.parametrize("gauge", [False, True])
def test_no_profiles_give_an_empty_series_per_group_not_an_error(gauge: bool) -> None:
    empty = np.zeros(0, np.int64)
    result = bucket_totals(_no_rows(), empty, empty, 2, gauge=gauge)
    assert [(b.tolist(), v.tolist()) for b, v in result] == [([], []), ([], [])]
