"""Fixtures of the Docker tests: the engine, the locally built base images and the images of this
checkout (marker `docker`).

| fixture | scope | gives |
|---|---|---|
| `docker_engine` | session | the dockerd that answers (`infra.docker.Engine`); started and stopped if none did |
| `docker_base_images` | session | compose variable -> tag of the local python, node, golang, postgres, minio |
| `compose_images` | session | the Flamewatch and demo images built from this checkout by docker compose |
| `kube_node` | session | a one-node cluster in a network namespace of its own (`infra.kubenode`; marker `cluster`) |
"""

from collections.abc import Iterator

import pytest
from infra import docker
from infra.kubenode import KubeNode


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


@pytest.fixture(scope="session")
def kube_node(tmp_path_factory: pytest.TempPathFactory, docker_base_images: dict[str, str]) -> Iterator[KubeNode]:
    go = docker_base_images["FLAMEWATCH_GO_IMAGE"]
    images = {name: docker.target_image(go, name) for name in ("pause", "leaky", "workload")}
    with KubeNode(tmp_path_factory.mktemp("node"), images) as node:
        yield node
