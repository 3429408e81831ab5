from flamewatch.api.flamewatch.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProfileFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROFILE_FORMAT_UNSPECIFIED: _ClassVar[ProfileFormat]
    PROFILE_FORMAT_FLAMEGRAPH: _ClassVar[ProfileFormat]
    PROFILE_FORMAT_TOP: _ClassVar[ProfileFormat]
    PROFILE_FORMAT_TREE: _ClassVar[ProfileFormat]
    PROFILE_FORMAT_PPROF: _ClassVar[ProfileFormat]

class Granularity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GRANULARITY_UNSPECIFIED: _ClassVar[Granularity]
    GRANULARITY_FUNCTIONS: _ClassVar[Granularity]
    GRANULARITY_LINES: _ClassVar[Granularity]
PROFILE_FORMAT_UNSPECIFIED: ProfileFormat
PROFILE_FORMAT_FLAMEGRAPH: ProfileFormat
PROFILE_FORMAT_TOP: ProfileFormat
PROFILE_FORMAT_TREE: ProfileFormat
PROFILE_FORMAT_PPROF: ProfileFormat
GRANULARITY_UNSPECIFIED: Granularity
GRANULARITY_FUNCTIONS: Granularity
GRANULARITY_LINES: Granularity

class TenantsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Tenant(_message.Message):
    __slots__ = ("name", "series", "is_default")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SERIES_FIELD_NUMBER: _ClassVar[int]
    IS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    name: str
    series: int
    is_default: bool
    def __init__(self, name: _Optional[str] = ..., series: _Optional[int] = ..., is_default: _Optional[bool] = ...) -> None: ...

class TenantsResponse(_message.Message):
    __slots__ = ("tenants",)
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    tenants: _containers.RepeatedCompositeFieldContainer[Tenant]
    def __init__(self, tenants: _Optional[_Iterable[_Union[Tenant, _Mapping]]] = ...) -> None: ...

class ProfileTypesRequest(_message.Message):
    __slots__ = ("range",)
    RANGE_FIELD_NUMBER: _ClassVar[int]
    range: _types_pb2.TimeRange
    def __init__(self, range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ...) -> None: ...

class ProfileTypesResponse(_message.Message):
    __slots__ = ("profile_types",)
    PROFILE_TYPES_FIELD_NUMBER: _ClassVar[int]
    profile_types: _containers.RepeatedCompositeFieldContainer[_types_pb2.ProfileType]
    def __init__(self, profile_types: _Optional[_Iterable[_Union[_types_pb2.ProfileType, _Mapping]]] = ...) -> None: ...

class LabelNamesRequest(_message.Message):
    __slots__ = ("matchers", "range")
    MATCHERS_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    matchers: _containers.RepeatedScalarFieldContainer[str]
    range: _types_pb2.TimeRange
    def __init__(self, matchers: _Optional[_Iterable[str]] = ..., range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ...) -> None: ...

class LabelNamesResponse(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class LabelValuesRequest(_message.Message):
    __slots__ = ("name", "matchers", "range")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MATCHERS_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    matchers: _containers.RepeatedScalarFieldContainer[str]
    range: _types_pb2.TimeRange
    def __init__(self, name: _Optional[str] = ..., matchers: _Optional[_Iterable[str]] = ..., range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ...) -> None: ...

class LabelValuesResponse(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, values: _Optional[_Iterable[str]] = ...) -> None: ...

class SeriesRequest(_message.Message):
    __slots__ = ("matchers", "range")
    MATCHERS_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    matchers: _containers.RepeatedScalarFieldContainer[str]
    range: _types_pb2.TimeRange
    def __init__(self, matchers: _Optional[_Iterable[str]] = ..., range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ...) -> None: ...

class SeriesResponse(_message.Message):
    __slots__ = ("series",)
    SERIES_FIELD_NUMBER: _ClassVar[int]
    series: _containers.RepeatedCompositeFieldContainer[_types_pb2.Labels]
    def __init__(self, series: _Optional[_Iterable[_Union[_types_pb2.Labels, _Mapping]]] = ...) -> None: ...

class QueryRangeRequest(_message.Message):
    __slots__ = ("query", "range", "step_ns", "group_by")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    STEP_NS_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    query: str
    range: _types_pb2.TimeRange
    step_ns: int
    group_by: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, query: _Optional[str] = ..., range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ..., step_ns: _Optional[int] = ..., group_by: _Optional[_Iterable[str]] = ...) -> None: ...

class Point(_message.Message):
    __slots__ = ("timestamp_ns", "value")
    TIMESTAMP_NS_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    timestamp_ns: int
    value: float
    def __init__(self, timestamp_ns: _Optional[int] = ..., value: _Optional[float] = ...) -> None: ...

class SeriesPoints(_message.Message):
    __slots__ = ("labels", "points")
    LABELS_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.RepeatedCompositeFieldContainer[_types_pb2.LabelPair]
    points: _containers.RepeatedCompositeFieldContainer[Point]
    def __init__(self, labels: _Optional[_Iterable[_Union[_types_pb2.LabelPair, _Mapping]]] = ..., points: _Optional[_Iterable[_Union[Point, _Mapping]]] = ...) -> None: ...

class QueryRangeResponse(_message.Message):
    __slots__ = ("series", "warnings")
    SERIES_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    series: _containers.RepeatedCompositeFieldContainer[SeriesPoints]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, series: _Optional[_Iterable[_Union[SeriesPoints, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class QueryRequest(_message.Message):
    __slots__ = ("query", "range", "time_ns", "format", "max_nodes", "granularity")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    MAX_NODES_FIELD_NUMBER: _ClassVar[int]
    GRANULARITY_FIELD_NUMBER: _ClassVar[int]
    query: str
    range: _types_pb2.TimeRange
    time_ns: int
    format: ProfileFormat
    max_nodes: int
    granularity: Granularity
    def __init__(self, query: _Optional[str] = ..., range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ..., time_ns: _Optional[int] = ..., format: _Optional[_Union[ProfileFormat, str]] = ..., max_nodes: _Optional[int] = ..., granularity: _Optional[_Union[Granularity, str]] = ...) -> None: ...

class FlameGraph(_message.Message):
    __slots__ = ("names", "levels", "total", "max_self", "binaries")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    LEVELS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    MAX_SELF_FIELD_NUMBER: _ClassVar[int]
    BINARIES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    levels: _containers.RepeatedCompositeFieldContainer[Level]
    total: int
    max_self: int
    binaries: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ..., levels: _Optional[_Iterable[_Union[Level, _Mapping]]] = ..., total: _Optional[int] = ..., max_self: _Optional[int] = ..., binaries: _Optional[_Iterable[str]] = ...) -> None: ...

class Level(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, values: _Optional[_Iterable[int]] = ...) -> None: ...

class TopEntry(_message.Message):
    __slots__ = ("name", "self", "total")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SELF_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    self: int
    total: int
    def __init__(self_, name: _Optional[str] = ..., self: _Optional[int] = ..., total: _Optional[int] = ...) -> None: ...

class TopTable(_message.Message):
    __slots__ = ("entries", "total")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[TopEntry]
    total: int
    def __init__(self, entries: _Optional[_Iterable[_Union[TopEntry, _Mapping]]] = ..., total: _Optional[int] = ...) -> None: ...

class TreeNode(_message.Message):
    __slots__ = ("name", "self", "total", "children")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SELF_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    name: str
    self: int
    total: int
    children: _containers.RepeatedCompositeFieldContainer[TreeNode]
    def __init__(self_, name: _Optional[str] = ..., self: _Optional[int] = ..., total: _Optional[int] = ..., children: _Optional[_Iterable[_Union[TreeNode, _Mapping]]] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ("profile_type", "profiles", "flamegraph", "top", "tree", "pprof", "partial", "warnings")
    PROFILE_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROFILES_FIELD_NUMBER: _ClassVar[int]
    FLAMEGRAPH_FIELD_NUMBER: _ClassVar[int]
    TOP_FIELD_NUMBER: _ClassVar[int]
    TREE_FIELD_NUMBER: _ClassVar[int]
    PPROF_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    profile_type: _types_pb2.ProfileType
    profiles: int
    flamegraph: FlameGraph
    top: TopTable
    tree: TreeNode
    pprof: bytes
    partial: bool
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, profile_type: _Optional[_Union[_types_pb2.ProfileType, _Mapping]] = ..., profiles: _Optional[int] = ..., flamegraph: _Optional[_Union[FlameGraph, _Mapping]] = ..., top: _Optional[_Union[TopTable, _Mapping]] = ..., tree: _Optional[_Union[TreeNode, _Mapping]] = ..., pprof: _Optional[bytes] = ..., partial: _Optional[bool] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class DiffRequest(_message.Message):
    __slots__ = ("left_query", "left_range", "right_query", "right_range", "max_nodes")
    LEFT_QUERY_FIELD_NUMBER: _ClassVar[int]
    LEFT_RANGE_FIELD_NUMBER: _ClassVar[int]
    RIGHT_QUERY_FIELD_NUMBER: _ClassVar[int]
    RIGHT_RANGE_FIELD_NUMBER: _ClassVar[int]
    MAX_NODES_FIELD_NUMBER: _ClassVar[int]
    left_query: str
    left_range: _types_pb2.TimeRange
    right_query: str
    right_range: _types_pb2.TimeRange
    max_nodes: int
    def __init__(self, left_query: _Optional[str] = ..., left_range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ..., right_query: _Optional[str] = ..., right_range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ..., max_nodes: _Optional[int] = ...) -> None: ...

class FlameGraphDiff(_message.Message):
    __slots__ = ("names", "levels", "total", "max_self", "left_ticks", "right_ticks", "binaries")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    LEVELS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    MAX_SELF_FIELD_NUMBER: _ClassVar[int]
    LEFT_TICKS_FIELD_NUMBER: _ClassVar[int]
    RIGHT_TICKS_FIELD_NUMBER: _ClassVar[int]
    BINARIES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    levels: _containers.RepeatedCompositeFieldContainer[Level]
    total: int
    max_self: int
    left_ticks: int
    right_ticks: int
    binaries: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ..., levels: _Optional[_Iterable[_Union[Level, _Mapping]]] = ..., total: _Optional[int] = ..., max_self: _Optional[int] = ..., left_ticks: _Optional[int] = ..., right_ticks: _Optional[int] = ..., binaries: _Optional[_Iterable[str]] = ...) -> None: ...

class DiffResponse(_message.Message):
    __slots__ = ("flamegraph",)
    FLAMEGRAPH_FIELD_NUMBER: _ClassVar[int]
    flamegraph: FlameGraphDiff
    def __init__(self, flamegraph: _Optional[_Union[FlameGraphDiff, _Mapping]] = ...) -> None: ...

class ChangesRequest(_message.Message):
    __slots__ = ("a_query", "a_range", "b_query", "b_range", "order", "alpha", "limit")
    A_QUERY_FIELD_NUMBER: _ClassVar[int]
    A_RANGE_FIELD_NUMBER: _ClassVar[int]
    B_QUERY_FIELD_NUMBER: _ClassVar[int]
    B_RANGE_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    ALPHA_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    a_query: str
    a_range: _types_pb2.TimeRange
    b_query: str
    b_range: _types_pb2.TimeRange
    order: str
    alpha: float
    limit: int
    def __init__(self, a_query: _Optional[str] = ..., a_range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ..., b_query: _Optional[str] = ..., b_range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ..., order: _Optional[str] = ..., alpha: _Optional[float] = ..., limit: _Optional[int] = ...) -> None: ...

class ShareChange(_message.Message):
    __slots__ = ("a", "b", "change", "low", "high", "p", "significant")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    P_FIELD_NUMBER: _ClassVar[int]
    SIGNIFICANT_FIELD_NUMBER: _ClassVar[int]
    a: float
    b: float
    change: float
    low: float
    high: float
    p: float
    significant: bool
    def __init__(self, a: _Optional[float] = ..., b: _Optional[float] = ..., change: _Optional[float] = ..., low: _Optional[float] = ..., high: _Optional[float] = ..., p: _Optional[float] = ..., significant: _Optional[bool] = ...) -> None: ...

class FunctionChange(_message.Message):
    __slots__ = ("name", "self", "total")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SELF_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    self: ShareChange
    total: ShareChange
    def __init__(self_, name: _Optional[str] = ..., self: _Optional[_Union[ShareChange, _Mapping]] = ..., total: _Optional[_Union[ShareChange, _Mapping]] = ...) -> None: ...

class ChangesResponse(_message.Message):
    __slots__ = ("functions", "a_profiles", "b_profiles", "notes")
    FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    A_PROFILES_FIELD_NUMBER: _ClassVar[int]
    B_PROFILES_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    functions: _containers.RepeatedCompositeFieldContainer[FunctionChange]
    a_profiles: int
    b_profiles: int
    notes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, functions: _Optional[_Iterable[_Union[FunctionChange, _Mapping]]] = ..., a_profiles: _Optional[int] = ..., b_profiles: _Optional[int] = ..., notes: _Optional[_Iterable[str]] = ...) -> None: ...

class AnalyzeQueryRequest(_message.Message):
    __slots__ = ("query", "range")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    query: str
    range: _types_pb2.TimeRange
    def __init__(self, query: _Optional[str] = ..., range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ...) -> None: ...

class AnalyzeQueryResponse(_message.Message):
    __slots__ = ("blocks", "series", "profiles", "block_bytes", "max_bytes")
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    SERIES_FIELD_NUMBER: _ClassVar[int]
    PROFILES_FIELD_NUMBER: _ClassVar[int]
    BLOCK_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    blocks: int
    series: int
    profiles: int
    block_bytes: int
    max_bytes: int
    def __init__(self, blocks: _Optional[int] = ..., series: _Optional[int] = ..., profiles: _Optional[int] = ..., block_bytes: _Optional[int] = ..., max_bytes: _Optional[int] = ...) -> None: ...
