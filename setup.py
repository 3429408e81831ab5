"""Build hooks that put the web UI into the package, so `pip install .`, a wheel or an sdist serves it.

Everything else about the distribution is in pyproject.toml. The UI (services/frontend/ui, TypeScript)
is built by npm into `ui/dist/`, which is package data of `flamewatch.frontend`:

- building a wheel or an sdist from a checkout runs `npm ci` (when node_modules is missing or older than
  the lock file) and `npm run build` when the build is missing or older than its sources;
- an sdist ships the build (MANIFEST.in) and not the UI's sources, so a wheel built from it, or
  `pip install flamewatch-*.tar.gz`, needs no npm;
- without npm, a checkout's existing build is used as it is, and without one the package is built
  without the UI (its page then points at the API) and says so;
- editable installs (`make run`, `pip install -e .`) serve the checkout's build, which `make ui` keeps.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

UI = Path(__file__).resolve().parent / "services" / "frontend" / "ui"
UI_INDEX = UI / "dist" / "index.html"
# What the build is made from; the same list as the Makefile's UI_SOURCES.
UI_INPUTS = ("src", "index.html", "package.json", "package-lock.json", "vite.config.ts", "tsconfig.json")
NPM_STAMP = UI / "node_modules" / ".installed"  # the Makefile's stamp of `npm ci`


def say(message: str) -> None:
    print(f"flamewatch build: {message}", file=sys.stderr, flush=True)


def _newest_input() -> float:
    paths = [UI / name for name in UI_INPUTS]
    files = [f for p in paths for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()]
    return max((f.stat().st_mtime for f in files), default=0.0)


def ui_is_stale() -> bool:
    return not UI_INDEX.is_file() or UI_INDEX.stat().st_mtime < _newest_input()


def build_ui() -> None:
    """Build the UI when its build is missing or older than its sources (see the module docstring)."""
    if not (UI / "package.json").is_file():
        return  # an unpacked sdist: it carries the build and not the sources
    if not ui_is_stale():
        return
    npm = shutil.which("npm")
    if npm is None:
        if UI_INDEX.is_file():
            say(f"npm not found: packaging the existing web UI build in {UI / 'dist'}, older than its sources")
        else:
            say("npm not found: packaging WITHOUT the web UI (install Node.js with npm and build again)")
        return
    lock = UI / "package-lock.json"
    if not NPM_STAMP.is_file() or NPM_STAMP.stat().st_mtime < lock.stat().st_mtime:
        say(f"installing the web UI's npm packages into {UI / 'node_modules'} (npm ci)")
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=UI, check=True)
        NPM_STAMP.touch()
    say(f"building the web UI into {UI / 'dist'} (npm run build)")
    subprocess.run([npm, "run", "--silent", "build"], cwd=UI, check=True)


class BuildPyWithUI(build_py):
    """build_py that builds the UI first, and copies only the current build into the package."""

    def run(self) -> None:
        if not self.editable_mode:
            build_ui()
            # Vite names assets by content hash: drop what an earlier build left in build/lib.
            shutil.rmtree(Path(self.build_lib) / "flamewatch" / "frontend" / "ui" / "dist", ignore_errors=True)
            self.__dict__.pop("data_files", None)  # computed before the build may have added files
        super().run()


class SdistWithUI(sdist):
    """sdist that builds the UI first, so the archive carries it (MANIFEST.in grafts ui/dist)."""

    def run(self) -> None:
        build_ui()
        self.get_finalized_command("build_py").__dict__.pop("data_files", None)
        super().run()


if __name__ == "__main__":  # as setuptools runs it; tests import the hook alone
    setup(cmdclass={"build_py": BuildPyWithUI, "sdist": SdistWithUI})
