"""`docker-compose.yml` as users run it, on a real Docker engine: build, up, a flamegraph, a restart, down.

The compose file and the Dockerfiles are the repository's own; only the variables differ: the base
images are local stand-ins (`infra.docker.base_images`, no registry is reachable here), the host ports
are free ones, and the project name is the test's. Grafana is the one service not started: no image of
it can be built here, so its provisioning file is checked and its datasource URL is called from another
container on the compose network instead.
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from infra import docker
from infra.ports import free_port
from infra.waiting import wait_for

# The first test also builds what a cold cache lacks: Debian by debootstrap, the base images, the image.
pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
SERVICES = ["postgres", "minio", "ingester", "querier", "symbolizer", "collector", "frontend", "demo"]
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
GOROUTINES = "goroutine:goroutine:count:goroutine:count"
DEMO_HOT_FUNCTIONS = {"main.cpuFibonacci", "main.fibonacci", "main.cpuHashLoop"}
UP_TIMEOUT_S = 240
PUSHES = 12


@dataclass
class Stack:
    compose: docker.Compose
    images: docker.CheckoutImages
    ui: str  # the frontend, published on a free host port
    ingest: str  # the ingester's HTTP port, published likewise
    up_started: float  # time.monotonic() when `docker compose up` began
    up_s: float


@pytest.fixture(scope="module")
def stack(compose_images: docker.CheckoutImages) -> Iterator[Stack]:
    ui_port, ingest_port = free_port(), free_port()
    env = {**compose_images.env, "FLAMEWATCH_UI_PORT": f"127.0.0.1:{ui_port}",
           "FLAMEWATCH_INGEST_PORT": f"127.0.0.1:{ingest_port}"}
    compose = docker.Compose(project=f"flamewatch-test-{os.getpid()}", env=env)
    started = time.monotonic()
    with compose.started(SERVICES, UP_TIMEOUT_S):
        yield Stack(compose, compose_images, f"http://127.0.0.1:{ui_port}", f"http://127.0.0.1:{ingest_port}",
                    started, time.monotonic() - started)


def query(stack: Stack, selector: str, **params: str) -> dict:
    r = httpx.get(f"{stack.ui}/api/v1/query", params={"query": selector, "from": "now-1h", "until": "now",
                                                      "max_nodes": "100000", **params}, timeout=30)
    r.raise_for_status()
    return r.json()


def test_the_demos_hot_function_shows_in_a_flamegraph_through_the_frontend(stack: Stack):
    def hot() -> set[str]:
        r = httpx.get(f"{stack.ui}/api/v1/query", params={"query": CPU + '{service_name="demo"}',
                                                          "from": "now-5m", "until": "now"}, timeout=30)
        return set(r.json()["flamegraph"]["names"]) & DEMO_HOT_FUNCTIONS if r.status_code == 200 else set()

    found = wait_for(hot, 90, "the demo's CPU flamegraph through the frontend")
    first = time.monotonic() - stack.up_started
    print(f"\ncompose build {stack.images.build_s:.0f} s; up until healthy {stack.up_s:.0f} s; "
          f"up until the first flamegraph {first:.0f} s ({sorted(found)})")
    page = httpx.get(stack.ui + "/", timeout=10)
    assert page.status_code == 200 and "<title>Flamewatch</title>" in page.text  # the UI build, not the fallback
    targets = httpx.get(f"{stack.ui}/api/v1/targets", timeout=10).json()["data"]["activeTargets"]
    assert {t["labels"]["instance"] for t in targets if t["health"] == "up"} >= {"demo:6060", "ingester:4100"}


def goroutine_profile(stack: Stack) -> bytes:
    """A goroutine profile of the demo, fetched on the compose network (the demo publishes no port)."""
    out = stack.compose.exec("frontend", "python3", "-c", "import base64, urllib.request; print(base64.b64encode("
                             "urllib.request.urlopen('http://demo:6060/debug/pprof/goroutine', timeout=10).read())"
                             ".decode())")
    return base64.b64decode(out)


def test_every_acknowledged_profile_survives_an_ingester_restart(stack: Stack):
    body = goroutine_profile(stack)
    acked = 0
    for seq in range(PUSHES):
        r = httpx.post(f"{stack.ingest}/ingest", content=body, timeout=30,
                       params={"__name__": "goroutine", "service_name": "compose-restart", "seq": str(seq)})
        assert r.status_code == 200, r.text
        acked += 1
    selector = GOROUTINES + '{service_name="compose-restart"}'
    before = query(stack, selector)
    assert before["profiles"] == acked == PUSHES

    stack.compose.run("restart", "ingester", timeout=120)
    wait_for(lambda: stack.compose.health("ingester") == "healthy", 120, "the ingester to be healthy again")

    after = query(stack, selector)
    assert after["profiles"] == before["profiles"]
    assert after["flamegraph"]["levels"] == before["flamegraph"]["levels"]
    assert after["flamegraph"]["names"] == before["flamegraph"]["names"]
    # and the restarted ingester takes pushes again
    r = httpx.post(f"{stack.ingest}/ingest", content=body, timeout=30,
                   params={"__name__": "goroutine", "service_name": "compose-restart", "seq": str(PUSHES)})
    assert r.status_code == 200, r.text
    assert query(stack, selector)["profiles"] == PUSHES + 1


def test_the_grafana_datasource_reaches_the_querier_on_the_compose_network(stack: Stack):
    provisioning = yaml.safe_load((REPO / "deploy/compose/grafana/datasources.yaml").read_text())
    assert provisioning["apiVersion"] == 1
    [source] = provisioning["datasources"]
    assert source["type"] == "grafana-pyroscope-datasource" and source["access"] == "proxy"
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    assert set(services) - set(SERVICES) == {"grafana"}  # the one service this machine cannot run
    grafana = services["grafana"]
    assert "./deploy/compose/grafana/datasources.yaml:/etc/grafana/provisioning/datasources/flamewatch.yaml:ro" \
        in grafana["volumes"]
    # What Grafana's datasource asks first, from a container on the compose network as Grafana's would be.
    call = ("import sys, urllib.request; print(urllib.request.urlopen(urllib.request.Request("
            "sys.argv[1] + '/querier.v1.QuerierService/ProfileTypes', data=b'{}', "
            "headers={'Content-Type': 'application/json'}), timeout=10).read().decode())")
    answer = json.loads(stack.compose.exec("frontend", "python3", "-c", call, source["url"]))
    assert CPU in {t["ID"] for t in answer["profileTypes"]}


def test_containers_talk_only_on_the_compose_network(stack: Stack):
    network = f"{stack.compose.project}_flamewatch"
    for container in stack.compose.containers():
        [inspected] = json.loads(docker.docker("container", "inspect", container["ID"]))
        assert set(inspected["NetworkSettings"]["Networks"]) == {network}, container["Service"]
        assert inspected["HostConfig"]["NetworkMode"] == network, container["Service"]
        bindings = (inspected["NetworkSettings"]["Ports"] or {}).values()
        published = {p["HostIp"] for ports in bindings for p in ports or []}
        assert published <= {"127.0.0.1"}, container["Service"]


def test_the_image_runs_flamewatch_as_user_10001_with_no_build_tools(stack: Stack):
    image_tag = stack.images.flamewatch
    [image] = json.loads(docker.docker("image", "inspect", image_tag))
    config = image["Config"]
    assert config["User"] == "10001:10001"
    # every interface in a container (`flamewatch all` alone listens on loopback)
    assert config["Entrypoint"] == ["flamewatch"]
    assert config["Cmd"] == ["all", "--http-address", ":8080", "--grpc-address", ":8081"]
    assert config["Healthcheck"]["Test"] == ["CMD", "python3", "-m", "flamewatch.healthcheck"]  # GET /readyz
    tools = docker.docker("run", "--rm", "--entrypoint", "sh", image_tag, "-c",
                          "for t in gcc cc g++ make npm node git; do command -v $t; done; true")
    assert tools.strip() == ""
    print(f"\nimage {image_tag}: {docker.image_size(image_tag) / 1e6:.0f} MB; demo image "
          f"{docker.image_size(stack.images.demo) / 1e6:.1f} MB")
    # every Flamewatch service ran with a read-only root filesystem and turned healthy
    for container in stack.compose.containers():
        if container["Service"] in {"ingester", "querier", "symbolizer", "collector", "frontend"}:
            [inspected] = json.loads(docker.docker("container", "inspect", container["ID"]))
            assert inspected["HostConfig"]["ReadonlyRootfs"] is True
            assert inspected["State"]["Health"]["Status"] == "healthy", container["Service"]


def test_the_image_alone_runs_flamewatch_all_on_a_read_only_root(stack: Stack):
    """`docker run flamewatch`: every service in one process, embedded Postgres in the data directory."""
    name = f"{stack.compose.project}-all"
    docker.docker("run", "--detach", "--name", name, "--read-only", "--tmpfs", "/tmp",
                  "--tmpfs", "/var/lib/flamewatch:uid=10001,gid=10001", stack.images.flamewatch)
    try:
        def health() -> str:
            return json.loads(docker.docker("container", "inspect", name))[0]["State"]["Health"]["Status"]

        wait_for(lambda: health() == "healthy", 120, "flamewatch all to turn healthy in its container")
        assert "Flamewatch is ready" in docker.container_logs(name)
    finally:
        docker.docker("rm", "--force", name)
