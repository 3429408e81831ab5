"""SymbolizerService over gRPC: decode, call `Symbolizer`, encode; errors map in `flamewatch.rpc.errors`."""

from __future__ import annotations

import asyncio

import numpy as np

from flamewatch.api.flamewatch.v1 import symbolizer_pb2 as pb
from flamewatch.api.flamewatch.v1 import symbolizer_pb2_grpc
from flamewatch.rpc.auth import grpc_admin
from flamewatch.rpc.grpc_server import handled
from flamewatch.symbolizer.symbolizer import FAILED, NOT_FOUND, OK, ObjectRequest, ObjectResult, Symbolizer

_STATUS = {OK: pb.SYMBOLIZE_STATUS_OK, NOT_FOUND: pb.SYMBOLIZE_STATUS_NOT_FOUND, FAILED: pb.SYMBOLIZE_STATUS_FAILED}
UPLOAD_CHUNK_BYTES = 1 << 20


class SymbolizerServicer(symbolizer_pb2_grpc.SymbolizerServiceServicer):
    def __init__(self, symbolizer: Symbolizer, max_upload_bytes: int):
        self._s, self._max_upload = symbolizer, max_upload_bytes

    @handled
    async def Symbolize(self, request, context):
        grpc_admin("symbolize")  # debug information is shared by every tenant
        requests = [ObjectRequest(o.build_id, o.file_name, np.array(o.file_offsets, np.uint64))
                    for o in request.objects]
        results = await asyncio.to_thread(self._s.symbolize, requests)
        return pb.SymbolizeResponse(objects=[_object_frames(r) for r in results])

    @handled
    async def UploadDebuginfo(self, request_iterator, context):
        grpc_admin("upload debug information")
        build_id, file_name, parts, size = "", "", [], 0
        async for chunk in request_iterator:
            if not parts:
                build_id, file_name = chunk.build_id, chunk.file_name
            size += len(chunk.data)
            if size > self._max_upload:
                raise ValueError(f"{file_name or 'the upload'} is larger than the {self._max_upload} bytes allowed")
            parts.append(chunk.data)
        done = await asyncio.to_thread(self._s.upload, b"".join(parts), file_name, build_id)
        return pb.UploadDebuginfoResponse(build_id=done.build_id, size=done.size, kind=done.kind,
                                          features=done.features)

    @handled
    async def DebuginfoExists(self, request, context):
        grpc_admin("look up debug information")
        exists, source = await asyncio.to_thread(self._s.exists, request.build_id)
        return pb.DebuginfoExistsResponse(exists=exists, source=source)


def _object_frames(r: ObjectResult) -> pb.ObjectFrames:
    return pb.ObjectFrames(status=_STATUS[r.status], error=r.error, locations=[
        pb.SymbolizedLocation(frames=[pb.SymbolizedFrame(function=f.function, file=f.file, line=f.line)
                                      for f in frames]) for frames in r.locations])


def register_grpc(symbolizer: Symbolizer, max_upload_bytes: int):
    return lambda server: symbolizer_pb2_grpc.add_SymbolizerServiceServicer_to_server(
        SymbolizerServicer(symbolizer, max_upload_bytes), server)
