from flamewatch.api.flamewatch.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Event(_message.Message):
    __slots__ = ("kind", "time_ns", "labels", "exit_code", "memory_limit_bytes", "restart_count", "started_ns", "message", "key", "details_json")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_LIMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    RESTART_COUNT_FIELD_NUMBER: _ClassVar[int]
    STARTED_NS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    DETAILS_JSON_FIELD_NUMBER: _ClassVar[int]
    kind: str
    time_ns: int
    labels: _containers.RepeatedCompositeFieldContainer[_types_pb2.LabelPair]
    exit_code: int
    memory_limit_bytes: int
    restart_count: int
    started_ns: int
    message: str
    key: str
    details_json: str
    def __init__(self, kind: _Optional[str] = ..., time_ns: _Optional[int] = ..., labels: _Optional[_Iterable[_Union[_types_pb2.LabelPair, _Mapping]]] = ..., exit_code: _Optional[int] = ..., memory_limit_bytes: _Optional[int] = ..., restart_count: _Optional[int] = ..., started_ns: _Optional[int] = ..., message: _Optional[str] = ..., key: _Optional[str] = ..., details_json: _Optional[str] = ...) -> None: ...

class RecordEventsRequest(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class RecordEventsResponse(_message.Message):
    __slots__ = ("recorded", "duplicates")
    RECORDED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    recorded: int
    duplicates: int
    def __init__(self, recorded: _Optional[int] = ..., duplicates: _Optional[int] = ...) -> None: ...

class ListIncidentsRequest(_message.Message):
    __slots__ = ("range", "selector", "kinds", "limit")
    RANGE_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    range: _types_pb2.TimeRange
    selector: str
    kinds: _containers.RepeatedScalarFieldContainer[str]
    limit: int
    def __init__(self, range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ..., selector: _Optional[str] = ..., kinds: _Optional[_Iterable[str]] = ..., limit: _Optional[int] = ...) -> None: ...

class ProfileLink(_message.Message):
    __slots__ = ("query", "range", "time_ns")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    query: str
    range: _types_pb2.TimeRange
    time_ns: int
    def __init__(self, query: _Optional[str] = ..., range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ..., time_ns: _Optional[int] = ...) -> None: ...

class DiffLink(_message.Message):
    __slots__ = ("left_query", "left_range", "right_query", "right_range")
    LEFT_QUERY_FIELD_NUMBER: _ClassVar[int]
    LEFT_RANGE_FIELD_NUMBER: _ClassVar[int]
    RIGHT_QUERY_FIELD_NUMBER: _ClassVar[int]
    RIGHT_RANGE_FIELD_NUMBER: _ClassVar[int]
    left_query: str
    left_range: _types_pb2.TimeRange
    right_query: str
    right_range: _types_pb2.TimeRange
    def __init__(self, left_query: _Optional[str] = ..., left_range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ..., right_query: _Optional[str] = ..., right_range: _Optional[_Union[_types_pb2.TimeRange, _Mapping]] = ...) -> None: ...

class Evidence(_message.Message):
    __slots__ = ("last_heap", "last_heap_age_ns", "first_heap", "inuse_growth", "alloc_growth", "cpu_before", "notes", "ui_path", "change")
    LAST_HEAP_FIELD_NUMBER: _ClassVar[int]
    LAST_HEAP_AGE_NS_FIELD_NUMBER: _ClassVar[int]
    FIRST_HEAP_FIELD_NUMBER: _ClassVar[int]
    INUSE_GROWTH_FIELD_NUMBER: _ClassVar[int]
    ALLOC_GROWTH_FIELD_NUMBER: _ClassVar[int]
    CPU_BEFORE_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    UI_PATH_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    last_heap: ProfileLink
    last_heap_age_ns: int
    first_heap: ProfileLink
    inuse_growth: DiffLink
    alloc_growth: DiffLink
    cpu_before: ProfileLink
    notes: _containers.RepeatedScalarFieldContainer[str]
    ui_path: str
    change: DiffLink
    def __init__(self, last_heap: _Optional[_Union[ProfileLink, _Mapping]] = ..., last_heap_age_ns: _Optional[int] = ..., first_heap: _Optional[_Union[ProfileLink, _Mapping]] = ..., inuse_growth: _Optional[_Union[DiffLink, _Mapping]] = ..., alloc_growth: _Optional[_Union[DiffLink, _Mapping]] = ..., cpu_before: _Optional[_Union[ProfileLink, _Mapping]] = ..., notes: _Optional[_Iterable[str]] = ..., ui_path: _Optional[str] = ..., change: _Optional[_Union[DiffLink, _Mapping]] = ...) -> None: ...

class Incident(_message.Message):
    __slots__ = ("id", "event", "evidence", "recorded_ns")
    ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    RECORDED_NS_FIELD_NUMBER: _ClassVar[int]
    id: int
    event: Event
    evidence: Evidence
    recorded_ns: int
    def __init__(self, id: _Optional[int] = ..., event: _Optional[_Union[Event, _Mapping]] = ..., evidence: _Optional[_Union[Evidence, _Mapping]] = ..., recorded_ns: _Optional[int] = ...) -> None: ...

class ListIncidentsResponse(_message.Message):
    __slots__ = ("incidents",)
    INCIDENTS_FIELD_NUMBER: _ClassVar[int]
    incidents: _containers.RepeatedCompositeFieldContainer[Incident]
    def __init__(self, incidents: _Optional[_Iterable[_Union[Incident, _Mapping]]] = ...) -> None: ...

class GetIncidentRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...
