"""The Python package as a user builds and installs it carries the web UI (setup.py's hook, MANIFEST.in).

A copy of the checkout without a UI build goes through `python -m build` (an sdist, whose build hook
runs npm, then a wheel built from the unpacked sdist, where no UI sources are and npm is not run); the
wheel is installed with `--no-deps` into a fresh virtualenv that reuses this one's packages, and its
`flamewatch frontend` must serve the UI from the installed package.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import httpx
import pytest
from infra.ports import free_port
from infra.waiting import answers, terminate, wait_for

pytestmark = pytest.mark.npm

ROOT = Path(__file__).resolve().parents[2]
UI = Path("services/frontend/ui")
COPIED = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "libs", "services"]
# cargo's build and an editable install's module of the pprof reader are built again from its sources.
NOT_COPIED = shutil.ignore_patterns("node_modules", "dist", "__pycache__", "*.egg-info", "target", "_reader.*.so")


@pytest.fixture(scope="module")
def built(ui_node_modules: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """sdist and wheel of a copy of the checkout that has the UI's npm packages but no UI build."""
    tmp = tmp_path_factory.mktemp("package")
    src = tmp / "src"
    src.mkdir()
    for name in COPIED:
        path = ROOT / name
        (shutil.copytree(path, src / name, ignore=NOT_COPIED) if path.is_dir() else shutil.copy2(path, src / name))
    # A copy, never a link: should the hook run `npm ci`, it replaces the directory it is given.
    shutil.copytree(ui_node_modules, src / UI / "node_modules", symlinks=True)
    (src / UI / "node_modules" / ".installed").touch()
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(tmp / "out"), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "flamewatch build: building the web UI" in done.stderr
    assert "installing the web UI's npm packages" not in done.stderr
    (sdist,), (wheel,) = (tmp / "out").glob("*.tar.gz"), (tmp / "out").glob("*.whl")
    return {"sdist": sdist, "wheel": wheel, "tmp": tmp}


def assets_of(index_html: str) -> list[str]:
    """The /assets/... files the page loads."""
    return sorted(re.findall(r'(?:src|href)="/assets/([^"]+)"', index_html))


def test_the_sdist_ships_the_ui_build_and_not_its_sources(built):
    with tarfile.open(built["sdist"]) as tar:
        names = {name.partition("/")[2] for name in tar.getnames()}
        index = tar.extractfile(f"{built['sdist'].name.removesuffix('.tar.gz')}/{UI}/dist/index.html").read()
    assets = assets_of(index.decode())
    assert sorted(Path(a).suffix for a in assets) == [".css", ".js"]  # names carry content hashes: any order
    assert {f"{UI}/dist/assets/{a}" for a in assets} <= names
    assert not [n for n in names if n.startswith(f"{UI}/src") or "node_modules" in n]


def test_the_wheel_carries_the_ui_build(built):
    with zipfile.ZipFile(built["wheel"]) as whl:
        names = set(whl.namelist())
        index = whl.read("flamewatch/frontend/ui/dist/index.html").decode()
    ui_files = sorted(n for n in names if n.startswith("flamewatch/frontend/ui/"))
    assert ui_files == sorted(["flamewatch/frontend/ui/dist/index.html",
                               *(f"flamewatch/frontend/ui/dist/assets/{a}" for a in assets_of(index))])


def test_the_sdist_carries_the_pprof_readers_crate_and_the_wheel_its_module(built):
    with tarfile.open(built["sdist"]) as tar:
        crate = sorted(n.partition("/")[2] for n in tar.getnames() if "/libs/pprof/reader/" in n and n[-1] != "/")
    assert "libs/pprof/reader/Cargo.lock" in crate and "libs/pprof/reader/src/lib.rs" in crate
    assert not [n for n in crate if "/target/" in n]
    with zipfile.ZipFile(built["wheel"]) as whl:
        assert [n for n in whl.namelist() if n.startswith("flamewatch/pprof/_reader.")]


def test_an_installed_wheel_serves_the_ui(built):
    tmp = built["tmp"]
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    where = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(subprocess.check_output([venv / "bin" / "python", "-c", where], text=True).strip())
    # The dependencies come from this virtualenv's site-packages, after the fresh one's own (where the
    # wheel goes); a path added by a .pth is not scanned for .pth files, so this checkout's editable
    # install stays out of it.
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps",
                    "--no-index", "--disable-pip-version-check", "-q", str(built["wheel"])], check=True)
    port = free_port()
    log = tmp / "frontend.log"
    with log.open("wb") as out:
        process = subprocess.Popen([venv / "bin" / "flamewatch", "frontend", "--http-address", f"127.0.0.1:{port}",
                                    "--querier.url", f"http://127.0.0.1:{free_port()}"],
                                   cwd=tmp, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: answers(f"{url}/healthz"), 60, "the installed frontend", log, process)
        page = httpx.get(url)
        installed = site / "flamewatch" / "frontend" / "ui" / "dist"
        assert page.status_code == 200
        assert page.text == (installed / "index.html").read_text()
        assert "not built" not in page.text
        for asset in assets_of(page.text):
            answer = httpx.get(f"{url}/assets/{asset}")
            assert answer.status_code == 200, asset
            assert answer.content == (installed / "assets" / asset).read_bytes()
    finally:
        terminate(process, 10)
