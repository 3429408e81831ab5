"""Services talk only through the contracts in proto/: no service imports another's code (DESIGN.md).

Every import statement of every module under services/<name>/ (at any depth, also inside functions) is
parsed with ast; an import of `flamewatch.<other service>` fails, and so does a relative import that
climbs out of the service's own package. `libs/cli.py`, the one composition root, is outside services/.
"""

import ast
from pathlib import Path

import pytest

SERVICES_DIR = Path(__file__).resolve().parents[2] / "services"
SERVICES = sorted(p.name for p in SERVICES_DIR.iterdir() if (p / "__init__.py").is_file())


def imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, absolute name) of everything the file imports, relative imports resolved against `package`;
    `from a import b` gives `a.b`, since b may be a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[:len(parts) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def foreign_imports(service: str, services_dir: Path = SERVICES_DIR) -> list[str]:
    others = {f"flamewatch.{s}" for s in SERVICES if s != service}
    problems = []
    for path in sorted((services_dir / service).rglob("*.py")):
        relative = path.relative_to(services_dir / service)
        package = ".".join([f"flamewatch.{service}", *relative.parent.parts])
        for line, name in imported_modules(path, package):
            if ".".join(name.split(".")[:2]) in others:
                problems.append(f"services/{service}/{relative}:{line} imports {name}")
    return problems


def test_every_service_folder_is_seen():
    assert SERVICES == ["collector", "frontend", "ingester", "querier", "symbolizer"]


@pytest.mark.parametrize("service", SERVICES)
def test_a_service_imports_no_other_service(service: str):
    assert foreign_imports(service) == []


def test_the_check_finds_an_import_of_another_service(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text("import flamewatch.querier.engine\n"
                      "def f():\n    from flamewatch.ingester import prepare\n"
                      "from .. import collector\nfrom .store import DebuginfoStore\n")
    assert imported_modules(module, "flamewatch.symbolizer") == [
        (1, "flamewatch.querier.engine"), (4, "flamewatch.collector"),
        (5, "flamewatch.symbolizer.store.DebuginfoStore"), (3, "flamewatch.ingester.prepare")]
    for name in ("symbolizer", "querier"):
        (tmp_path / name).mkdir()
    (tmp_path / "symbolizer" / "ok.py").write_text("from flamewatch.storage import objstore\nfrom . import store\n")
    module.rename(tmp_path / "symbolizer" / "m.py")
    assert foreign_imports("symbolizer", tmp_path) == [
        "services/symbolizer/m.py:1 imports flamewatch.querier.engine",
        "services/symbolizer/m.py:4 imports flamewatch.collector",
        "services/symbolizer/m.py:3 imports flamewatch.ingester.prepare",
    ]
