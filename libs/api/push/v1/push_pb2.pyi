from flamewatch.api.types.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PushResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PushRequest(_message.Message):
    __slots__ = ("series",)
    SERIES_FIELD_NUMBER: _ClassVar[int]
    series: _containers.RepeatedCompositeFieldContainer[RawProfileSeries]
    def __init__(self, series: _Optional[_Iterable[_Union[RawProfileSeries, _Mapping]]] = ...) -> None: ...

class RawProfileSeries(_message.Message):
    __slots__ = ("labels", "samples", "annotations")
    LABELS_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.RepeatedCompositeFieldContainer[_types_pb2.LabelPair]
    samples: _containers.RepeatedCompositeFieldContainer[RawSample]
    annotations: _containers.RepeatedCompositeFieldContainer[_types_pb2.ProfileAnnotation]
    def __init__(self, labels: _Optional[_Iterable[_Union[_types_pb2.LabelPair, _Mapping]]] = ..., samples: _Optional[_Iterable[_Union[RawSample, _Mapping]]] = ..., annotations: _Optional[_Iterable[_Union[_types_pb2.ProfileAnnotation, _Mapping]]] = ...) -> None: ...

class RawSample(_message.Message):
    __slots__ = ("raw_profile", "ID")
    RAW_PROFILE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    raw_profile: bytes
    ID: str
    def __init__(self, raw_profile: _Optional[bytes] = ..., ID: _Optional[str] = ...) -> None: ...
