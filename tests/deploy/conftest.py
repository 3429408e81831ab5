"""Fixtures of the Docker tests: the engine and the locally built base images (marker `docker`).

| fixture | scope | gives |
|---|---|---|
| `docker_engine` | session | the dockerd that answers (`infra.docker.Engine`); started and stopped if none did |
| `docker_base_images` | session | compose variable -> tag of the local python, node, golang, postgres, minio |
"""

from collections.abc import Iterator

import pytest
from infra import docker


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[docker.Engine]:
    engine = docker.Engine().start()
    yield engine
    engine.stop()


@pytest.fixture(scope="session")
def docker_base_images(docker_engine: docker.Engine) -> dict[str, str]:
    return docker.base_images()
