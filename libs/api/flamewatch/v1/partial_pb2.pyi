from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class MergePartialRequest(_message.Message):
    __slots__ = ("block_ids", "block_keys", "block", "row", "weights", "divisors", "filters", "row_filter", "by_tree", "granularity", "symbolize")
    BLOCK_IDS_FIELD_NUMBER: _ClassVar[int]
    BLOCK_KEYS_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    ROW_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    DIVISORS_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    ROW_FILTER_FIELD_NUMBER: _ClassVar[int]
    BY_TREE_FIELD_NUMBER: _ClassVar[int]
    GRANULARITY_FIELD_NUMBER: _ClassVar[int]
    SYMBOLIZE_FIELD_NUMBER: _ClassVar[int]
    block_ids: _containers.RepeatedScalarFieldContainer[str]
    block_keys: _containers.RepeatedScalarFieldContainer[str]
    block: bytes
    row: bytes
    weights: bytes
    divisors: bytes
    filters: _containers.RepeatedScalarFieldContainer[str]
    row_filter: bytes
    by_tree: bytes
    granularity: str
    symbolize: bool
    def __init__(self, block_ids: _Optional[_Iterable[str]] = ..., block_keys: _Optional[_Iterable[str]] = ..., block: _Optional[bytes] = ..., row: _Optional[bytes] = ..., weights: _Optional[bytes] = ..., divisors: _Optional[bytes] = ..., filters: _Optional[_Iterable[str]] = ..., row_filter: _Optional[bytes] = ..., by_tree: _Optional[bytes] = ..., granularity: _Optional[str] = ..., symbolize: _Optional[bool] = ...) -> None: ...

class MergePartialResponse(_message.Message):
    __slots__ = ("parent", "name", "names", "int_values", "float_values", "share_node", "share_divisor", "share_total", "shares", "unnamed", "warnings", "tree_profiles")
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
    TREE_PROFILES_FIELD_NUMBER: _ClassVar[int]
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
    tree_profiles: int
    def __init__(self, parent: _Optional[bytes] = ..., name: _Optional[bytes] = ..., names: _Optional[_Iterable[str]] = ..., int_values: _Optional[bytes] = ..., float_values: _Optional[bytes] = ..., share_node: _Optional[bytes] = ..., share_divisor: _Optional[bytes] = ..., share_total: _Optional[bytes] = ..., shares: _Optional[bool] = ..., unnamed: _Optional[_Mapping[str, str]] = ..., warnings: _Optional[_Iterable[str]] = ..., tree_profiles: _Optional[int] = ...) -> None: ...
