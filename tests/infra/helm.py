"""The real `helm` binary (built by `make` into `.cache/bin/helm`) run on the chart under `deploy/helm/`.

`render` is `helm template` parsed into the list of Kubernetes objects it prints; `HelmError` carries
helm's own message when it refuses (a values file the schema rejects, a template's `fail`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import yaml

from . import CACHE_DIR, REPO_ROOT

HELM = CACHE_DIR / "bin" / "helm"
CHART = REPO_ROOT / "deploy" / "helm" / "flamewatch"
RELEASE = "fw"
NAMESPACE = "profiling"
# What `helm template` tells the chart it installs into (a binary built by `go install` would say v1.20,
# older than the chart's kubeVersion allows); the tests validate against the same version.
KUBE_VERSION = "1.37.0"
TIMEOUT_S = 120.0


class HelmError(RuntimeError):
    """helm exited non-zero; the message is what it printed."""


def binary() -> Path:
    if not HELM.exists():
        raise FileNotFoundError(f"{HELM} is missing: `make test` (or `make .cache/bin/helm`) builds it")
    return HELM


def run(*args: str) -> str:
    """helm's standard output; HelmError with its standard error when it fails."""
    done = subprocess.run([str(binary()), *args], capture_output=True, text=True, timeout=TIMEOUT_S,
                          env={"HOME": str(CACHE_DIR / "helm-home"), "PATH": "/usr/bin:/bin",
                               "HELM_CACHE_HOME": str(CACHE_DIR / "helm-home" / "cache"),
                               "HELM_CONFIG_HOME": str(CACHE_DIR / "helm-home" / "config"),
                               "HELM_DATA_HOME": str(CACHE_DIR / "helm-home" / "data")})
    if done.returncode != 0:
        raise HelmError((done.stderr or done.stdout).strip())
    return done.stdout + done.stderr


def render(values_files: Sequence[Path] = (), sets: Sequence[str] = ()) -> list[dict]:
    """The objects `helm template` renders for these values files and `--set` assignments, in order."""
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--kube-version", KUBE_VERSION]
    for path in values_files:
        args += ["--values", str(path)]
    for assignment in sets:
        args += ["--set", assignment]
    return [doc for doc in yaml.safe_load_all(run(*args)) if doc]


def lint(values_files: Sequence[Path] = ()) -> str:
    args = ["lint", "--strict", str(CHART)]
    for path in values_files:
        args += ["--values", str(path)]
    return run(*args)
