"""`format=pprof` keeps what real Go profiles say: stored in blocks and rendered back, `go tool pprof
-raw` shows the same locations (address, mapping with build ID, every line and inlined frame), the same
sample labels and values, period, time and duration; `-tags` shows the same labels. Merged profiles
are the sum of their inputs, samples with equal stacks and labels summed."""

import functools
import gzip
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from infra import gotool
from infra.gotargets import SAMPLE_TYPES, SCRAPE_NAMES

from flamewatch.api.perftools.profiles import profile_pb2
from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.pprof import decode
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.formats.pprof import render_pprof
from flamewatch.querier.merging import Rows, gather_rows
from flamewatch.querier.paths import PathIndex
from flamewatch.storage.blockwrite import write_block
from flamewatch.storage.filesystem import FilesystemObjectStore

pytestmark = pytest.mark.go

CASES = [(name, column) for name, types in SAMPLE_TYPES.items() for column in range(len(types))]

raw_view = functools.cache(gotool.pprof_raw_view)


class Store:
    """Blocks in a real filesystem object store, read back through the querier's cache."""

    def __init__(self, directory: Path):
        self.objects = FilesystemObjectStore(directory)
        self.cache = BlockCache(self.objects, max_bytes=1 << 30, concurrency=2, paths=PathIndex())
        self.types: dict[tuple[str, int], object] = {}

    def put(self, key: str, profiles: list[tuple[str, bytes]]) -> list[tuple[str, int]]:
        """One block of the given (name, pprof) profiles; returns (key, row) per (profile, column)."""
        entries = []
        for name, raw in profiles:
            labels = {"service_name": "workload", "__name__": SCRAPE_NAMES[name]}
            entries += prepare(labels, raw, IngestLimits(), time.time_ns()).entries
        self.objects.put(key, write_block(entries))
        for row, e in enumerate(entries):
            self.types[(key, row)] = e.profile.profile_type
        return [(key, row) for row in range(len(entries))]

    def pprof(self, picked: list[tuple[str, int]], path: Path) -> Path:
        keys = {k: k for k, _ in picked}
        rows = Rows(keys, np.array([k for k, _ in picked], object), np.array([r for _, r in picked], np.int64))
        gathered, header, _ = gather_rows(self.cache, rows)
        path.write_bytes(render_pprof(gathered, self.types[picked[0]], header))
        return path

    def close(self) -> None:
        self.cache.close()
        self.objects.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory, go_profiles):
    s = Store(tmp_path_factory.mktemp("objects"))
    s.put("all", [(name, go_profiles[name]) for name in SAMPLE_TYPES])
    yield s
    s.close()


def row_of(name: str, column: int) -> int:
    return [(n, c) for n in SAMPLE_TYPES for c in range(len(SAMPLE_TYPES[n]))].index((name, column))


@pytest.mark.parametrize(("name", "column"), CASES)
def test_one_stored_profile_comes_back_as_go_tool_pprof_saw_it(store, go_profile_files, tmp_path, name, column):
    out = store.pprof([("all", row_of(name, column))], tmp_path / "out.pb.gz")
    ours, theirs = raw_view(out, 0), raw_view(go_profile_files[name], column)
    assert theirs.samples, "the workload's profile has no samples to compare"
    assert ours.samples == theirs.samples
    assert ours.header == theirs.header


def test_the_cpu_profile_has_labels_and_they_show_in_tags(store, go_profile_files, tmp_path):
    out = store.pprof([("all", row_of("cpu", 1))], tmp_path / "cpu.pb.gz")
    labelled = [labels for (_, labels) in raw_view(go_profile_files["cpu"], 1).samples if labels]
    assert any("handler:[/fibonacci]" in " ".join(labels) for labels in labelled)
    assert any("span_id:" in " ".join(labels) for labels in labelled)
    assert tags(out) == tags(go_profile_files["cpu"])
    assert "span_id" in tags(out) and "/hash" in tags(out)


def tags(path: Path) -> str:
    return subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-tags", "-sample_index=cpu", str(path)],
                          capture_output=True, text=True, check=True, timeout=300).stdout


def test_a_merge_is_the_sum_of_its_inputs(tmp_path, go_profiles, go_profile_files):
    s = Store(tmp_path / "objects")
    try:
        heap = s.put("one", [("heap", go_profiles["heap"])])
        allocs = s.put("two", [("allocs", go_profiles["allocs"]), ("cpu", go_profiles["cpu"])])
        again = s.put("three", [("cpu", go_profiles["cpu"])])
        for picked, inputs, column in [([heap[1], allocs[1]], ["heap", "allocs"], 1),
                                       ([allocs[5], again[1]], ["cpu", "cpu"], 1)]:
            out = s.pprof(picked, tmp_path / f"merged-{'-'.join(inputs)}.pb.gz")
            expected: dict[tuple, int] = {}
            for name in inputs:
                for key, value in raw_view(go_profile_files[name], column).samples.items():
                    expected[key] = expected.get(key, 0) + value
            assert raw_view(out, 0).samples == expected
    finally:
        s.close()


def test_merged_time_is_the_earliest_and_duration_the_span(tmp_path, go_profiles):
    """The same CPU profile stored at two times an hour apart: time is the first, duration reaches the end."""
    profile = decode(go_profiles["cpu"])
    s = Store(tmp_path / "objects")
    try:
        earlier = shifted(go_profiles["cpu"], -3600 * 10**9)  # not later: a profile from the future is refused
        first = s.put("first", [("cpu", earlier)])
        second = s.put("second", [("cpu", go_profiles["cpu"])])
        out = s.pprof([first[1], second[1]], tmp_path / "merged.pb.gz")
        merged = decode(out.read_bytes())
        assert merged.time_nanos == profile.time_nanos - 3600 * 10**9
        assert merged.duration_nanos == 3600 * 10**9 + profile.duration_nanos
        assert merged.period == profile.period
        assert [merged.string(i) for i in merged.period_type] == ["cpu", "nanoseconds"]
    finally:
        s.close()


def shifted(raw: bytes, by_ns: int) -> bytes:
    message = profile_pb2.Profile()
    message.ParseFromString(gzip.decompress(raw))
    message.time_nanos += by_ns
    return gzip.compress(message.SerializeToString())
