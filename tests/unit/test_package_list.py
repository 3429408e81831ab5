"""Every Python package of the checkout is in pyproject.toml's list, which a wheel is built from: one
left out works in the editable install the tests run but is missing from the image (`flamewatch querier`
in docker compose failed to import the settings API's generated code so)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_of_the_checkout_is_in_the_wheels_list():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(tool["packages"])
    found = set()
    for package, folder in tool["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            if "node_modules" in parts or any(p.startswith(".") or p == "__pycache__" for p in parts):
                continue
            found.add(".".join((package, *parts)))
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
