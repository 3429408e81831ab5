"""SymbolizerService over gRPC: decode, call `Symbolizer`, encode; errors map in `flamewatch.rpc.errors`.

Who is asking decides whose debug information a call touches: `Symbolize` and `DebuginfoExists` read the
tenant the caller's credential and `x-scope-orgid` resolve to (the querier's credential may read every
tenant and names the query's), `UploadDebuginfo` writes that tenant's, or the shared set when its first
chunk says `shared` and the caller is an admin.
"""

from __future__ import annotations

import asyncio

import numpy as np

from flamewatch.api.flamewatch.v1 import symbolizer_pb2 as pb
from flamewatch.api.flamewatch.v1 import symbolizer_pb2_grpc
from flamewatch.auth.caller import Action
from flamewatch.rpc.auth import grpc_admin, grpc_tenant
from flamewatch.rpc.grpc_server import handled
from flamewatch.symbolizer.store import SHARED
from flamewatch.symbolizer.symbolizer import (
    FAILED,
    NOT_FOUND,
    OK,
    ObjectRequest,
    ObjectResult,
    Symbolizer,
    checked_upload_names,
)

_STATUS = {OK: pb.SYMBOLIZE_STATUS_OK, NOT_FOUND: pb.SYMBOLIZE_STATUS_NOT_FOUND, FAILED: pb.SYMBOLIZE_STATUS_FAILED}
UPLOAD_CHUNK_BYTES = 1 << 20


class SymbolizerServicer(symbolizer_pb2_grpc.SymbolizerServiceServicer):
    def __init__(self, symbolizer: Symbolizer, max_upload_bytes: int):
        self._s, self._max_upload = symbolizer, max_upload_bytes

    @handled
    async def Symbolize(self, request, context):
        tenant = grpc_tenant(context, Action.READ)
        requests = [ObjectRequest(o.build_id, o.file_name, np.array(o.file_offsets, np.uint64))
                    for o in request.objects]
        results = await asyncio.to_thread(self._s.symbolize, tenant, requests)
        return pb.SymbolizeResponse(objects=[_object_frames(r) for r in results])

    @handled
    async def UploadDebuginfo(self, request_iterator, context):
        owner, build_id, file_name, parts, size = None, "", "", [], 0
        async for chunk in request_iterator:
            if owner is None:  # refused before the rest of the file is read
                owner, build_id, file_name = _owner(chunk, context), chunk.build_id, chunk.file_name
                checked_upload_names(file_name, build_id)
            size += len(chunk.data)
            if size > self._max_upload:
                raise ValueError(f"{file_name or 'the upload'} is larger than the {self._max_upload} bytes allowed")
            parts.append(chunk.data)
        if owner is None:
            raise ValueError("the upload sent no chunk: the first one carries the file's name and its first bytes")
        done = await asyncio.to_thread(self._s.upload, owner, b"".join(parts), file_name, build_id)
        return pb.UploadDebuginfoResponse(build_id=done.build_id, size=done.size, kind=done.kind,
                                          features=done.features, shared=owner == SHARED)

    @handled
    async def DebuginfoExists(self, request, context):
        tenant = grpc_tenant(context, Action.READ)
        stored = await asyncio.to_thread(self._s.exists, tenant, request.build_id)
        if stored is None:
            return pb.DebuginfoExistsResponse(exists=False)
        return pb.DebuginfoExistsResponse(exists=True, source=stored.source, shared=stored.owner == SHARED)


def _owner(first: pb.UploadDebuginfoChunk, context) -> str:
    """Whose the upload is: the shared set for an admin who asks for it, else the caller's tenant."""
    if first.shared:
        grpc_admin("upload to the shared debug information")
        return SHARED
    return grpc_tenant(context, Action.WRITE)


def _object_frames(r: ObjectResult) -> pb.ObjectFrames:
    return pb.ObjectFrames(status=_STATUS[r.status], error=r.error, locations=[
        pb.SymbolizedLocation(frames=[pb.SymbolizedFrame(function=f.function, file=f.file, line=f.line)
                                      for f in frames]) for frames in r.locations])


def register_grpc(symbolizer: Symbolizer, max_upload_bytes: int):
    return lambda server: symbolizer_pb2_grpc.add_SymbolizerServiceServicer_to_server(
        SymbolizerServicer(symbolizer, max_upload_bytes), server)
