from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class MergePartialRequest(_message.Message):
    __slots__ = ("granularity", "symbolize", "query", "start", "end", "divisor_series", "divisor_profiles")
    GRANULARITY_FIELD_NUMBER: _ClassVar[int]
    SYMBOLIZE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    DIVISOR_SERIES_FIELD_NUMBER: _ClassVar[int]
    DIVISOR_PROFILES_FIELD_NUMBER: _ClassVar[int]
    granularity: str
    symbolize: bool
    query: str
    start: int
    end: int
    divisor_series: bytes
    divisor_profiles: bytes
    def __init__(self, granularity: _Optional[str] = ..., symbolize: _Optional[bool] = ..., query: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., divisor_series: _Optional[bytes] = ..., divisor_profiles: _Optional[bytes] = ...) -> None: ...

class MergePartialResponse(_message.Message):
    __slots__ = ("parent", "name", "names", "int_values", "float_values", "share_node", "share_divisor", "share_total", "shares", "unnamed", "warnings", "profiles", "by_range", "binaries")
    class UnnamedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PARENT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    INT_VALUES_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VALUES_FIELD_NUMBER: _ClassVar[int]
    SHARE_NODE_FIELD_NUMBER: _ClassVar[int]
    SHARE_DIVISOR_FIELD_NUMBER: _ClassVar[int]
    SHARE_TOTAL_FIELD_NUMBER: _ClassVar[int]
    SHARES_FIELD_NUMBER: _ClassVar[int]
    UNNAMED_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    PROFILES_FIELD_NUMBER: _ClassVar[int]
    BY_RANGE_FIELD_NUMBER: _ClassVar[int]
    BINARIES_FIELD_NUMBER: _ClassVar[int]
    parent: bytes
    name: bytes
    names: _containers.RepeatedScalarFieldContainer[str]
    int_values: bytes
    float_values: bytes
    share_node: bytes
    share_divisor: bytes
    share_total: bytes
    shares: bool
    unnamed: _containers.ScalarMap[str, str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    profiles: int
    by_range: bool
    binaries: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, parent: _Optional[bytes] = ..., name: _Optional[bytes] = ..., names: _Optional[_Iterable[str]] = ..., int_values: _Optional[bytes] = ..., float_values: _Optional[bytes] = ..., share_node: _Optional[bytes] = ..., share_divisor: _Optional[bytes] = ..., share_total: _Optional[bytes] = ..., shares: _Optional[bool] = ..., unnamed: _Optional[_Mapping[str, str]] = ..., warnings: _Optional[_Iterable[str]] = ..., profiles: _Optional[int] = ..., by_range: _Optional[bool] = ..., binaries: _Optional[_Iterable[str]] = ...) -> None: ...
