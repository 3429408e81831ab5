"""The README's tested shell blocks: a block preceded by `<!-- readme-test: NAME -->` is run as written by
the test that owns NAME (`tests/e2e/test_readme.py`; `helm` by `tests/deploy/test_readme_helm.py`)."""

from __future__ import annotations

import re

from . import REPO_ROOT

README = REPO_ROOT / "README.md"
BLOCK = re.compile(r"<!-- readme-test: ([\w-]+) -->\n```sh\n(.*?)```", re.S)
# Blocks run by a test other than tests/e2e/test_readme.py.
ELSEWHERE = ("helm",)


def blocks() -> dict[str, str]:
    """Name -> the block's text, as a reader would paste it."""
    return dict(BLOCK.findall(README.read_text()))
