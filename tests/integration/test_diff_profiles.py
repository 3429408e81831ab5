"""A `go tool pprof -diff_base` comparison pushed as a profile: negative values through merge and truncation.

pprof writes the base profile's samples negated into the comparison, so per function and in total the
values may have either sign. The querier folds truncated nodes by their signed totals and ranks nodes
by absolute weight, so every rendering keeps `go tool pprof`'s exact total at any `max_nodes`.
"""

import subprocess
from pathlib import Path

import pytest
from infra import gotargets
from infra.gotool import pprof_raw, pprof_top, pprof_total
from infra.querypath import QueryPath

from flamewatch.querier.formats.diff import render_diff
from flamewatch.querier.formats.flamegraph import render_flamegraph
from flamewatch.querier.formats.top import render_top
from flamewatch.querier.formats.tree import render_tree

pytestmark = pytest.mark.go


@pytest.fixture(scope="module")
def diff_file(go_profile_files, _go_workload, tmp_path_factory) -> Path:
    """A comparison of the session's 2 s CPU profile against a 1 s one of another run of the program."""
    directory = tmp_path_factory.mktemp("diff")
    with gotargets.GoTarget(_go_workload, directory / "workload.log") as target:
        base = gotargets.capture_profiles(target.addr, cpu_seconds=1)["cpu"]
    (directory / "base.pb.gz").write_bytes(base)
    result = subprocess.run(["go", "tool", "pprof", "-proto", "-symbolize=none", "-diff_base",
                             str(directory / "base.pb.gz"), str(go_profile_files["cpu"])],
                            capture_output=True, check=True, timeout=300)
    path = directory / "diff.pb.gz"
    path.write_bytes(result.stdout)
    return path


@pytest.fixture(scope="module")
def merged(diff_file, tmp_path_factory):
    with QueryPath(tmp_path_factory.mktemp("objects")) as path:
        path.push_block([diff_file.read_bytes()])
        yield path.merge("process_cpu:cpu:nanoseconds:cpu:nanoseconds")


def test_the_comparison_has_values_of_both_signs(diff_file):
    values = [values[1] for values, _ in pprof_raw(diff_file).samples]
    assert min(values) < 0 < max(values)


@pytest.mark.parametrize("render", [render_flamegraph, render_tree, render_top])
def test_every_rendering_keeps_go_tool_pprofs_total_at_any_max_nodes(merged, diff_file, render):
    expected = pprof_total(diff_file, "cpu")
    for max_nodes in [*range(1, 40), 64, 256, 4096]:
        assert render(merged, max_nodes)["total"] == expected, max_nodes


def test_the_diff_format_keeps_both_totals(merged, diff_file):
    expected = pprof_total(diff_file, "cpu")
    for max_nodes in range(1, 40):
        answer = render_diff(merged, merged, max_nodes)
        assert (answer["left_ticks"], answer["right_ticks"]) == (expected, expected), max_nodes


def test_truncated_tree_nodes_keep_their_totals(merged):
    full = {child["name"]: child["total"] for child in render_tree(merged, 1 << 20)["children"]}
    for max_nodes in range(2, 40):
        for child in render_tree(merged, max_nodes)["children"]:
            if child["name"] != "other":
                assert child["total"] == full[child["name"]], (max_nodes, child["name"])


def test_top_rows_are_go_tool_pprofs_flat_and_cum(merged, diff_file):
    # A function whose increases and decreases cancel out is (0, 0): go tool pprof lists it, we need not.
    expected = {name: (flat, cum) for name, (flat, cum) in pprof_top(diff_file, "cpu").items() if flat or cum}
    rows = render_top(merged, 100_000)["entries"]
    assert {row["name"]: (row["self"], row["total"]) for row in rows if row["self"] or row["total"]} == expected
    heaviest = max(abs(flat) for flat, _ in expected.values())
    assert abs(rows[0]["self"]) == heaviest  # ranked by absolute value: regressions and improvements alike
