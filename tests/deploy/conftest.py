"""Fixtures of the Docker tests: the engine, the locally built base images and the images of this
checkout (marker `docker`).

| fixture | scope | gives |
|---|---|---|
| `docker_engine` | session | the dockerd that answers (`infra.docker.Engine`); started and stopped if none did |
| `docker_base_images` | session | compose variable -> tag of the local python, node, golang, postgres, minio |
| `compose_images` | session | the Flamewatch and demo images built from this checkout by docker compose |
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


@pytest.fixture(scope="session")
def compose_images(docker_base_images: dict[str, str]) -> docker.CheckoutImages:
    return docker.checkout_images(docker_base_images)
