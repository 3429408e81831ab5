"""The querier's `Symbolizer` over gRPC (SymbolizerService.Symbolize); any RPC failure is
`SymbolizerUnavailable`, so a query answers with addresses instead of failing.

Each call names the query's tenant in `x-scope-orgid`, so the symbolizer answers from that tenant's
debug information; the querier's own credential (`rpc.channels`) must be allowed to read every tenant.
"""

from __future__ import annotations

import grpc

from flamewatch.api.flamewatch.v1 import symbolizer_pb2 as pb
from flamewatch.api.flamewatch.v1 import symbolizer_pb2_grpc
from flamewatch.querier.symbolization import ObjectAddresses, ObjectAnswer, SymbolizerUnavailable
from flamewatch.rpc.channels import describe_failure, grpc_blocking_channel
from flamewatch.rpc.listen import MESSAGE_LIMITS
from flamewatch.rpc.tenant import HEADER


class GrpcSymbolizer:
    def __init__(self, address: str, timeout_s: float = 30.0):
        self.address = address
        self._channel = grpc_blocking_channel(address, options=MESSAGE_LIMITS)
        self._stub = symbolizer_pb2_grpc.SymbolizerServiceStub(self._channel)
        self._timeout = timeout_s

    def symbolize(self, tenant: str, objects: list[ObjectAddresses]) -> list[ObjectAnswer]:
        request = pb.SymbolizeRequest(objects=[
            pb.ObjectAddresses(build_id=o.build_id, file_name=o.file_name, file_offsets=o.file_offsets.tolist())
            for o in objects])
        try:
            response = self._stub.Symbolize(request, timeout=self._timeout, metadata=((HEADER, tenant),))
        except grpc.RpcError as exc:
            raise SymbolizerUnavailable(f"{self.address}: {describe_failure(exc)}") from exc
        return [_answer(o) for o in response.objects]

    def close(self) -> None:
        self._channel.close()


def _answer(o: pb.ObjectFrames) -> ObjectAnswer:
    if o.status != pb.SYMBOLIZE_STATUS_OK:
        return ObjectAnswer(False, [], o.error)
    return ObjectAnswer(True, [tuple((f.function, f.file, f.line) for f in loc.frames) for loc in o.locations])
