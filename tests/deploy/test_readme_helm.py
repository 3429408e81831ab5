"""The README's Helm block, run as a user pastes it, in the real cluster of `infra.kubenode`.

The block (`<!-- readme-test: helm -->`) builds the image with `docker build`, imports it into the node's
containerd with `ctr`, installs the chart with its defaults, upgrades it with a changed value and forwards the
frontend's port with kubectl. It runs in the checkout, inside the node's network namespace (where the API
server is, and port 8080 is free), with `.cache/bin` (helm, kubectl) first on PATH, `KUBECONFIG` and
`CONTAINERD_ADDRESS` naming the test's node, and `DOCKER_CONFIG` the one whose CLI plugins hold buildx (`make`
builds it), so `docker build` is BuildKit's and reuses the layers of the compose tests' build. What a cluster
would pull from Docker Hub is there already: the stand-in base images carry the Dockerfile's base names in the
Docker engine, and the bundled Postgres and MinIO images the chart's default names in containerd. After the
block, through its port-forward, the UI answers and the services' own CPU profiles are queried; the upgrade's
value is on every Deployment."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from infra import CACHE_DIR, REPO_ROOT, docker, helm, readme
from infra.kubenode import BIN, CTR, NETNS, KubeNode, containerd_name
from kubernetes import client as k8s

pytestmark = [pytest.mark.cluster, pytest.mark.docker, pytest.mark.helm, pytest.mark.usefixtures("helm_binary")]

DOCKER_CONFIG = CACHE_DIR / "docker-config"
NAMESPACE, RELEASE = "profiling", "flamewatch"
RUN_S = 600
# The Dockerfile's base images.
DOCKER_NAMES = {"FLAMEWATCH_PYTHON_IMAGE": "python:3.11-slim", "FLAMEWATCH_NODE_IMAGE": "node:20-slim"}


def chart_default_images() -> dict[str, str]:
    """The stand-in of the bundled Postgres and MinIO -> the image the chart's values.yaml names for it."""
    values = yaml.safe_load((helm.CHART / "values.yaml").read_text())
    named = {variable: values[key]["bundled"]["image"] for variable, key in (
        ("FLAMEWATCH_POSTGRES_IMAGE", "postgres"), ("FLAMEWATCH_MINIO_IMAGE", "objectStorage"))}
    return {variable: containerd_name(f"{image['repository']}:{image['tag']}") for variable, image in named.items()}

# After the block: what its port-forward serves once the services have profiled themselves.
CHECK = """
set +x
curl -fsS --retry 30 --retry-connrefused --retry-delay 1 -o /dev/null localhost:8080/readyz
curl -fsS localhost:8080/ | grep -o '<div id="root">'
for _ in $(seq 90); do
  top=$(curl -fsSG localhost:8080/api/v1/query -d from=now-10m -d format=top \\
    --data-urlencode 'query=process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="flamewatch-querier"}' || true)
  echo "$top" | grep -q '"entries":\\[{' && break
  sleep 2
done
echo "querier's own CPU: ${top:0:600}"
kubectl -n profiling get pods
"""


def as_named(tag: str, name: str, node: KubeNode) -> None:
    """`tag` (a stand-in, already in containerd) also under `name`, as a registry would have served it."""
    ctr = [CTR, "-a", str(node.socket), "-n", "k8s.io", "images"]
    subprocess.run([*ctr, "rm", name], capture_output=True, check=False)
    subprocess.run([*ctr, "tag", node.image(tag), name], capture_output=True, check=True)


@pytest.fixture
def mirrored(kube_node: KubeNode, compose_images: docker.CheckoutImages,
             docker_base_images: dict[str, str]) -> None:
    for variable, name in DOCKER_NAMES.items():
        if not docker.image_exists(name):
            docker.docker("tag", docker_base_images[variable], name)
    defaults = chart_default_images()
    kube_node.load({variable: docker_base_images[variable] for variable in defaults})
    for variable, name in defaults.items():
        as_named(variable, name, kube_node)


@pytest.mark.timeout(RUN_S + 240)
def test_the_readme_helm_block_installs_upgrades_and_forwards_the_ui(kube_node: KubeNode, mirrored: None,
                                                                    tmp_path: Path) -> None:
    script = tmp_path / "block.sh"
    script.write_text("\n".join(["set -euo pipefail", f"cd {REPO_ROOT}", "set -x", readme.blocks()["helm"], CHECK]))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "KUBECONFIG": str(kube_node.kubeconfig),
           "CONTAINERD_ADDRESS": str(kube_node.socket), "DOCKER_CONFIG": str(DOCKER_CONFIG)}
    core = k8s.CoreV1Api(kube_node.api_client())
    try:
        with (tmp_path / "out.log").open("wb") as out:
            process = subprocess.Popen(["ip", "netns", "exec", NETNS, "bash", str(script)], env=env, stdout=out,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                code = process.wait(RUN_S)
            finally:
                subprocess.run(["pkill", "-KILL", "-s", str(process.pid)], check=False)  # the port-forward
        output = (tmp_path / "out.log").read_text(errors="replace")
        assert code == 0, output[-8000:]
        assert '<div id="root">' in output and '"entries":[{' in output, output[-6000:]
        apps = k8s.AppsV1Api(kube_node.api_client())
        deployments = apps.list_namespaced_deployment(NAMESPACE).items
        levels = {d.metadata.name: {e.name: e.value for e in d.spec.template.spec.containers[0].env or []}
                  .get("FLAMEWATCH_LOG_LEVEL") for d in deployments}
        services = {name: level for name, level in levels.items() if name.endswith(("-frontend", "-querier",
                                                                                    "-ingester", "-collector-0",
                                                                                    "-symbolizer"))}
        assert len(services) == 5 and set(services.values()) == {"debug"}, levels
    finally:
        with contextlib.suppress(helm.HelmError):
            helm.run("uninstall", RELEASE, "--namespace", NAMESPACE, "--kubeconfig", str(kube_node.kubeconfig),
                     "--wait", "--timeout", "100s")  # within helm.run's own 120 s
        with contextlib.suppress(k8s.ApiException):
            core.delete_namespace(NAMESPACE)
