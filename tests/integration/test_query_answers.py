"""What a query answer says about itself, on a real Postgres, real blocks and real profiles: how many
profiles it holds when matchers go to the samples, whether it is partial when frames stay addresses,
and what `format=pprof` names (a gperftools profile of a stripped C program, named through the
symbolizer's own logic in process, as `flamewatch all` wires it)."""

from __future__ import annotations

import gzip
import re
import subprocess
from pathlib import Path

import pytest
from e2e.pushes import rewritten
from infra import native
from integration.test_querier_symbolization import InProcess

from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.prepare import prepare
from flamewatch.ingester.writer import BlockWriter
from flamewatch.pprof import decode
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.engine import Querier
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.symbolization import Symbolization
from flamewatch.storage.objstore import FilesystemConfig, ObjectStore, open_object_store
from flamewatch.symbolizer.config import SymbolizerConfig
from flamewatch.symbolizer.debuginfod import DebuginfodClient
from flamewatch.symbolizer.store import DebuginfoStore
from flamewatch.symbolizer.symbolizer import Symbolizer

pytestmark = [pytest.mark.postgres]

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
TENANT = "t"
ALL = (0, 2**62)
MIN = 60 * 10**9
BASE = 1_767_607_200 * 10**9


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return open_object_store(FilesystemConfig(str(tmp_path / "objects")))


def push(db, store: ObjectStore, labels: dict[str, str], data: bytes, time_ns: int) -> None:
    BlockWriter(store, db).write(TENANT, prepare(labels, rewritten(data, time_ns=time_ns), IngestLimits(),
                                                 time_ns).entries)


# ------------------------------------------------------------------------------ profiles counted


@pytest.mark.go
@pytest.mark.parametrize(("selector", "profiles"), [
    ('{exp="nope"}', 0),  # no series and no sample has exp: nothing is selected
    ('{instance="a", exp="nope"}', 0),
    ('{exp=~"no.*"}', 0),
    ('{exp=""}', 4),  # an absent label is "", as in Prometheus
    ('{exp!="nope"}', 4),
    ('{instance="a", exp=""}', 2),
    ("{}", 4),
    ('{service_name="a\\x00b"}', 0),  # a NUL no stored label holds: nothing, not a Postgres error
    ('{service_name="api", exp="a\\x00b"}', 0),
])
def test_profiles_counts_only_profiles_with_a_selected_sample(db, store, go_profiles, selector: str, profiles: int):
    for i in range(4):
        push(db, store, {"service_name": "api", "instance": "ab"[i % 2]}, go_profiles["cpu"], BASE + i * MIN)
    q = Querier(db, BlockCache(store, 1 << 30, 4, PathIndex()), QuerierConfig())
    merged = q.merge(TENANT, CPU + selector, *ALL)
    pprof_merged, body = q.pprof(TENANT, CPU + selector, *ALL, None)
    assert (merged.profiles, pprof_merged.profiles) == (profiles, profiles)
    total = int(merged.tree.self_value.sum())
    assert (total > 0) == (profiles > 0)
    assert int(decode(gzip.decompress(body)).samples.values.sum()) == total


# ------------------------------------------------------------------------------ native profiles


class Native:
    def __init__(self, db, store: ObjectStore, tmp_path: Path, variant: int):
        self.binary = native.build_c("burn", "-O1", "-DNO_INLINE", f"-DVARIANT={variant}")
        self.raw, self.pprof = native.profile(self.binary.stripped, 1.0, tmp_path)
        push(db, store, {"service_name": "burn"}, self.pprof.read_bytes(), BASE)
        self.symbolizer = Symbolizer(DebuginfoStore(store), DebuginfodClient((), 1, 1), SymbolizerConfig())
        self.step = Symbolization(InProcess(self.symbolizer), db, retry_missing_s=0.0)
        self.querier = Querier(db, BlockCache(store, 1 << 30, 4, PathIndex()), QuerierConfig(), self.step)

    def upload(self) -> None:
        self.symbolizer.upload(TENANT, self.binary.path.read_bytes(), "burn")

    def merge(self):
        return self.querier.merge(TENANT, CPU + '{service_name="burn"}', *ALL)


@pytest.fixture
def burn(db, store, tmp_path: Path):
    n = Native(db, store, tmp_path, 21)
    yield n
    n.step.close()


def test_an_answer_with_frames_left_as_addresses_is_partial_and_names_their_object(burn: Native):
    stripped = str(burn.binary.stripped)  # gperftools' profile names the file, with no build ID
    before = burn.merge()
    assert any(name.startswith("[burn] 0x") for name in before.tree.names.tolist())
    assert before.partial is True
    warning = (f"frames of {stripped} are shown as addresses: no debug information names them (upload it with "
               "`flamewatch debuginfo upload`, or serve it over debuginfod)")
    assert warning in before.warnings, before.warnings

    burn.upload()
    after = burn.merge()
    assert {"main", "hash_loop", "sum_squares", "mix"} <= set(after.tree.names.tolist())
    assert not any(name.startswith("[burn] 0x") for name in after.tree.names.tolist())
    # What stays partial is only what no uploaded file names (the C library, if its frames show).
    assert not [w for w in after.warnings if stripped in w]
    shown_libc = any(name.startswith("[libc") for name in after.tree.names.tolist())
    assert after.partial is shown_libc



_TOP_ROW = re.compile(r"^\s*(\d+)(?:ns)?\s+[\d.]+%\s+[\d.]+%\s+(\d+)(?:ns)?\s+[\d.]+%\s+(.+)$")


def go_top(pprof: bytes, tmp_path: Path) -> dict[str, tuple[int, int]]:
    """(flat, cum) in ns per function, as `go tool pprof -top` reads the profile (no symbolization of its own)."""
    path = tmp_path / "downloaded.pb.gz"
    path.write_bytes(pprof)
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=100000", "-unit=ns",
                          "-symbolize=none",
                          str(path)], capture_output=True, text=True, timeout=300, check=True).stdout
    return {m[3].strip(): (int(m[1]), int(m[2])) for line in out.splitlines() if (m := _TOP_ROW.match(line))}


@pytest.mark.go
def test_pprof_of_a_native_profile_names_its_functions_after_a_debuginfo_upload(burn: Native, tmp_path: Path):
    selector = CPU + '{service_name="burn"}'
    _, before = burn.querier.pprof(TENANT, selector, *ALL, None)
    assert not {"main", "hash_loop"} & set(go_top(before, tmp_path))

    burn.upload()
    merged = burn.merge()
    answer, body = burn.querier.pprof(TENANT, selector, *ALL, None)
    top = go_top(body, tmp_path)
    flat = {}
    for name, value in zip(merged.tree.names[merged.tree.name].tolist(), merged.tree.self_value.tolist()):
        flat[name] = flat.get(name, 0) + value
    for name in ("main", "hash_loop", "sum_squares", "mix"):
        assert top[name][0] == flat.get(name, 0), (name, top)
    assert top["main"][1] == sum(f for f, _ in top.values()) == int(merged.tree.self_value.sum())
    # Lines and files too: the profile reads as if it had come symbolized.
    profile = decode(gzip.decompress(body))
    strings = profile.strings.tolist()
    files = {strings[i] for i in profile.functions.filename.tolist()}
    assert any(f.endswith("burn.c") for f in files), files
    assert int(profile.locations.line_line.max()) > 0
    assert answer.profiles == merged.profiles == 1
