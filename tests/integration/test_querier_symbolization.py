"""The querier's symbolization step on a real block: a gperftools profile of a stripped C program,
stored as a block, named through the symbolizer's own logic (in process, no gRPC) as the querier's
`Symbolizer`."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from infra import native

from flamewatch.pprof import decode, split, validate
from flamewatch.querier.symbolization import ObjectAddresses, ObjectAnswer, Symbolization
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.blockwrite import BlockEntry, write_block
from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.objstore import FilesystemConfig
from flamewatch.symbolizer.config import SymbolizerConfig
from flamewatch.symbolizer.debuginfod import DebuginfodClient
from flamewatch.symbolizer.store import DebuginfoStore
from flamewatch.symbolizer.symbolizer import OK, ObjectRequest, Symbolizer


class InProcess:
    """The symbolizer's logic behind the querier's protocol, as `flamewatch all` could wire it."""

    def __init__(self, symbolizer: Symbolizer):
        self._s = symbolizer

    def symbolize(self, tenant: str, objects: list[ObjectAddresses]) -> list[ObjectAnswer]:
        results = self._s.symbolize(tenant, [ObjectRequest(o.build_id, o.file_name, o.file_offsets)
                                             for o in objects])
        return [ObjectAnswer(r.status == OK, [tuple((f.function, f.file, f.line) for f in frames)
                                              for frames in r.locations], r.error) for r in results]


def _block(pprof: Path) -> BlockReader:
    profile = decode(gzip.decompress(pprof.read_bytes()))
    validate(profile)
    cpu = [t for t in split(profile, "process_cpu") if t.profile_type.sample_type == "cpu"][0]
    return BlockReader(write_block([BlockEntry({"service_name": "burn"}, 1, cpu, 1_000, 10**9)]))


def _names(step: Symbolization, reader: BlockReader, tenant: str = "anonymous") -> set[str]:
    return set(step.chains(reader, tenant).names.tolist())


@pytest.mark.gcc
def test_answers_dropped_at_the_memory_bound_are_asked_for_again(tmp_path: Path):
    binary = native.build_c("burn", "-O1", "-DNO_INLINE", "-DVARIANT=12")
    other = native.build_c("burn", "-O2", "-DVARIANT=13")
    first = _block(native.profile(binary.stripped, 0.5, tmp_path)[1])
    renamed = tmp_path / "other" / "burn2"  # another file name: another object for the querier
    renamed.parent.mkdir()
    shutil.copy(other.stripped, renamed)
    second = _block(native.profile(renamed, 0.5, renamed.parent)[1])
    store = FilesystemObjectStore.from_config(FilesystemConfig(str(tmp_path / "objects")))
    symbolizer = Symbolizer(DebuginfoStore(store), DebuginfodClient((), 1, 1), SymbolizerConfig())
    symbolizer.upload("anonymous", binary.path.read_bytes(), "burn")
    symbolizer.upload("anonymous", other.path.read_bytes(), "burn2")
    step = Symbolization(InProcess(symbolizer), None, max_known=1)
    try:
        query = step.for_query("anonymous")
        query.prepare([first])
        assert {"hash_loop", "sum_squares", "main"} <= _names(step, first)
        assert not query.state.partial and step.calls == 1
        query.prepare([first])  # settled: nothing asked
        assert step.calls == 1

        step.for_query("anonymous").prepare([second])  # over the bound: the first block's answers are dropped
        assert step.calls == 2 and "mix" in _names(step, second)
        assert "hash_loop" not in _names(step, first)
        step.for_query("anonymous").prepare([first])  # the block is not taken as settled: asked again
        assert step.calls == 3
        assert {"hash_loop", "sum_squares", "main"} <= _names(step, first)
    finally:
        step.close()
