"""Local stand-ins for docker-compose.yml's public base images, for a Docker engine with no image registry.

`docker compose up` pulls python:3.11-slim, node:20-slim, golang:1.26, postgres:16, minio/minio and
grafana/grafana. Where no registry is reachable, this builds the stand-ins the Docker tests use
(`tests/infra/docker.py`): a Debian bookworm root filesystem from debootstrap, and on it Python 3.11,
the host's Node.js and Go, bookworm's PostgreSQL and the MinIO binary `make` builds. Their tags are
written into `.env` as the FLAMEWATCH_*_IMAGE variables compose reads; other lines of `.env` are kept.
Grafana has no stand-in. Each image is tagged with a digest of its inputs, so a second run builds nothing.

    make compose-base-images            # or: python3 deploy/compose/base_images.py [--env-file .env]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from infra import docker  # noqa: E402  (the tests' own image builder)


def updated_env(text: str, values: Mapping[str, str]) -> str:
    """`.env` text with `values` set: their lines replaced where present, appended where not."""
    lines, seen = [], set()
    for line in text.splitlines():
        key = line.split("=", 1)[0].strip()
        if key in values:
            seen.add(key)
            line = f"{key}={values[key]}"
        lines.append(line)
    lines += [f"{key}={value}" for key, value in values.items() if key not in seen]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-file", type=Path, default=ROOT / ".env", help="where compose reads its variables")
    args = parser.parse_args()
    if not docker.Engine.answers():
        print("no Docker engine answers: start it (e.g. `sudo systemctl start docker`) and run this again",
              file=sys.stderr)
        return 1
    print("building the base images (the first time takes several minutes: debootstrap, then apt-get in each)")
    try:
        images = docker.base_images()
    except docker.DockerError as exc:
        print(exc, file=sys.stderr)
        return 1
    previous = args.env_file.read_text() if args.env_file.exists() else ""
    args.env_file.write_text(updated_env(previous, images))
    for key, tag in images.items():
        print(f"{key}={tag}")
    print(f"written to {args.env_file}; docker compose reads it from the checkout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
