"""Real Go profiles through the codec and the block format, checked against `go tool pprof`.

The six profiles come from `tests/targets/workload` as its `net/http/pprof` serves them. The oracle is
`infra.gotool`, which reads exact values out of `go tool pprof -raw`: our decoder's columns, our
re-encoded bytes and a block written from all six must give the same per-function flat and cum values.
"""

import functools
import gzip
import time
from pathlib import Path

import numpy as np
import pytest
from infra import gotool
from infra.blocknodes import node_values
from infra.gotargets import SAMPLE_TYPES, SCRAPE_NAMES

from flamewatch.api.flamewatch.v1 import pprof_envelope_pb2
from flamewatch.api.perftools.profiles import profile_pb2
from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.pprof import Profile, decode, encode, profile_name, validate
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.blockwrite import write_block
from flamewatch.storage.symbols import profile_part, sample_frames

pytestmark = pytest.mark.go

PROFILES = ["cpu", "heap", "allocs", "goroutine", "mutex", "block"]

# `go tool pprof` runs once per file and sample index.
pprof_top = functools.cache(gotool.pprof_top)
pprof_total = functools.cache(gotool.pprof_total)


def sample_indices(name: str) -> list[int]:
    return list(range(len(SAMPLE_TYPES[name])))


def function_values(p: Profile, column: int) -> dict[str, tuple[int, int]]:
    """Function name -> (flat, cum) from the decoded columns, as pprof counts them.

    A sample's value is flat for its leaf-most frame (the innermost inlined function of its first
    location) and cum once for every distinct function on its stack.
    """
    part = profile_part(p)
    offsets, frames = sample_frames(p)
    has_line = np.diff(part.line_offsets)[part.frame_location] > 0
    line = part.line_offsets[part.frame_location] + part.frame_line
    names = np.empty(len(part.frame_location), object)
    names[has_line] = p.strings[p.functions.name[part.line_function[line[has_line]]]]
    addresses = p.locations.address[part.frame_location[~has_line]]
    names[~has_line] = np.char.add("0x", np.char.mod("%x", addresses))
    unique, name_of_frame = np.unique(names, return_inverse=True)
    stack_names = name_of_frame[frames]
    depth = np.diff(offsets)
    values = p.samples.values[:, column]
    flat = np.zeros(len(unique), np.int64)
    leaf = depth > 0
    np.add.at(flat, stack_names[offsets[:-1][leaf]], values[leaf])
    sample_of_frame = np.repeat(np.arange(len(depth)), depth)
    pairs = np.unique(sample_of_frame * len(unique) + stack_names)  # each function once per sample
    cum = np.zeros(len(unique), np.int64)
    np.add.at(cum, pairs % len(unique), values[pairs // len(unique)])
    on_stack = np.zeros(len(unique), bool)
    on_stack[stack_names] = True
    return {str(n): (int(f), int(c)) for n, f, c in zip(unique[on_stack], flat[on_stack], cum[on_stack], strict=True)}


def reference_parse(raw: bytes) -> profile_pb2.Profile:
    message = profile_pb2.Profile()
    message.ParseFromString(gzip.decompress(raw))
    return message


@pytest.fixture(scope="module")
def reencoded(go_profiles, tmp_path_factory) -> dict[str, Path]:
    """Each profile decoded and encoded again by Flamewatch, saved where `go tool pprof` can read it."""
    directory = tmp_path_factory.mktemp("reencoded")
    files = {}
    for name, raw in go_profiles.items():
        files[name] = directory / f"{name}.pb.gz"
        files[name].write_bytes(encode(decode(raw)))
    return files


def test_the_capture_has_the_six_profiles_in_both_of_gos_layouts(go_profiles):
    assert sorted(go_profiles) == sorted(PROFILES)
    for name in PROFILES:
        envelope = pprof_envelope_pb2.ProfileEnvelope()
        envelope.ParseFromString(gzip.decompress(go_profiles[name]))
        assert len(envelope.sample) > 0, name
        # Go writes values first: unpacked (tag 0x10 per value) for at most two values, else packed (0x12).
        expected_first_byte = b"\x12" if len(SAMPLE_TYPES[name]) > 2 else b"\x10"
        assert {bytes(s[:1]) for s in envelope.sample} == {expected_first_byte}, name


@pytest.mark.parametrize("name", PROFILES)
def test_decode_validate_and_lossless_round_trip(go_profiles, name):
    raw = go_profiles[name]
    profile = decode(raw)
    validate(profile)
    assert [t for t, _ in profile.sample_type_names()] == SAMPLE_TYPES[name]
    assert len(profile.samples) == len(reference_parse(raw).sample)
    encoded = encode(profile)
    assert decode(encode(decode(encoded))) == profile
    assert decode(encoded) == profile
    assert reference_parse(encoded) == reference_parse(raw)


@pytest.mark.parametrize("name", PROFILES)
def test_go_tool_pprof_reads_our_encoding_as_the_original(go_profile_files, reencoded, name):
    for index in sample_indices(name):
        original = pprof_top(go_profile_files[name], index)
        assert original, (name, index)
        assert pprof_top(reencoded[name], index) == original, (name, index)
        assert pprof_total(reencoded[name], index) == pprof_total(go_profile_files[name], index), (name, index)


@pytest.mark.parametrize("name", PROFILES)
def test_function_values_from_our_columns_match_go_tool_pprof(go_profiles, go_profile_files, name):
    profile = decode(go_profiles[name])
    for index in sample_indices(name):
        assert function_values(profile, index) == pprof_top(go_profile_files[name], index), (name, index)
        assert int(profile.samples.values[:, index].sum()) == pprof_total(go_profile_files[name], index)


def test_profiles_have_values_to_compare(go_profile_files):
    """Guards the comparisons above from passing on empty profiles."""
    for name, index in (("cpu", 1), ("allocs", 1), ("goroutine", 0), ("heap", 3)):
        assert pprof_total(go_profile_files[name], index) > 0, name
        assert any(flat > 0 for flat, _ in pprof_top(go_profile_files[name], index).values()), name


@pytest.fixture(scope="module")
def block(go_profiles) -> tuple[BlockReader, list[tuple[str, int]]]:
    """One block from all six profiles, entries made as the ingester makes them; row -> (profile, column)."""
    now_ns = time.time_ns()
    entries, rows = [], []
    for name in PROFILES:
        labels = {"service_name": "workload", "__name__": SCRAPE_NAMES[name], "capture": name}
        prepared = prepare(labels, go_profiles[name], IngestLimits(), now_ns)
        entries += prepared.entries
        rows += [(name, column) for column in range(len(prepared.entries))]
    return BlockReader(write_block(entries)), rows


def test_block_rows_are_the_split_profiles(block):
    reader, rows = block
    assert len(rows) == 15
    assert reader.profiles.num_rows == len(rows)
    assert reader.profiles.column("profile_type").to_pylist()[:3] == [
        "process_cpu:samples:count:cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
        "memory:alloc_objects:count:space:bytes"]
    assert reader.profiles.column("profile_type").to_pylist()[-2:] == [
        "block:contentions:count:contentions:count", "block:delay:nanoseconds:contentions:count"]


def test_block_gives_go_tool_pprofs_flat_values_and_totals(block, go_profile_files):
    reader, rows = block
    totals = reader.profiles.column("total").to_pylist()
    for row, (name, column) in enumerate(rows):
        self_values = node_values(reader, np.array([row]))
        assert int(self_values.sum()) == totals[row] == pprof_total(go_profile_files[name], column), (name, column)
        flat = np.zeros(len(self_values), np.int64)
        flat[1:] = self_values[1:]  # node 0 holds samples with an empty stack, which no function owns
        names, which = np.unique(reader.node_names, return_inverse=True)
        per_name = np.zeros(len(names), np.int64)
        np.add.at(per_name, which, flat)
        ours = {str(n): int(v) for n, v in zip(names, per_name, strict=True) if v}
        expected = {n: f for n, (f, _) in pprof_top(go_profile_files[name], column).items() if f}
        assert ours == expected, (name, column)


@pytest.mark.parametrize("name", PROFILES)
def test_every_go_profile_is_named_from_its_content_whatever_its_file_is_called(go_profiles, name):
    """The name a scrape job gives each endpoint is what the content says, with no name or hint given,
    and a misleading file name changes nothing (Go's mutex and block profiles share a period type)."""
    profile = decode(go_profiles[name])
    assert len(profile.samples) > 0, f"the workload's {name} profile has no samples to name it by"
    assert profile_name(profile) == SCRAPE_NAMES[name]
    for misleading in ("process_cpu", "memory", "mutex", "block", "goroutine"):
        assert profile_name(profile, hint=misleading) == SCRAPE_NAMES[name]
