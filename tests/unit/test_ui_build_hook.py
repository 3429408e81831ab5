"""setup.py's UI build hook decides when to run npm: checked with a stand-in `npm` that records its calls.

The real npm build of a wheel and an sdist is tests/integration/test_package.py (marker `npm`).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAKE_NPM = """#!/bin/sh
echo "$*" >> "{calls}"
if [ "$1" = run ]; then mkdir -p dist/assets && echo '<!doctype html>' > dist/index.html; fi
if [ "$1" = ci ]; then mkdir -p node_modules; fi
"""


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A checkout holding setup.py and UI sources but no build, with the stand-in npm on PATH; gives the
    imported setup module and a function returning npm's calls so far (and forgetting them)."""
    shutil.copy(ROOT / "setup.py", tmp_path / "setup.py")
    ui = tmp_path / "services" / "frontend" / "ui"
    (ui / "src").mkdir(parents=True)
    for name in ("package.json", "package-lock.json", "index.html", "src/main.tsx"):
        (ui / name).write_text("x")
    bin_dir, calls = tmp_path / "bin", tmp_path / "npm-calls"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM.format(calls=calls))
    (bin_dir / "npm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    spec = importlib.util.spec_from_file_location("flamewatch_setup", tmp_path / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def taken() -> list[str]:
        lines = calls.read_text().splitlines() if calls.exists() else []
        calls.unlink(missing_ok=True)
        return lines

    return module, taken


def later(path: Path) -> None:
    """Make `path` newer than anything written so far (file systems keep coarse times)."""
    stamp = time.time() + 5
    os.utime(path, (stamp, stamp))


def test_a_missing_build_installs_the_packages_then_builds(checkout):
    setup, npm = checkout
    setup.build_ui()
    assert npm() == ["ci --no-audit --no-fund --loglevel=error", "run --silent build"]
    assert setup.UI_INDEX.is_file() and setup.NPM_STAMP.is_file()


def test_a_current_build_is_left_alone_and_a_changed_source_rebuilds_it(checkout):
    setup, npm = checkout
    setup.build_ui()
    npm()
    setup.build_ui()
    assert npm() == []
    later(setup.UI / "src" / "main.tsx")
    setup.build_ui()
    assert npm() == ["run --silent build"]  # the packages are current: no npm ci


def test_a_changed_lock_file_installs_the_packages_again(checkout):
    setup, npm = checkout
    setup.build_ui()
    npm()
    later(setup.UI / "package-lock.json")
    setup.build_ui()
    assert npm() == ["ci --no-audit --no-fund --loglevel=error", "run --silent build"]


def test_an_unpacked_sdist_has_no_sources_and_runs_no_npm(checkout):
    setup, npm = checkout
    (setup.UI / "package.json").unlink()
    setup.build_ui()
    assert npm() == []


def test_without_npm_the_package_is_built_without_the_ui_and_says_so(checkout, monkeypatch, capsys):
    setup, npm = checkout
    monkeypatch.setenv("PATH", "/nonexistent")
    setup.build_ui()
    assert "npm not found: packaging WITHOUT the web UI" in capsys.readouterr().err
    assert not setup.UI_INDEX.exists()


def test_without_npm_an_older_build_is_packaged_as_it_is_and_said_so(checkout, monkeypatch, capsys):
    setup, npm = checkout
    setup.build_ui()
    later(setup.UI / "src" / "main.tsx")
    monkeypatch.setenv("PATH", "/nonexistent")
    setup.build_ui()
    assert "npm not found: packaging the existing web UI build" in capsys.readouterr().err
    assert setup.UI_INDEX.is_file()
