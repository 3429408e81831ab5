"""Everything Flamewatch imports at run time is installed by `pip install flamewatch`, without extras.

The development install has the `dev` extras too, so a module that imports a test-only package works
in every test and fails only in the image (the ingester imported `opentelemetry.proto`, a `dev`
dependency, and exited at start in the container). This walks the imports of `libs/` and `services/`,
lazy ones included, and checks each third-party module belongs to a distribution that the project's
`dependencies` bring in, directly or through their own requirements.
"""

import ast
import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
SOURCES = [REPO / "libs", REPO / "services"]


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", Requirement(requirement).name).lower()


def runtime_closure(direct: list[str]) -> set[str]:
    """Normalised names of the direct requirements and everything they require (no extras)."""
    seen: set[str] = set()
    pending = [Requirement(r) for r in direct]
    while pending:
        requirement = pending.pop()
        name = _name(str(requirement))
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        pending += [Requirement(r) for r in importlib.metadata.requires(requirement.name) or []]
    return seen


def imported_modules(roots: list[Path]) -> dict[str, Path]:
    """Dotted names of the third-party modules imported in these trees, each with one file importing it."""
    found: dict[str, Path] = {}
    for path in sorted(p for root in roots for p in root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names and top != "flamewatch":
                    found.setdefault(name, path)
    return found


def file_owners() -> dict[Path, str]:
    """Each installed module file -> the normalised name of the distribution that installed it."""
    return {dist.locate_file(f).resolve(): _name(dist.metadata["Name"])
            for dist in importlib.metadata.distributions() for f in dist.files or []
            if f.suffix in (".py", ".so")}


def owner(module: str, owners: dict[Path, str]) -> str:
    """The distribution a module's file comes from (namespace packages such as `opentelemetry` are
    shared by several, so the top-level name is not enough)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"{module} is imported but not installed here"
    return owners.get(Path(spec.origin).resolve(), f"<no distribution owns {spec.origin}>")


def test_every_module_imported_at_run_time_comes_with_the_runtime_dependencies():
    closure = runtime_closure(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"])
    owners = file_owners()
    imports = imported_modules(SOURCES)
    assert {"numpy", "grpc", "pyarrow"} <= imports.keys()  # the walk sees the imports it must judge
    missing = {f"{module} ({owner(module, owners)})": str(path.relative_to(REPO)) for module, path in imports.items()
               if owner(module, owners) not in closure}
    assert not missing, f"imported at run time but not installed by the project's dependencies: {missing}"


def test_a_dev_only_import_is_found():
    """The check itself: pytest is installed here, but only as a `dev` extra."""
    closure = runtime_closure(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"])
    owners = file_owners()
    assert owner("pytest", owners) == "pytest" and "pytest" not in closure
    assert owner("opentelemetry.trace", owners) == "opentelemetry-api"
    assert owner("numpy", owners) in closure
