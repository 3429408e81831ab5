"""Where a function was executed from: a real Go program's profile names its executable in the mapping
of every location, and a merge answers that file beside each function name, also when a peer querier
merged the piece and when the frames are named at line granularity."""

import gzip
import time

import numpy as np
import pytest
from infra.gotargets import SCRAPE_NAMES

from flamewatch.api.perftools.profiles import profile_pb2
from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.fanout import Piece, response_tree, tree_response
from flamewatch.querier.merging import Rows, merge_blocks, path_sums
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.sources import PartialTree
from flamewatch.storage.blockwrite import write_block
from flamewatch.storage.filesystem import FilesystemObjectStore

pytestmark = pytest.mark.go


def expected_binaries(raw: bytes) -> dict[str, str]:
    """Per function name, the file of the mapping of the locations it appears in (each exactly one)."""
    p = profile_pb2.Profile.FromString(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    files = {m.id: p.string_table[m.filename] for m in p.mapping}
    names = {f.id: p.string_table[f.name] for f in p.function}
    seen: dict[str, set[str]] = {}
    for loc in p.location:
        for line in loc.line:
            seen.setdefault(names[line.function_id], set()).add(files.get(loc.mapping_id, ""))
    assert all(len(s) == 1 for s in seen.values()), "a function in two mappings: the test's premise fails"
    return {name: s.pop() for name, s in seen.items()}


@pytest.fixture
def cache(tmp_path, go_profiles):
    objects = FilesystemObjectStore(tmp_path)
    labels = {"service_name": "workload", "__name__": SCRAPE_NAMES["cpu"]}
    objects.put("cpu", write_block(prepare(labels, go_profiles["cpu"], IngestLimits(), time.time_ns()).entries))
    blocks = BlockCache(objects, max_bytes=1 << 30, concurrency=2, paths=PathIndex())
    yield blocks
    blocks.close()
    objects.close()


def merged(cache: BlockCache, granularity: str = "functions"):
    return merge_blocks(cache, {"cpu": "cpu"}, np.array(["cpu"], object), np.array([0]), None,
                        granularity=granularity)


def test_each_function_of_a_go_profile_is_answered_with_its_executable(cache, go_profiles):
    want = expected_binaries(go_profiles["cpu"])
    executable = {f for f in want.values() if f.endswith("/workload")}
    assert len(executable) == 1, f"the Go target's executable is not among the mappings: {set(want.values())}"
    tree = merged(cache)
    names = [str(n) for n in tree.names if n != "total"]
    assert len(names) > 5 and "main.cpuHashLoop" in names
    assert cache.paths.binaries(names) == [want[n] for n in names]
    assert cache.paths.binaries(["total", "no.such.function"]) == ["", ""]


def test_line_granularity_names_carry_their_function_s_binary(cache, go_profiles):
    want = expected_binaries(go_profiles["cpu"])
    names = [str(n) for n in merged(cache, "lines").names if n != "total"]
    assert names and all(":" in n for n in names)
    assert cache.paths.binaries(names) == [want[n.rsplit(" ", 1)[0]] for n in names]


def test_a_peer_s_piece_brings_its_binaries_to_the_asking_querier(cache, go_profiles):
    want = expected_binaries(go_profiles["cpu"])
    sums, unnamed = path_sums(cache, Rows({"cpu": "cpu"}, np.array(["cpu"], object), np.array([0])))
    answer = tree_response(Piece(PartialTree(cache.paths, sums, unnamed), 1, ()), [])
    assert len(answer.binaries) == len(answer.names)
    assert {n: b for n, b in zip(answer.names, answer.binaries) if n != "total"} == \
        {n: want[n] for n in answer.names if n != "total"}
    asker = PathIndex()  # another querier's: it never loaded the block
    response_tree(answer, asker)
    names = [n for n in answer.names if n != "total"]
    assert asker.binaries(names) == [want[n] for n in names]
