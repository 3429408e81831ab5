"""`flamewatch debuginfo upload`: send ELF files to a symbolizer, each under its GNU build ID.

Each file is checked here first (an ELF file with a build ID), so a wrong file fails before any
upload. A separate `.debug` file given with its executable (`app` and `app.debug`) must carry the
same build ID, or the upload stops and names both.

The files belong to the tenant of the credential (`--tenant` chooses among those it may write, sent as
`x-scope-orgid`), and name only that tenant's profiles; `--shared` stores them in the shared set, which
names every tenant's profiles and needs a credential with admin.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import grpc

from flamewatch.api.flamewatch.v1 import symbolizer_pb2 as pb
from flamewatch.api.flamewatch.v1 import symbolizer_pb2_grpc
from flamewatch.rpc.channels import CREDENTIAL_HINT, describe_failure, grpc_blocking_channel
from flamewatch.rpc.tenant import HEADER
from flamewatch.symbolizer.elf import read_elf
from flamewatch.symbolizer.errors import BuildIdMismatch, DebuginfoError
from flamewatch.symbolizer.service import UPLOAD_CHUNK_BYTES


class DebuginfoUploadError(Exception):
    """A file could not be read, is not usable debug information, or the symbolizer refused it."""


def upload_debuginfo(files: Sequence[Path], address: str, timeout: float, tenant: str | None = None,
                     shared: bool = False) -> Iterator[str]:
    checked = [(path, data, _build_id(path, data)) for path, data in ((p, _read(p)) for p in files)]
    _check_companions(checked)
    metadata = ((HEADER, tenant),) if tenant else None
    with grpc_blocking_channel(address) as channel:
        stub = symbolizer_pb2_grpc.SymbolizerServiceStub(channel)
        for path, data, build_id in checked:
            try:
                done = stub.UploadDebuginfo(_chunks(path, data, build_id, shared), timeout=timeout, metadata=metadata)
            except grpc.RpcError as exc:
                raise DebuginfoUploadError(f"{path}: {_refusal(exc, address)}") from exc
            where = " in the shared set" if done.shared else ""
            yield (f"{path}: stored{where} as build ID {done.build_id} ({done.size} bytes, "
                   f"{', '.join(done.features)})")


def _refusal(exc: grpc.RpcError, address: str) -> str:
    code = exc.code()
    said = f"({code.name}): {describe_failure(exc).partition(': ')[2]}"  # the details, and TLS advice if any
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"cannot reach {address} {said}"
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return f"{address} asks for credentials {said}; {CREDENTIAL_HINT}"
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return f"{address} refused this credential {said}"
    return f"refused by {address} {said}"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DebuginfoUploadError(f"{path}: {exc.strerror}") from exc


def _build_id(path: Path, data: bytes) -> str:
    try:
        return read_elf(data, str(path)).build_id
    except DebuginfoError as exc:
        raise DebuginfoUploadError(str(exc)) from exc


def _check_companions(checked: list[tuple[Path, bytes, str]]) -> None:
    by_path = {str(path): build_id for path, _, build_id in checked}
    for path, _, build_id in checked:
        executable = str(path).removesuffix(".debug")
        if path.suffix == ".debug" and executable in by_path and by_path[executable] != build_id:
            raise DebuginfoUploadError(str(BuildIdMismatch(
                f"{path} has build ID {build_id} but {executable} has {by_path[executable]}: the debug file "
                "was not split from this executable")))


def _chunks(path: Path, data: bytes, build_id: str, shared: bool) -> Iterator[pb.UploadDebuginfoChunk]:
    yield pb.UploadDebuginfoChunk(build_id=build_id, file_name=path.name, data=data[:UPLOAD_CHUNK_BYTES],
                                  shared=shared)
    for at in range(UPLOAD_CHUNK_BYTES, len(data), UPLOAD_CHUNK_BYTES):
        yield pb.UploadDebuginfoChunk(data=data[at:at + UPLOAD_CHUNK_BYTES])
