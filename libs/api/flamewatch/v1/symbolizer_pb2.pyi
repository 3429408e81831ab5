from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SymbolizeStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SYMBOLIZE_STATUS_UNSPECIFIED: _ClassVar[SymbolizeStatus]
    SYMBOLIZE_STATUS_OK: _ClassVar[SymbolizeStatus]
    SYMBOLIZE_STATUS_NOT_FOUND: _ClassVar[SymbolizeStatus]
    SYMBOLIZE_STATUS_FAILED: _ClassVar[SymbolizeStatus]
SYMBOLIZE_STATUS_UNSPECIFIED: SymbolizeStatus
SYMBOLIZE_STATUS_OK: SymbolizeStatus
SYMBOLIZE_STATUS_NOT_FOUND: SymbolizeStatus
SYMBOLIZE_STATUS_FAILED: SymbolizeStatus

class SymbolizeRequest(_message.Message):
    __slots__ = ("objects",)
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    objects: _containers.RepeatedCompositeFieldContainer[ObjectAddresses]
    def __init__(self, objects: _Optional[_Iterable[_Union[ObjectAddresses, _Mapping]]] = ...) -> None: ...

class ObjectAddresses(_message.Message):
    __slots__ = ("build_id", "file_name", "file_offsets")
    BUILD_ID_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    FILE_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    build_id: str
    file_name: str
    file_offsets: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, build_id: _Optional[str] = ..., file_name: _Optional[str] = ..., file_offsets: _Optional[_Iterable[int]] = ...) -> None: ...

class SymbolizeResponse(_message.Message):
    __slots__ = ("objects",)
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    objects: _containers.RepeatedCompositeFieldContainer[ObjectFrames]
    def __init__(self, objects: _Optional[_Iterable[_Union[ObjectFrames, _Mapping]]] = ...) -> None: ...

class ObjectFrames(_message.Message):
    __slots__ = ("status", "error", "locations")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    status: SymbolizeStatus
    error: str
    locations: _containers.RepeatedCompositeFieldContainer[SymbolizedLocation]
    def __init__(self, status: _Optional[_Union[SymbolizeStatus, str]] = ..., error: _Optional[str] = ..., locations: _Optional[_Iterable[_Union[SymbolizedLocation, _Mapping]]] = ...) -> None: ...

class SymbolizedLocation(_message.Message):
    __slots__ = ("frames",)
    FRAMES_FIELD_NUMBER: _ClassVar[int]
    frames: _containers.RepeatedCompositeFieldContainer[SymbolizedFrame]
    def __init__(self, frames: _Optional[_Iterable[_Union[SymbolizedFrame, _Mapping]]] = ...) -> None: ...

class SymbolizedFrame(_message.Message):
    __slots__ = ("function", "file", "line")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    function: str
    file: str
    line: int
    def __init__(self, function: _Optional[str] = ..., file: _Optional[str] = ..., line: _Optional[int] = ...) -> None: ...

class UploadDebuginfoChunk(_message.Message):
    __slots__ = ("build_id", "file_name", "data", "shared")
    BUILD_ID_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    build_id: str
    file_name: str
    data: bytes
    shared: bool
    def __init__(self, build_id: _Optional[str] = ..., file_name: _Optional[str] = ..., data: _Optional[bytes] = ..., shared: _Optional[bool] = ...) -> None: ...

class UploadDebuginfoResponse(_message.Message):
    __slots__ = ("build_id", "size", "kind", "features", "shared")
    BUILD_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    build_id: str
    size: int
    kind: str
    features: _containers.RepeatedScalarFieldContainer[str]
    shared: bool
    def __init__(self, build_id: _Optional[str] = ..., size: _Optional[int] = ..., kind: _Optional[str] = ..., features: _Optional[_Iterable[str]] = ..., shared: _Optional[bool] = ...) -> None: ...

class DebuginfoExistsRequest(_message.Message):
    __slots__ = ("build_id",)
    BUILD_ID_FIELD_NUMBER: _ClassVar[int]
    build_id: str
    def __init__(self, build_id: _Optional[str] = ...) -> None: ...

class DebuginfoExistsResponse(_message.Message):
    __slots__ = ("exists", "source", "shared")
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    exists: bool
    source: str
    shared: bool
    def __init__(self, exists: _Optional[bool] = ..., source: _Optional[str] = ..., shared: _Optional[bool] = ...) -> None: ...
