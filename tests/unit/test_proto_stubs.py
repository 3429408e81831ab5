"""The committed stubs in libs/api/ are exactly what `make proto` generates from proto/."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("generate", ROOT / "proto" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()
            and "__pycache__" not in p.parts}


def test_generated_stubs_match_the_proto_files(tmp_path):
    _generator().generate(tmp_path / "api")
    committed, fresh = _files(ROOT / "libs" / "api"), _files(tmp_path / "api")
    assert sorted(committed) == sorted(fresh), "run `make proto`: stub files differ from proto/"
    drifted = [name for name in fresh if committed[name] != fresh[name]]
    assert drifted == [], f"run `make proto`: these stubs drifted from proto/: {drifted}"
