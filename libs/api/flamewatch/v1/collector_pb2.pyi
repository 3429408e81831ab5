from flamewatch.api.flamewatch.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TargetsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ScrapeTargetStatus(_message.Message):
    __slots__ = ("job", "profile_type", "scrape_url", "labels", "discovered_labels", "health", "last_scrape_ns", "last_scrape_duration_seconds", "last_error")
    JOB_FIELD_NUMBER: _ClassVar[int]
    PROFILE_TYPE_FIELD_NUMBER: _ClassVar[int]
    SCRAPE_URL_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    DISCOVERED_LABELS_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    LAST_SCRAPE_NS_FIELD_NUMBER: _ClassVar[int]
    LAST_SCRAPE_DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    job: str
    profile_type: str
    scrape_url: str
    labels: _containers.RepeatedCompositeFieldContainer[_types_pb2.LabelPair]
    discovered_labels: _containers.RepeatedCompositeFieldContainer[_types_pb2.LabelPair]
    health: str
    last_scrape_ns: int
    last_scrape_duration_seconds: float
    last_error: str
    def __init__(self, job: _Optional[str] = ..., profile_type: _Optional[str] = ..., scrape_url: _Optional[str] = ..., labels: _Optional[_Iterable[_Union[_types_pb2.LabelPair, _Mapping]]] = ..., discovered_labels: _Optional[_Iterable[_Union[_types_pb2.LabelPair, _Mapping]]] = ..., health: _Optional[str] = ..., last_scrape_ns: _Optional[int] = ..., last_scrape_duration_seconds: _Optional[float] = ..., last_error: _Optional[str] = ...) -> None: ...

class TargetsResponse(_message.Message):
    __slots__ = ("targets",)
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    targets: _containers.RepeatedCompositeFieldContainer[ScrapeTargetStatus]
    def __init__(self, targets: _Optional[_Iterable[_Union[ScrapeTargetStatus, _Mapping]]] = ...) -> None: ...
