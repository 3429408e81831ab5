"""The one way push endpoints read a body (`flamewatch.rpc.body`) and the one conversion of label sets to
`LabelPair` messages and back (`flamewatch.rpc.labelpairs`)."""

from __future__ import annotations

import asyncio

import pytest
from starlette.requests import Request

from flamewatch.api.flamewatch.v1 import types_pb2 as our_types
from flamewatch.api.types.v1 import types_pb2 as pyroscope_types
from flamewatch.pprof import LimitExceeded
from flamewatch.rpc.body import read_limited
from flamewatch.rpc.labelpairs import label_pairs, labels_of_pairs


def request(chunks: list[bytes], content_length: int | None = None) -> tuple[Request, list[bytes]]:
    """A request whose body arrives in `chunks`; the list it returns holds the chunks read so far."""
    read: list[bytes] = []
    pending = list(chunks)

    async def receive() -> dict:
        chunk = pending.pop(0)
        read.append(chunk)
        return {"type": "http.request", "body": chunk, "more_body": bool(pending)}

    headers = [(b"content-length", str(content_length).encode())] if content_length is not None else []
    return Request({"type": "http", "method": "POST", "path": "/", "headers": headers}, receive), read


def test_a_body_within_the_limit_is_read_whole():
    r, read = request([b"ab", b"cd", b"e"], content_length=5)
    assert asyncio.run(read_limited(r, 5)) == b"abcde"
    assert read == [b"ab", b"cd", b"e"]


def test_a_declared_length_over_the_limit_is_refused_before_reading_anything():
    r, read = request([b"x" * 10] * 100, content_length=1000)
    with pytest.raises(LimitExceeded, match=r"^request body is larger than 100 bytes, the limit$"):
        asyncio.run(read_limited(r, 100))
    assert read == []


def test_a_stream_is_refused_as_soon_as_it_passes_the_limit():
    r, read = request([b"x" * 60] * 100)  # no Content-Length: chunked
    with pytest.raises(LimitExceeded, match=r"^request body is larger than 100 bytes, the limit$"):
        asyncio.run(read_limited(r, 100))
    assert len(read) == 2


@pytest.mark.parametrize("pair_type", [our_types.LabelPair, pyroscope_types.LabelPair])
def test_label_sets_become_sorted_pairs_of_either_contract_and_back(pair_type):
    labels = {"service_name": "checkout", "__name__": "process_cpu", "env": "prod"}
    pairs = label_pairs(labels, pair_type)
    assert [(type(p), p.name, p.value) for p in pairs] == [
        (pair_type, "__name__", "process_cpu"), (pair_type, "env", "prod"), (pair_type, "service_name", "checkout")]
    assert labels_of_pairs(pairs) == labels
