"""A whole `flamewatch all`, at the moment its `/readyz` first answers 200, has not imported what its
configuration does not use: the Kubernetes client (no kubernetes_sd_configs), the S3 client (objects on
the filesystem), symbolic (nothing symbolized yet), pyarrow.compute (no query yet), nor any test tool.

The process runs `flamewatch.cli.main` in its main thread while a thread of its own waits for readiness,
lists the modules of interest in `sys.modules`, prints them and stops the process with SIGTERM, as a
supervisor would. `tests/unit/test_lazy_imports.py` checks the single modules.
"""

import json
import subprocess
import sys
import textwrap

import pytest
from infra.ports import free_port

pytestmark = [pytest.mark.postgres]

NOT_AT_START = ("kubernetes", "flamewatch.collector.discovery.kubernetes", "minio", "flamewatch.storage.s3",
                "symbolic", "pyarrow.compute", "schemathesis", "playwright", "hypothesis", "pytest")

SCRIPT = textwrap.dedent("""
    import json, os, signal, sys, threading, time, urllib.request
    from flamewatch import cli

    url, modules, argv = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
    seen = {}

    def watch():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "loaded" not in seen:
            try:
                with urllib.request.urlopen(url + "/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        seen["loaded"] = [m for m in modules if m in sys.modules]
            except OSError:
                time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()
    code = cli.main(argv)
    print(json.dumps(seen))
    sys.exit(code)
""")


def test_flamewatch_all_is_ready_without_what_its_configuration_does_not_use(postgres_dsn, tmp_path):
    http = f"127.0.0.1:{free_port()}"
    argv = ["all", "--data-dir", str(tmp_path), "--storage.postgres-dsn", postgres_dsn, "--http-address", http,
            "--grpc-address", "127.0.0.1:0", "--log.level", "warning"]
    done = subprocess.run([sys.executable, "-c", SCRIPT, f"http://{http}", json.dumps(NOT_AT_START), *argv],
                          capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"loaded": []}
