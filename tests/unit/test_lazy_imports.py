"""What a process does not need at start is not imported at start: restart time is mostly imports.

Each check runs in a fresh interpreter (this one has imported everything already) and lists the modules
of interest that it finds in `sys.modules`. The packages named here take from a hundred milliseconds (the
S3 client, pyarrow.compute) to seconds (the Kubernetes client) to import on a loaded machine.
`tests/integration/test_lazy_startup.py` checks a whole `flamewatch all` at the moment it is ready.
"""

import json
import subprocess
import sys
import textwrap

from flamewatch.storage.objstore import FilesystemConfig, open_object_store

SERVICE_STACK = ("numpy", "pyarrow", "psycopg", "httpx", "fastapi", "grpc", "kubernetes", "minio", "symbolic")
STORAGE_AND_OTHER_SERVICES = ("psycopg", "psycopg_pool", "pyarrow.parquet", "kubernetes", "minio", "symbolic",
                              "flamewatch.storage.postgres", "flamewatch.storage.blockread",
                              "flamewatch.storage.blockwrite", "flamewatch.querier.engine",
                              "flamewatch.ingester.service", "flamewatch.symbolizer.service")
# (the services' config modules are light: the command line reads its flags' defaults from them)


def loaded_after(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` a fresh interpreter has imported after running `code`."""
    script = textwrap.dedent(code) + textwrap.dedent(f"""
        import json, sys
        print(json.dumps([m for m in {list(modules)!r} if m in sys.modules]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_command_line_alone_imports_no_service_stack():
    # `flamewatch --help` and every command's argument parsing
    assert loaded_after("import flamewatch.cli; flamewatch.cli.build_parser()", SERVICE_STACK) == []


def test_a_collector_imports_neither_storage_nor_the_other_services():
    code = """
        import flamewatch.cli
        from flamewatch.collector.discovery.registry import discoverers_for
        from flamewatch.collector.service import Collector, http_router, register_grpc
        from flamewatch.rpc.http import build_app
        from flamewatch.rpc.runtime import serve
        from flamewatch.collector.config import StaticConfig
        flamewatch.cli.build_parser()
        discoverers_for("job", [StaticConfig(targets=("127.0.0.1:6060",))])
    """
    assert loaded_after(code, STORAGE_AND_OTHER_SERVICES) == []


def test_the_kubernetes_client_is_imported_by_the_first_kubernetes_sd_config():
    code = """
        import sys
        from flamewatch.collector.discovery.registry import discoverers_for
        from flamewatch.collector.config import KubernetesSDConfig
        assert "kubernetes" not in sys.modules
        [discoverer] = discoverers_for("job", [KubernetesSDConfig(role="pod", api_server="http://127.0.0.1:1")])
        assert type(discoverer).__name__ == "KubernetesDiscoverer", type(discoverer)
    """
    assert loaded_after(code, ("kubernetes",)) == ["kubernetes"]


def test_a_filesystem_store_does_not_import_the_s3_client(tmp_path):
    code = f"""
        from flamewatch.storage.objstore import FilesystemConfig, open_object_store
        open_object_store(FilesystemConfig({str(tmp_path / "objects")!r})).close()
    """
    assert loaded_after(code, ("minio", "flamewatch.storage.s3")) == []


def test_the_filesystem_store_opens_through_its_lazy_opener(tmp_path):
    store = open_object_store(FilesystemConfig(str(tmp_path / "objects")))
    try:
        store.put("t/blocks/a", b"payload")
        assert store.get("t/blocks/a") == b"payload"
    finally:
        store.close()


def test_symbolizer_and_querier_modules_defer_symbolic_and_pyarrow_compute():
    code = """
        import flamewatch.querier.blocks, flamewatch.querier.engine, flamewatch.querier.paths
        import flamewatch.symbolizer.symbolizer, flamewatch.symbolizer.service
    """
    assert loaded_after(code, ("symbolic", "pyarrow.compute")) == []
