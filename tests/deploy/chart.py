"""What the chart's tests share: the chart rendered by the real `helm` (`infra.helm`) with values files
of its `ci/` folder, and its objects looked up by kind, name, container and label selector."""

from __future__ import annotations

import yaml
from infra import helm

CI = helm.CHART / "ci"
VALUES_FILES = sorted(CI.glob("*.yaml"))
FULL = f"{helm.RELEASE}-flamewatch"
SERVICES = ("ingester", "querier", "frontend", "symbolizer", "collector")


def render(*names: str, sets: tuple[str, ...] = ()) -> list[dict]:
    return helm.render([CI / f"{name}-values.yaml" for name in names], sets)


def by_kind(objects: list[dict], kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def container(deployment: dict) -> dict:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def env(deployment: dict) -> dict[str, dict]:
    return {e["name"]: e for e in container(deployment)["env"]}


def flamewatch_deployments(objects: list[dict]) -> dict[str, dict]:
    return {name: d for name, d in by_kind(objects, "Deployment").items()
            if d["metadata"]["labels"]["app.kubernetes.io/component"] in SERVICES}


def shard_config(objects: list[dict], shard: int) -> dict:
    configmap = by_kind(objects, "ConfigMap")[f"{FULL}-collector"]
    return yaml.safe_load(configmap["data"][f"shard-{shard}.yaml"])


def selects(selector: dict, labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels, and matchExpressions with In or DoesNotExist) on labels."""
    def matches(expression: dict) -> bool:
        if expression["operator"] == "In":
            return labels.get(expression["key"]) in expression["values"]
        assert expression["operator"] == "DoesNotExist", expression
        return expression["key"] not in labels
    return (all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())
            and all(matches(e) for e in selector.get("matchExpressions", ())))


def headless_service(objects: list[dict], component: str) -> dict:
    """The spec of `<fullname>-<component>-headless`, checked to be the component's gRPC port on its ready pods
    only, labelled for the ServiceMonitor to leave out."""
    service = by_kind(objects, "Service")[f"{FULL}-{component}-headless"]
    assert service["metadata"]["labels"]["flamewatch.io/headless"] == "true"
    spec = service["spec"]
    assert (spec["clusterIP"], spec["publishNotReadyAddresses"]) == ("None", False)
    deployment = by_kind(objects, "Deployment")[f"{FULL}-{component}"]
    grpc = next(p["containerPort"] for p in container(deployment)["ports"] if p["name"] == "grpc")
    assert spec["ports"] == [{"name": "grpc", "port": grpc, "targetPort": "grpc", "protocol": "TCP"}]
    # it resolves to the component's pods and to no other Deployment's
    pods = {name: d["spec"]["template"]["metadata"]["labels"] for name, d in by_kind(objects, "Deployment").items()}
    assert [name for name, labels in pods.items() if selects({"matchLabels": spec["selector"]}, labels)] == \
        [f"{FULL}-{component}"]
    return spec
