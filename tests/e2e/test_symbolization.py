"""Profiles that arrive as bare addresses, named at query time by a separate `flamewatch symbolizer`.

Real producers: a C program built with `gcc -g`, its stripped copy run under gperftools' CPU profiler
and the profile converted with `go tool pprof -proto -symbolize=none`; a Go program built without DWARF
(`-ldflags=-w`) whose profile's function table is removed. The oracles are `go tool pprof
-symbolize=local` on the same profile and binary, and the Go runtime's own names for the Go profile.
Services run as processes: ingester, symbolizer (with a real debuginfod serving a directory), querier.
"""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from e2e.cluster import FLAMEWATCH, Service, Storage
from infra import native
from infra.gotargets import TARGETS_SOURCE_DIR, GoTarget

from flamewatch.api.flamewatch.v1 import query_pb2, query_pb2_grpc, symbolizer_pb2, symbolizer_pb2_grpc, types_pb2
from flamewatch.api.perftools.profiles import profile_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go, pytest.mark.debuginfod]

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
NAMED_WITHIN_S = 20.0  # the querier asks again for objects it found no debug information for after 5 s


class Stack:
    def __init__(self, storage: Storage, workdir: Path, debuginfod_url: str):
        self.ingester = Service("ingester", "ingester", storage, workdir / "ingester.log",
                                ("--flush-interval", "0.2", "--compaction.interval", "0"))
        self.symbolizer = Service("symbolizer", "symbolizer", storage, workdir / "symbolizer.log",
                                  ("--symbolizer.debuginfod-url", debuginfod_url))
        self.querier = Service("querier", "querier", storage, workdir / "querier.log",
                               ("--symbolizer.address", self.symbolizer.grpc_address))
        self.http = httpx.Client(timeout=60)

    def services(self) -> list[Service]:
        return [self.ingester, self.symbolizer, self.querier]

    def push(self, pprof: Path, service_name: str) -> None:
        r = self.http.post(f"{self.ingester.url}/ingest", params={"service_name": service_name,
                                                                   "__name__": "process_cpu"},
                           content=pprof.read_bytes())
        assert r.status_code == 200, r.text

    def query(self, service_name: str, granularity: str = "lines") -> dict:
        r = self.http.get(f"{self.querier.url}/api/v1/query", params={
            "query": f'{CPU}{{service_name="{service_name}"}}', "from": "now-1h", "format": "tree",
            "granularity": granularity, "max_nodes": 100000})
        assert r.status_code == 200, r.text
        return r.json()

    def upload_debuginfo(self, *files: Path) -> subprocess.CompletedProcess:
        return subprocess.run([str(FLAMEWATCH), "debuginfo", "upload", *map(str, files), "--symbolizer.address",
                               self.symbolizer.grpc_address], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def debuginfod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[native.Debuginfod, Path]]:
    served = tmp_path_factory.mktemp("debuginfod-files")
    with native.Debuginfod(served, tmp_path_factory.mktemp("debuginfod")) as server:
        yield server, served


@pytest.fixture(scope="module")
def stack(e2e_storage: Storage, debuginfod, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    s = Stack(e2e_storage, tmp_path_factory.mktemp("symbolization"), debuginfod[0].url)
    try:
        for service in s.services():
            service.start()
        yield s
    finally:
        s.http.close()
        codes = {service.name: service.stop() for service in s.services()}
    assert all(code in (0, None) for code in codes.values()), codes


# ------------------------------------------------------------------------------------------ oracles

UNNAMED = "<a location pprof does not name>"
_RAW_LOCATION = re.compile(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ ?(.*)$")
_RAW_MORE = re.compile(r"^ {13}(\S.*)$")
_RAW_LINE = re.compile(r"^(\S+) (\S*?):(\d+):\d+ s=\d+$")
_RAW_SAMPLE = re.compile(r"^\s*(\d+)\s+(\d+): ([\d ]+)$")


def pprof_local(binary: Path, raw_profile: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(cum, self) of each `function file:line` that `go tool pprof -symbolize=local` names, in ns."""
    out = subprocess.run(["go", "tool", "pprof", "-raw", "-symbolize=local", str(binary), str(raw_profile)],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    names: dict[int, list[str]] = {}
    samples, current = [], None
    for line in out.splitlines():
        if m := _RAW_SAMPLE.match(line):
            samples.append((int(m[2]), [int(x) for x in m[3].split()]))
        elif (m := _RAW_LOCATION.match(line)) and line.startswith("    "):
            current = int(m[1])
            # A location pprof cannot name stays in the stack, unnamed: dropping it would move its samples'
            # self time onto their caller, which Flamewatch (naming the frame, or showing its address) does not.
            names[current] = [_line_name(m[2])] if m[2] else [UNNAMED]
        elif (m := _RAW_MORE.match(line)) and current is not None:
            names[current].append(_line_name(m[1]))
    return _cum_self([(v, [n for loc in locs for n in names[loc]]) for v, locs in samples])


def _line_name(text: str) -> str:
    m = _RAW_LINE.match(text.strip())
    assert m, text
    return f"{m[1]} {m[2].rsplit('/', 1)[-1]}:{m[3]}"


def _cum_self(samples: list[tuple[int, list[str]]]) -> tuple[dict[str, int], dict[str, int]]:
    cum, flat = defaultdict(int), defaultdict(int)
    for value, stack in samples:  # stack leaf first
        for name in set(stack):
            cum[name] += value
        if stack:
            flat[stack[0]] += value
    return ({n: v for n, v in cum.items() if n != UNNAMED}, {n: v for n, v in flat.items() if n != UNNAMED})


def tree_cum_self(tree: dict) -> tuple[dict[str, int], dict[str, int]]:
    """(cum, self) per name of a tree answer, a name counted once per path (as pprof counts recursion)."""
    cum, flat = defaultdict(int), defaultdict(int)

    def walk(node: dict, above: frozenset) -> None:
        if node["name"] not in above:
            cum[node["name"]] += node["total"]
        flat[node["name"]] += node["self"]
        for child in node.get("children", []):
            walk(child, above | {node["name"]})

    for child in tree.get("children", []):
        walk(child, frozenset())
    return dict(cum), dict(flat)


def names_of(tree: dict) -> set[str]:
    found = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        found.add(node["name"])
        stack.extend(node.get("children", []))
    return found


def query_until(stack: Stack, service_name: str, done, granularity: str = "lines") -> dict:
    deadline = time.monotonic() + NAMED_WITHIN_S
    while True:
        answer = stack.query(service_name, granularity)
        if done(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.5)


# ------------------------------------------------------------------------------------------ C programs


@pytest.mark.gcc
def test_c_profile_named_after_debuginfo_upload_as_pprof_local_names_it(stack: Stack, tmp_path: Path):
    binary = native.build_c("burn", "-O1", "-DNO_INLINE", "-DVARIANT=1")
    raw, pprof = native.profile(binary.stripped, 1.0, tmp_path)
    stack.push(pprof, "burn-upload")

    before = stack.query("burn-upload")
    assert any(n.startswith("[burn] 0x") for n in names_of(before["tree"])), names_of(before["tree"])
    assert not any(n.startswith("hash_loop") for n in names_of(before["tree"]))
    assert before["partial"] is True
    assert f"frames of {binary.stripped} are shown as addresses: no debug information names them (upload it " \
        "with `flamewatch debuginfo upload`, or serve it over debuginfod)" in before["warnings"]

    done = stack.upload_debuginfo(binary.path)
    assert done.returncode == 0, done.stderr
    answer = query_until(stack, "burn-upload", lambda a: "hash_loop" in str(names_of(a["tree"])))

    want_cum, want_self = pprof_local(binary.path, raw)
    got_cum, got_self = tree_cum_self(answer["tree"])
    assert {"main", "hash_loop", "sum_squares", "mix"} <= {n.split()[0] for n in want_cum}
    assert {n: got_cum.get(n) for n in want_cum} == want_cum
    assert {n: got_self.get(n) for n in want_self} == want_self
    assert_partial_only_for_unuploaded_objects(answer, binary.stripped)

    functions = stack.query("burn-upload", "functions")
    fn_cum, _ = tree_cum_self(functions["tree"])
    for name in ("main", "hash_loop", "sum_squares", "mix"):
        assert fn_cum[name] == sum(v for n, v in want_cum.items() if n.split()[0] == name)

    # The UI's "Download pprof": go tool pprof names the same functions with the same times.
    top = downloaded_top(stack, "burn-upload", tmp_path)
    for name in ("main", "hash_loop", "sum_squares", "mix"):
        assert top[name] == fn_cum[name], (name, top)


_TOP_ROW = re.compile(r"^\s*\d+(?:ns)?\s+[\d.]+%\s+[\d.]+%\s+(\d+)(?:ns)?\s+[\d.]+%\s+(.+)$")


def downloaded_top(stack: Stack, service_name: str, tmp_path: Path) -> dict[str, int]:
    """Cumulative ns per function, as `go tool pprof -top` reads the querier's `format=pprof` answer."""
    r = stack.http.get(f"{stack.querier.url}/api/v1/query", params={
        "query": f'{CPU}{{service_name="{service_name}"}}', "from": "now-1h", "format": "pprof"})
    assert r.status_code == 200, r.text
    path = tmp_path / "downloaded.pb.gz"
    path.write_bytes(r.content)
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=100000", "-unit=ns",
                          "-symbolize=none",
                          str(path)], capture_output=True, text=True, timeout=300, check=True).stdout
    return {m[2].strip(): int(m[1]) for line in out.splitlines() if (m := _TOP_ROW.match(line))}


@pytest.mark.gcc
def test_c_profile_named_through_debuginfod_with_nothing_uploaded(stack: Stack, debuginfod, tmp_path: Path):
    server, served = debuginfod
    binary = native.build_c("burn", "-O1", "-DNO_INLINE", "-DVARIANT=2")
    build_id = _build_id(binary.path)
    shutil.copy(binary.path, served / "burn-variant-2")
    raw, pprof = native.profile(binary.stripped, 1.0, tmp_path)
    # What an agent reading the running binary would send: the mapping's GNU build ID.
    with_ids = _with_build_id(pprof, "burn", build_id, tmp_path / "with-build-id.pb.gz")
    stack.push(with_ids, "burn-debuginfod")
    server.wait_for(build_id)

    answer = query_until(stack, "burn-debuginfod", lambda a: "hash_loop" in str(names_of(a["tree"])))
    want_cum, _ = pprof_local(binary.path, raw)
    got_cum, _ = tree_cum_self(answer["tree"])
    assert {n: got_cum.get(n) for n in want_cum} == want_cum
    exists = _symbolizer(stack).DebuginfoExists(symbolizer_pb2.DebuginfoExistsRequest(build_id=build_id))
    assert (exists.exists, exists.source) == (True, server.url)


@pytest.mark.gcc
def test_inlined_function_is_a_frame_of_its_own(stack: Stack, tmp_path: Path):
    binary = native.build_c("burn", "-O2", "-DVARIANT=4")  # mix is inlined into hash_loop
    _, pprof = native.profile(binary.stripped, 1.0, tmp_path)
    stack.push(pprof, "burn-inline")
    assert stack.upload_debuginfo(binary.path).returncode == 0

    answer = query_until(stack, "burn-inline", lambda a: "mix" in names_of(a["tree"]), "functions")
    parents = _parents(answer["tree"])
    assert parents["mix"] == {"hash_loop"}, parents
    assert parents["hash_loop"] == {"main"}


@pytest.mark.gcc
def test_symbolizer_outage_answers_with_addresses_and_says_partial(stack: Stack, tmp_path: Path):
    built = native.build_c("burn", "-O1", "-DNO_INLINE", "-DVARIANT=3")
    # A file name of its own: the tests before uploaded other builds as "burn", and a mapping without a
    # build ID is named by the upload of its file name, so their answers could name this one's frames.
    binary = _renamed(built, "burn-outage", tmp_path)
    _, pprof = native.profile(binary.stripped, 1.0, tmp_path)
    stack.push(pprof, "burn-outage")
    stack.symbolizer.stop()
    try:
        answer = stack.query("burn-outage")
        assert answer["partial"] is True
        assert "symbolizer is unavailable" in answer["warnings"][0]
        assert any(n.startswith("[burn-outage] 0x") for n in names_of(answer["tree"]))
        with grpc.insecure_channel(stack.querier.grpc_address) as channel:
            response = query_pb2_grpc.QueryServiceStub(channel).Query(query_pb2.QueryRequest(
                query=f'{CPU}{{service_name="burn-outage"}}', range=types_pb2.TimeRange(
                    start_ns=time.time_ns() - 3600 * 10**9, end_ns=time.time_ns())), timeout=60)
        assert response.partial and "symbolizer is unavailable" in response.warnings[0]
    finally:
        stack.symbolizer.start()
    assert stack.upload_debuginfo(binary.path).returncode == 0
    answer = query_until(stack, "burn-outage", lambda a: "hash_loop" in str(names_of(a["tree"])))
    assert "hash_loop" in str(names_of(answer["tree"]))
    assert_partial_only_for_unuploaded_objects(answer, binary.stripped)


def _renamed(binary: native.NativeBinary, name: str, tmp_path: Path) -> native.NativeBinary:
    """The same build under another file name (the program and its stripped copy)."""
    out = tmp_path / name
    (out / "stripped").mkdir(parents=True)
    shutil.copy(binary.path, out / name)
    shutil.copy(binary.stripped, out / "stripped" / name)
    return native.NativeBinary(out / name, out / "stripped" / name, binary.debug)


def _without_go_wrappers(cum_self: tuple[dict[str, int], dict[str, int]]) -> tuple[dict[str, int], dict[str, int]]:
    wrapper = re.compile(r"\.gowrap\d+ ")
    return tuple({name: ns for name, ns in part.items() if not wrapper.search(name)} for part in cum_self)


# The kernel's objects mapped into every process: no file, nothing to upload, never asked about or warned
# of (a sample lands in the vDSO when the profiler interrupts a clock_gettime; on some runs none does).
KERNEL_OBJECTS = {"vdso", "vsyscall"}


def assert_partial_only_for_unuploaded_objects(answer: dict, uploaded: Path) -> None:
    """Frames of the uploaded program are all named; the answer is partial exactly when it still shows
    frames of another object (the C library, whose debug information nobody uploaded), each named."""
    shown = {n.split("]")[0][1:] for n in names_of(answer["tree"]) if n.startswith("[")} - KERNEL_OBJECTS
    assert uploaded.name not in shown
    assert answer["partial"] is bool(shown)
    named = [re.compile(rf"/{re.escape(name)}( \(build ID [0-9a-f]+\))? are shown as addresses") for name in shown]
    assert all(any(pattern.search(w) for w in answer["warnings"]) for pattern in named), (shown, answer["warnings"])
    assert not [w for w in answer["warnings"] if str(uploaded) in w]


# ------------------------------------------------------------------------------------------ Go


def test_go_binary_without_dwarf_named_from_its_line_table(stack: Stack, tmp_path: Path):
    binary = tmp_path / "workload-nodwarf"
    subprocess.run(["go", "build", "-ldflags=-w", "-o", str(binary), "."], cwd=TARGETS_SOURCE_DIR / "workload",
                   check=True, capture_output=True, timeout=300)
    with GoTarget(binary, tmp_path / "workload.log") as target:
        url = f"http://{target.addr}/debug/pprof/profile?seconds=2"
        with urllib.request.urlopen(url, timeout=60) as response:
            original = tmp_path / "original.pb.gz"
            original.write_bytes(response.read())
    bare = _without_functions(original, tmp_path / "bare.pb.gz")
    stack.push(original, "go-original")
    stack.push(bare, "go-bare")
    assert stack.upload_debuginfo(binary).returncode == 0

    want = stack.query("go-original")
    answer = query_until(stack, "go-bare", lambda a: "main.cpuHashLoop" in str(names_of(a["tree"])))
    # Go's own profiles leave out the wrapper a `go f(x)` statement compiles to (`main.f.gowrap1`); the line
    # table names it, so a sample taken inside such a goroutine has one frame more here (a known gap)
    assert _without_go_wrappers(tree_cum_self(answer["tree"])) == tree_cum_self(want["tree"])
    assert "main.cpuHashLoop" in str(names_of(answer["tree"]))


# ------------------------------------------------------------------------------------------ bad input


@pytest.mark.gcc
def test_upload_of_a_file_that_is_not_elf_is_refused_with_its_reason(stack: Stack, tmp_path: Path):
    not_elf = tmp_path / "notes.txt"
    not_elf.write_text("hello")
    done = stack.upload_debuginfo(not_elf)
    assert done.returncode == 1
    assert done.stderr.strip() == (f"flamewatch debuginfo upload: {not_elf} is not an ELF file (it starts with "
                                   "b'hell', not b'\\x7fELF')")
    with pytest.raises(grpc.RpcError) as raised:
        _symbolizer(stack).UploadDebuginfo(iter([symbolizer_pb2.UploadDebuginfoChunk(
            file_name="truncated", data=native.build_c("burn", "-O1").path.read_bytes()[:100])]))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "truncated is a truncated ELF file" in raised.value.details()


@pytest.mark.gcc
def test_debug_file_of_another_build_is_refused(stack: Stack, tmp_path: Path):
    one = native.build_c("burn", "-O1", "-DVARIANT=5")
    other = native.build_c("burn", "-O1", "-DVARIANT=6")
    mixed = tmp_path / "burn"
    shutil.copy(one.stripped, mixed)
    shutil.copy(other.debug, tmp_path / "burn.debug")
    done = stack.upload_debuginfo(mixed, tmp_path / "burn.debug")
    assert done.returncode == 1
    assert (f"{tmp_path}/burn.debug has build ID {_build_id(other.path)} but {mixed} has {_build_id(one.path)}"
            in done.stderr)


# ------------------------------------------------------------------------------------------ helpers


def _symbolizer(stack: Stack) -> symbolizer_pb2_grpc.SymbolizerServiceStub:
    return symbolizer_pb2_grpc.SymbolizerServiceStub(grpc.insecure_channel(stack.symbolizer.grpc_address))


def _build_id(binary: Path) -> str:
    out = subprocess.run(["readelf", "-n", str(binary)], capture_output=True, text=True, check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out)[1]


def _load(path: Path) -> profile_pb2.Profile:
    p = profile_pb2.Profile()
    p.ParseFromString(gzip.decompress(path.read_bytes()))
    return p


def _with_build_id(path: Path, file_base: str, build_id: str, out: Path) -> Path:
    p = _load(path)
    p.string_table.append(build_id)
    for m in p.mapping:
        if p.string_table[m.filename].rsplit("/", 1)[-1] == file_base:
            m.build_id = len(p.string_table) - 1
    out.write_bytes(gzip.compress(p.SerializeToString()))
    return out


def _without_functions(path: Path, out: Path) -> Path:
    """The profile with its function table and every location's lines removed: bare addresses."""
    p = _load(path)
    del p.function[:]
    for loc in p.location:
        del loc.line[:]
    for m in p.mapping:
        m.has_functions = m.has_filenames = m.has_line_numbers = m.has_inline_frames = False
    out.write_bytes(gzip.compress(p.SerializeToString()))
    return out


def _parents(tree: dict) -> dict[str, set[str]]:
    parents = defaultdict(set)
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in node.get("children", []):
            parents[child["name"]].add(node["name"])
            stack.append(child)
    return parents


