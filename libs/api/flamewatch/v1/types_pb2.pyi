from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LabelPair(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class Labels(_message.Message):
    __slots__ = ("labels",)
    LABELS_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.RepeatedCompositeFieldContainer[LabelPair]
    def __init__(self, labels: _Optional[_Iterable[_Union[LabelPair, _Mapping]]] = ...) -> None: ...

class ProfileType(_message.Message):
    __slots__ = ("id", "name", "sample_type", "sample_unit", "period_type", "period_unit")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_TYPE_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_UNIT_FIELD_NUMBER: _ClassVar[int]
    PERIOD_TYPE_FIELD_NUMBER: _ClassVar[int]
    PERIOD_UNIT_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    sample_type: str
    sample_unit: str
    period_type: str
    period_unit: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., sample_type: _Optional[str] = ..., sample_unit: _Optional[str] = ..., period_type: _Optional[str] = ..., period_unit: _Optional[str] = ...) -> None: ...

class TimeRange(_message.Message):
    __slots__ = ("start_ns", "end_ns")
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    start_ns: int
    end_ns: int
    def __init__(self, start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ...) -> None: ...
