"""A block read with nothing of Flamewatch's: DuckDB runs the README's SQL over the Parquet file, and pandas
reads it too (README, "Reading blocks yourself").

The SQL is taken from the README's block marked `<!-- readme-sql: top-functions -->`, so the README and
this test cannot drift apart. The block is written by Flamewatch's own path (the ingester's `prepare`, then
`write_block`) from the session's real Go profiles and a copy of the CPU profile with part of its symbols
stripped, as a binary without them gives them: the frames the SQL names by mapping file and address. The
query's rows must be the querier's `top` answer over the same profiles (`merge_blocks`, then `render_top`),
every function, names and values exactly.
"""

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest
from infra.gotargets import SAMPLE_TYPES
from infra.gotool import pprof_total
from infra.querypath import QueryPath

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from flamewatch.querier.calltree import CallTree
from flamewatch.querier.engine import merge_blocks
from flamewatch.querier.formats.top import render_top
from flamewatch.storage.blockread import BlockReader

ROOT = Path(__file__).resolve().parents[2]
SQL_BLOCK = re.compile(r"<!-- readme-sql: ([\w-]+) -->\n```sql\n(.*?)```", re.S)
OLD_BLOCKS = ROOT / "tests" / "unit" / "testdata" / "block"
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
SUMMED_TYPES = [CPU, "memory:alloc_space:bytes:space:bytes", "mutex:delay:nanoseconds:contentions:count"]
EVERY_ROW = 1 << 30  # render_top's max_nodes: the SQL has no LIMIT


def readme_sql() -> str:
    return dict(SQL_BLOCK.findall((ROOT / "README.md").read_text()))["top-functions"]


def sql_top(block: str, profile_type: str) -> list[tuple[str, int, int]]:
    """The README's query with its two variables set, as a reader runs it in the DuckDB shell."""
    with duckdb.connect() as con:
        con.execute("SET VARIABLE block = $1", [block])
        con.execute("SET VARIABLE profile_type = $1", [profile_type])
        return [(name, int(self_value), int(total)) for name, self_value, total in con.execute(readme_sql()).fetchall()]


def top(tree: CallTree) -> list[tuple[str, int, int]]:
    """The querier's `top` answer (every row) as (name, self, total)."""
    return [(e["name"], e["self"], e["total"]) for e in render_top(tree, EVERY_ROW)["entries"]]


def stripped(data: bytes) -> bytes:
    """The profile with every other location's lines removed (unsymbolized, named by mapping file and
    address) and every fourth one's mapping too (named by its bare address)."""
    profile = pb.Profile.FromString(gzip.decompress(data))
    for i, location in enumerate(profile.location):
        if i % 2:
            del location.line[:]
        if i % 4 == 1:
            location.mapping_id = 0
    return gzip.compress(profile.SerializeToString())


@pytest.fixture(scope="module")
def written(go_profiles, tmp_path_factory):
    """(the query path, the block's file): every profile of the session and the stripped CPU copy."""
    directory = tmp_path_factory.mktemp("objects")
    with QueryPath(directory) as path:
        path.push_block([*go_profiles.values(), stripped(go_profiles["cpu"])])
        yield path, directory / "test" / "blocks" / "0.parquet"


@pytest.mark.go
@pytest.mark.parametrize("profile_type", SUMMED_TYPES)
def test_the_readme_sql_gives_the_top_answer(written, profile_type):
    path, block = written
    got = sql_top(str(block), profile_type)
    assert got == top(path.merge(profile_type))
    if profile_type == CPU:
        names = [name for name, _, _ in got]
        assert "main.cpuFibonacci" in names
        assert any(n.startswith("[workload] 0x") for n in names) and any(n.startswith("0x") for n in names)


@pytest.mark.go
def test_the_readme_sql_reads_many_blocks_through_a_glob(go_profiles, tmp_path):
    with QueryPath(tmp_path) as path:
        path.push_block([go_profiles["cpu"]])
        path.push_block([go_profiles["cpu"], stripped(go_profiles["cpu"])])
        got = sql_top(str(tmp_path / "test" / "blocks" / "*.parquet"), CPU)
        assert got == top(path.merge(CPU))
    assert got != []


@pytest.mark.parametrize("version", [1, 2])
def test_the_readme_sql_reads_older_versions(version, tmp_path):
    """Blocks written before version 3 stay in the store until compaction rewrites them."""
    old = OLD_BLOCKS / f"test_v{version}_block_still_reads.parquet"
    types = BlockReader(old.read_bytes()).profiles.column("profile_type").to_numpy(zero_copy_only=False)
    key = "old/blocks/0.parquet"
    with QueryPath(tmp_path) as path:
        path.store.put(key, old.read_bytes())
        for profile_type in sorted(set(types)):
            rows = np.flatnonzero(types == profile_type)
            expected = top(merge_blocks(path.cache, {key: key}, np.full(len(rows), key, object), rows, None))
            assert sql_top(str(tmp_path / key), profile_type) == expected
            assert expected != []


# pandas runs in a process of its own, from the directory the Makefile installs it into (PANDAS_SITE): in the
# virtualenv it would be imported by pyarrow into every Flamewatch process of the tests.
PANDAS_SITE = Path(__file__).resolve().parents[2] / ".cache" / "pandas-3.1.1"
PANDAS_SCRIPT = """
import json, sys
import pandas as pd
frame = pd.read_parquet(sys.argv[1], engine="pyarrow")
profiles = frame[frame.section == "profiles"]
print(json.dumps({
    "version": pd.__version__,
    "sizes": {k: int(v) for k, v in frame.groupby("section").size().items()},
    "sums_are_totals": bool(all(sum(v) == t for v, t in zip(profiles["values"], profiles["total"]))),
    "totals": {t: profiles[profiles.profile_type == t]["total"].astype(int).tolist()
               for t in profiles.profile_type.unique()},
    "labels": sorted(profiles["series_labels"].unique().tolist()),
}))
"""


@pytest.mark.go
def test_pandas_reads_the_sections_and_a_profiles_total(written, go_profiles, go_profile_files):
    _, block = written
    assert PANDAS_SITE.is_dir(), f"pandas is not installed in {PANDAS_SITE}: make test-deps installs it"
    done = subprocess.run([sys.executable, "-c", PANDAS_SCRIPT, str(block)], capture_output=True, text=True,
                          env={"PYTHONPATH": str(PANDAS_SITE), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    read = json.loads(done.stdout)
    assert read["version"] == "3.1.1"
    stored = BlockReader(block.read_bytes())
    assert read["sizes"] == {
        "strings": len(stored.strings), "functions": len(stored.functions["name"]),
        "mappings": len(stored.mappings["filename"]), "locations": len(stored.frames["function"]),
        "labels": len(stored.label_sets["set"]), "stacks": len(stored.node_parent),
        "profiles": sum(len(SAMPLE_TYPES[name]) for name in go_profiles) + len(SAMPLE_TYPES["cpu"]),
    }
    assert read["sums_are_totals"]
    assert read["totals"][CPU] == [pprof_total(go_profile_files["cpu"], "cpu")] * 2  # the profile, its stripped copy
    assert {json.loads(labels)["service_name"] for labels in read["labels"]} == {"test"}
