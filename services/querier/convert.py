"""All conversion between querier results and the flamewatch.v1 query messages."""

from __future__ import annotations

from flamewatch.api.flamewatch.v1 import query_pb2, types_pb2
from flamewatch.pprof.profile_types import ProfileType
from flamewatch.querier.api import TenantInfo
from flamewatch.querier.steps import Points
from flamewatch.rpc import labelpairs

FORMAT_NAMES = {
    query_pb2.PROFILE_FORMAT_UNSPECIFIED: "flamegraph",
    query_pb2.PROFILE_FORMAT_FLAMEGRAPH: "flamegraph",
    query_pb2.PROFILE_FORMAT_TOP: "top",
    query_pb2.PROFILE_FORMAT_TREE: "tree",
    query_pb2.PROFILE_FORMAT_PPROF: "pprof",
}

GRANULARITY_NAMES = {
    query_pb2.GRANULARITY_UNSPECIFIED: "functions",
    query_pb2.GRANULARITY_FUNCTIONS: "functions",
    query_pb2.GRANULARITY_LINES: "lines",
}


def tenant(t: TenantInfo) -> query_pb2.Tenant:
    return query_pb2.Tenant(name=t.name, series=t.series, is_default=t.default)


def profile_type(t: ProfileType) -> types_pb2.ProfileType:
    return types_pb2.ProfileType(id=t.id, name=t.name, sample_type=t.sample_type, sample_unit=t.sample_unit,
                                 period_type=t.period_type, period_unit=t.period_unit)


def label_pairs(labels: dict[str, str]) -> list[types_pb2.LabelPair]:
    return labelpairs.label_pairs(labels, types_pb2.LabelPair)


def labels(values: dict[str, str]) -> types_pb2.Labels:
    return types_pb2.Labels(labels=label_pairs(values))


def series_points(p: Points) -> query_pb2.SeriesPoints:
    return query_pb2.SeriesPoints(
        labels=label_pairs(p.labels),
        points=[query_pb2.Point(timestamp_ns=t, value=v) for t, v in zip(p.timestamps.tolist(), p.values.tolist())],
    )


def flamegraph(body: dict) -> query_pb2.FlameGraph:
    return query_pb2.FlameGraph(names=body["names"], levels=[query_pb2.Level(values=lv) for lv in body["levels"]],
                                total=body["total"], max_self=body["max_self"], binaries=body.get("binaries", ()))


def top(body: dict) -> query_pb2.TopTable:
    return query_pb2.TopTable(total=body["total"], entries=[query_pb2.TopEntry(**e) for e in body["entries"]])


def tree(node: dict) -> query_pb2.TreeNode:
    return query_pb2.TreeNode(name=node["name"], self=node["self"], total=node["total"],
                              children=[tree(c) for c in node["children"]])


def diff(body: dict) -> query_pb2.FlameGraphDiff:
    return query_pb2.FlameGraphDiff(
        names=body["names"], levels=[query_pb2.Level(values=lv) for lv in body["levels"]], total=body["total"],
        max_self=body["max_self"], left_ticks=body["left_ticks"], right_ticks=body["right_ticks"],
        binaries=body.get("binaries", ()))


RESULT_FIELDS = {"flamegraph": ("flamegraph", flamegraph), "top": ("top", top), "tree": ("tree", tree),
                 "pprof": ("pprof", bytes)}
