"""Fetch the crates Cargo.lock names into a directory that cargo reads as crates.io, for the image.

Debian bookworm's cargo (1.65) has no sparse protocol: to resolve crates.io it clones the whole git
index from GitHub. The lock file already says which crate files the build needs and their SHA-256, so
the image's wheels stage fetches just those from crates.io's download host, checks them against the
lock, unpacks them and points cargo at them (`source.crates-io.replace-with`). Standard library only.

    python3 fetch_crates.py Cargo.lock /crates >> "$CARGO_HOME/config.toml"
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tarfile
import tomllib
import urllib.request
from pathlib import Path

CRATES_IO = "registry+https://github.com/rust-lang/crates.io-index"
DOWNLOAD = "https://static.crates.io/crates/{name}/{name}-{version}.crate"


def fetch(lock: Path, out: Path) -> str:
    """Unpack every crates.io package of `lock` under `out`; the cargo configuration that uses them."""
    out.mkdir(parents=True, exist_ok=True)
    out = out.resolve()
    for package in tomllib.loads(lock.read_text())["package"]:
        if package.get("source") == CRATES_IO:
            _unpack(package["name"], package["version"], package["checksum"], out)
    return f'[source.crates-io]\nreplace-with = "locked"\n\n[source.locked]\ndirectory = "{out}"\n'


def _unpack(name: str, version: str, checksum: str, out: Path) -> None:
    with urllib.request.urlopen(DOWNLOAD.format(name=name, version=version), timeout=60) as answer:
        data = answer.read()
    if hashlib.sha256(data).hexdigest() != checksum:
        raise SystemExit(f"fetch_crates: {name} {version} does not match the checksum in Cargo.lock")
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        # tarfile's extraction filters came in Python 3.11.4; bookworm's python3 is 3.11.2.
        for member in archive.getmembers():
            if not (member.isfile() or member.isdir()) or not (out / member.name).resolve().is_relative_to(out):
                raise SystemExit(f"fetch_crates: {name} {version} holds {member.name}, not a file inside its directory")
        archive.extractall(out)
    # A directory source wants this file: the package checksum, which cargo compares with the lock's, and
    # the checksums of single files, which it need not check again (the whole archive was).
    (out / f"{name}-{version}" / ".cargo-checksum.json").write_text(json.dumps({"files": {}, "package": checksum}))


if __name__ == "__main__":
    print(fetch(Path(sys.argv[1]), Path(sys.argv[2])), end="")
