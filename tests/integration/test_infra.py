"""The test infrastructure itself: each fixture in `tests/conftest.py` gives a working real part."""

import gzip
import io
import os
import re
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import psycopg
import pytest
import urllib3
from infra import gotool

TESTS_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = TESTS_DIR.parent


@pytest.mark.s3
def test_minio_keeps_objects_across_stop_and_start(minio, s3_bucket):
    client = minio.client(retries=False)
    client.put_object(s3_bucket, "a/b.txt", io.BytesIO(b"hello"), length=5)
    assert _read(client, s3_bucket, "a/b.txt") == b"hello"
    endpoint = minio.endpoint

    minio.stop()
    with pytest.raises(urllib3.exceptions.HTTPError):
        _read(client, s3_bucket, "a/b.txt")

    minio.start()
    assert minio.endpoint == endpoint
    assert _read(client, s3_bucket, "a/b.txt") == b"hello"


@pytest.mark.s3
def test_s3_bucket_is_fresh_and_empty(minio, s3_bucket):
    assert minio.client().bucket_exists(s3_bucket)
    assert list(minio.client().list_objects(s3_bucket, recursive=True)) == []


@pytest.mark.postgres
@pytest.mark.parametrize("round_", [1, 2])
def test_postgres_dsn_is_a_fresh_empty_database(postgres_dsn, round_):
    assert postgres_dsn.startswith("postgresql://")
    with psycopg.connect(postgres_dsn) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
        assert tables == (0,)  # the table the other round created is not here
        conn.execute("CREATE TABLE leftover (x int)")
        conn.execute("INSERT INTO leftover VALUES (%s)", (round_,))
        assert conn.execute("SELECT x FROM leftover").fetchall() == [(round_,)]


@pytest.mark.go
def test_go_target_serves_pprof(go_target):
    with urllib.request.urlopen(f"http://{go_target}/debug/pprof/", timeout=10) as response:
        assert response.status == 200
    with urllib.request.urlopen(f"http://{go_target}/debug/pprof/goroutine", timeout=10) as response:
        assert gzip.decompress(response.read())


@pytest.mark.go
def test_go_profiles_are_gzipped_pprof_saved_as_files(go_profiles, go_profile_files):
    assert set(go_profiles) == {"cpu", "heap", "allocs", "goroutine", "mutex", "block"}
    for name, data in go_profiles.items():
        assert data[:2] == b"\x1f\x8b", name
        assert gzip.decompress(data), name
        assert go_profile_files[name].read_bytes() == data
        assert gotool.pprof_total(go_profile_files[name]) > 0, name


@pytest.mark.go
@pytest.mark.parametrize(
    ("profile", "sample_index", "function"),
    [
        ("cpu", None, "main.cpuFibonacci"),
        ("cpu", "cpu", "main.cpuHashLoop"),
        ("allocs", "alloc_space", "main.allocChurn"),
        ("heap", "inuse_space", "main.allocChurn"),
        ("goroutine", None, "main.parkedGoroutine"),
        ("mutex", "delay", "main.mutexContention"),
        ("block", "contentions", "main.channelBlocking"),
    ],
)
def test_workload_functions_appear_in_their_profiles(go_profile_files, profile, sample_index, function):
    top = gotool.pprof_top(go_profile_files[profile], sample_index)
    assert top[function][1] > 0


@pytest.mark.go
@pytest.mark.parametrize(
    ("profile", "sample_index", "unit"),
    [
        ("cpu", "cpu", "ns"),
        ("allocs", "alloc_space", "B"),
        ("heap", "inuse_objects", None),
        ("goroutine", None, None),
        ("mutex", "delay", "ns"),
        ("block", "contentions", None),
    ],
)
def test_pprof_top_agrees_with_go_tool_top(go_profile_files, profile, sample_index, unit):
    """`gotool` computes flat/cum from `-raw`; `-top` with raw units must print the same numbers."""
    path = go_profile_files[profile]
    expected_top, expected_total = _go_tool_top(path, sample_index, unit)
    top = {name: values for name, values in gotool.pprof_top(path, sample_index).items() if any(values)}
    assert top == expected_top
    assert gotool.pprof_total(path, sample_index) == expected_total


@pytest.mark.postgres
def test_fixture_without_its_marker_fails_the_test(tmp_path, _postgres_server):
    (tmp_path / "test_markers.py").write_text(textwrap.dedent("""
        import psycopg
        import pytest

        def test_uses_postgres(postgres_dsn):
            pass

        @pytest.mark.postgres
        def test_uses_bucket(s3_bucket):
            pass

        def test_uses_go(go_profile_files):
            pass

        @pytest.mark.postgres
        def test_marked(postgres_dsn):
            psycopg.connect(postgres_dsn).close()
    """))
    # The nested run gets this session's server the way a developer's own server is given.
    result = _run_pytest_with_project_fixtures(tmp_path, {"FLAMEWATCH_TEST_POSTGRES_DSN": _postgres_server})
    assert result.returncode == 1, result.stdout
    assert "1 passed, 3 errors" in result.stdout
    assert "test_uses_postgres uses postgres_dsn but is not marked @pytest.mark.postgres" in result.stdout
    assert "test_uses_bucket uses minio, s3_bucket but is not marked @pytest.mark.s3" in result.stdout
    assert "test_uses_go uses go_profile_files but is not marked @pytest.mark.go" in result.stdout


def _run_pytest_with_project_fixtures(directory: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run pytest on `directory` with the project's settings and `tests/conftest.py` as a plugin."""
    settings = ["-c", str(REPO_ROOT / "pyproject.toml"), "--rootdir", str(directory)]
    plugins = ["-p", "conftest", "-p", "no:cacheprovider"]
    command = [sys.executable, "-m", "pytest", *settings, *plugins, str(directory)]
    return subprocess.run(command, cwd=directory, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env, "PYTHONPATH": str(TESTS_DIR)})


def _read(client, bucket: str, key: str) -> bytes:
    response = client.get_object(bucket, key)
    try:
        return response.read()
    finally:
        response.close()
        response.release_conn()


_TOP_ROW = re.compile(r"^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+?)(?: \(inline\))?$")
_TOP_TOTAL = re.compile(r"of (-?\d+)[a-zA-Z]* total")


def _go_tool_top(path: Path, sample_index: str | None, unit: str | None) -> tuple[dict, int]:
    options = ["-top", "-nodecount=100000", "-nodefraction=0", "-edgefraction=0", "-symbolize=none"]
    options += [f"-sample_index={sample_index}"] if sample_index else []
    options += [f"-unit={unit}"] if unit else []
    output = subprocess.run(["go", "tool", "pprof", *options, str(path)],
                            capture_output=True, text=True, check=True, timeout=300).stdout
    lines = output.splitlines()
    total = int(_TOP_TOTAL.search(output).group(1))
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["flat", "flat%"])
    rows = {}
    for line in lines[header + 1:]:
        flat, cum, name = _TOP_ROW.match(line).groups()
        # -top marks a function some of whose calls were inlined; -raw names it plainly
        rows[name.removesuffix(" (partial-inline)")] = (_integer(flat, unit), _integer(cum, unit))
    return rows, total


def _integer(value: str, unit: str | None) -> int:
    return int(value.removesuffix(unit) if unit else value)
