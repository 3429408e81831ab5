"""The ObjectStore contract, run on both backends, and how the S3 one fails.

The contract tests run against a directory and against a real MinIO server, so the two backends are
held to the same assertions. The S3-only tests take MinIO away mid-use and check that a caller gets
`StorageUnavailable` within seconds, not after the client's default minutes of retries.
"""

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from infra.minio import MinioServer
from infra.ports import free_port

from flamewatch.storage.errors import ObjectNotFound, StorageConfigError, StorageError, StorageUnavailable
from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.objstore import ObjectStore, S3Config, open_object_store
from flamewatch.storage.s3 import S3ObjectStore

FAILS_WITHIN_S = 5.0


def s3_config(minio: MinioServer, bucket: str, **overrides: object) -> S3Config:
    fields = dict(bucket=bucket, endpoint=minio.endpoint, access_key=minio.access_key,
                  secret_key=minio.secret_key, insecure=True)
    return S3Config(**{**fields, **overrides})  # type: ignore[arg-type]


@pytest.fixture(params=["filesystem", pytest.param("s3", marks=pytest.mark.s3)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    if request.param == "filesystem":
        backend: ObjectStore = FilesystemObjectStore(tmp_path / "objects")
    else:
        minio, bucket = request.getfixturevalue("minio"), request.getfixturevalue("s3_bucket")
        backend = open_object_store(s3_config(minio, bucket))
    yield backend
    backend.close()


# The contract


def test_put_then_get_returns_the_bytes(store: ObjectStore) -> None:
    store.put("t1/blocks/0/2024/01/02/a.parquet", b"\x00block\xff")
    store.put("t1/empty", b"")
    assert store.get("t1/blocks/0/2024/01/02/a.parquet") == b"\x00block\xff"
    assert store.get("t1/empty") == b""


def test_put_file_stores_the_bytes_from_the_file_position(store: ObjectStore, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("flamewatch.storage.s3._FILE_PART_BYTES", 5 << 20)  # the smallest part S3 takes
    body = os.urandom(11 << 20)  # three parts on S3
    with (tmp_path / "block").open("w+b") as file:
        file.write(b"skipped" + body + b"after")
        file.seek(len(b"skipped"))
        store.put_file("t1/blocks/1/a.parquet", file, len(body))
        file.seek(0)
        store.put_file("t1/small", file, 7)
    assert store.get("t1/blocks/1/a.parquet") == body
    assert store.get("t1/small") == b"skipped"


def test_put_replaces_an_existing_object(store: ObjectStore) -> None:
    store.put("k", b"old")
    store.put("k", b"new")
    assert store.get("k") == b"new"


def test_get_of_a_missing_key_raises_object_not_found(store: ObjectStore) -> None:
    with pytest.raises(ObjectNotFound, match="no/such/key") as caught:
        store.get("no/such/key")
    assert caught.value.key == "no/such/key"


def test_ranges_and_the_tail_of_an_object_come_with_its_size(store: ObjectStore) -> None:
    body = bytes(range(256)) * 40  # 10,240 bytes
    store.put("t/blocks/1/r.parquet", body)
    assert store.get_range("t/blocks/1/r.parquet", 1000, 300) == body[1000:1300]
    assert store.get_range("t/blocks/1/r.parquet", 10_200, 100) == body[10_200:]  # past the end: what there is
    assert store.get_range("t/blocks/1/r.parquet", 0, 0) == b""
    assert store.get_ranges("t/blocks/1/r.parquet", [(5, 10), (9000, 2000), (0, 1)]) == [body[5:15], body[9000:],
                                                                                        body[:1]]
    assert store.get_tail("t/blocks/1/r.parquet", 64) == (body[-64:], len(body))
    assert store.get_tail("t/blocks/1/r.parquet", 1 << 20) == (body, len(body))  # shorter than asked: all of it
    for read in (lambda key: store.get_range(key, 0, 10), lambda key: store.get_ranges(key, [(0, 10)]),
                 lambda key: store.get_tail(key, 10)):
        with pytest.raises(ObjectNotFound, match="no/such/key"):
            read("no/such/key")


def test_list_is_recursive_and_in_key_order(store: ObjectStore) -> None:
    for key in ["t/b/2", "t/a.x", "t/a/1", "u/z"]:
        store.put(key, key.encode())
    infos = list(store.list("t/"))
    assert [(i.key, i.size) for i in infos] == [("t/a.x", 5), ("t/a/1", 5), ("t/b/2", 5)]
    now_ns = time.time_ns()
    assert all(now_ns - 60 * 10**9 < i.last_modified_ns < now_ns + 60 * 10**9 for i in infos)


def test_list_takes_a_partial_name_as_prefix(store: ObjectStore) -> None:
    for key in ["t/2024/01/a", "t/2024/02/b", "t/2025/01/c"]:
        store.put(key, b"")
    assert [i.key for i in store.list("t/2024/0")] == ["t/2024/01/a", "t/2024/02/b"]
    assert [i.key for i in store.list("")] == ["t/2024/01/a", "t/2024/02/b", "t/2025/01/c"]
    assert list(store.list("nothing/")) == []


def test_list_prefixes_goes_one_level_down(store: ObjectStore) -> None:
    for key in ["tenant-b/blocks/x", "tenant-a/blocks/y", "tenant-a/blocks/z", "top-level-object"]:
        store.put(key, b"")
    assert store.list_prefixes("") == ["tenant-a/", "tenant-b/"]
    assert store.list_prefixes("tenant-a/") == ["tenant-a/blocks/"]
    assert store.list_prefixes("none/") == []


def test_delete_removes_the_object_and_tolerates_missing_keys(store: ObjectStore) -> None:
    store.put("t1/blocks/x", b"x")
    store.put("t2/blocks/y", b"y")
    store.delete("t1/blocks/x")
    store.delete("t1/blocks/x")
    store.delete("never/written")
    with pytest.raises(ObjectNotFound):
        store.get("t1/blocks/x")
    assert [i.key for i in store.list("")] == ["t2/blocks/y"]
    assert store.list_prefixes("") == ["t2/"]


@pytest.mark.parametrize("key", ["../escape", "/absolute", "a//b", ""])
def test_unsafe_keys_are_rejected(store: ObjectStore, key: str) -> None:
    with pytest.raises(StorageError, match="invalid object key"):
        store.put(key, b"x")


# S3 only


@pytest.mark.s3
def test_the_bucket_is_created_at_open_and_reused(minio: MinioServer) -> None:
    bucket = f"flamewatch-new-{uuid.uuid4().hex[:12]}"
    first = S3ObjectStore(s3_config(minio, bucket))
    first.put("k", b"v")
    second = S3ObjectStore(s3_config(minio, bucket))
    assert second.get("k") == b"v"
    first.close()
    second.close()
    minio.remove_bucket(bucket)


@pytest.mark.s3
def test_a_key_prefix_puts_every_object_in_a_folder(minio: MinioServer, s3_bucket: str) -> None:
    store = S3ObjectStore(s3_config(minio, s3_bucket, prefix="/shared/flamewatch/"))
    store.put("tenant/blocks/k", b"v")
    raw = [obj.object_name for obj in minio.client().list_objects(s3_bucket, recursive=True)]
    assert raw == ["shared/flamewatch/tenant/blocks/k"]
    assert [i.key for i in store.list("")] == ["tenant/blocks/k"]
    assert store.list_prefixes("") == ["tenant/"]
    assert store.get("tenant/blocks/k") == b"v"
    store.close()


@pytest.mark.s3
def test_a_stopped_server_fails_fast_with_storage_unavailable(minio: MinioServer, s3_bucket: str) -> None:
    store = S3ObjectStore(s3_config(minio, s3_bucket))
    store.put("k", b"before")
    minio.stop()
    try:
        for call in (lambda: store.put("k", b"x"), lambda: store.get("k"), lambda: list(store.list(""))):
            started = time.monotonic()
            with pytest.raises(StorageUnavailable) as caught:
                call()
            assert time.monotonic() - started < FAILS_WITHIN_S
            assert minio.endpoint in str(caught.value) and s3_bucket in str(caught.value)
    finally:
        minio.start()
    assert store.get("k") == b"before"  # the same store recovers once the server is back
    store.close()


@pytest.mark.s3
def test_opening_an_unreachable_endpoint_fails_fast(minio: MinioServer) -> None:
    endpoint = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(StorageUnavailable, match=f"S3 endpoint {endpoint} bucket flamewatch"):
        S3ObjectStore(s3_config(minio, "flamewatch", endpoint=endpoint))
    assert time.monotonic() - started < FAILS_WITHIN_S


@pytest.mark.s3
def test_wrong_credentials_are_a_config_error(minio: MinioServer, s3_bucket: str) -> None:
    with pytest.raises(StorageConfigError, match="InvalidAccessKeyId|SignatureDoesNotMatch"):
        S3ObjectStore(s3_config(minio, s3_bucket, secret_key="not-the-secret"))


@pytest.mark.s3
def test_throttling_is_retried_briefly_then_reported_as_unavailable() -> None:
    """MinIO cannot be made to throttle on demand, so a stand-in answers every request with SlowDown."""
    with _throttling_server() as (endpoint, requests):
        config = S3Config(bucket="flamewatch", endpoint=endpoint, access_key="a", secret_key="s",
                          region="us-east-1", insecure=True)
        store = S3ObjectStore(config)  # the stand-in says the bucket exists
        started = time.monotonic()
        with pytest.raises(StorageUnavailable, match="SlowDown"):
            store.get("k")
        assert time.monotonic() - started < FAILS_WITHIN_S
        assert requests == ["HEAD", "GET", "GET", "GET"]  # bucket check, then one try and two retries
        store.close()


class _ThrottlingHandler(BaseHTTPRequestHandler):
    requests: list[str]
    body = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
            b"<Message>Please reduce your request rate.</Message><Resource>/flamewatch/k</Resource></Error>")

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
        self.requests.append("HEAD")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        self.requests.append("GET")
        self.send_response(503)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def _throttling_server() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on a free port that throttles every GET; yields its endpoint and request log."""
    requests: list[str] = []
    handler = type("Handler", (_ThrottlingHandler,), {"requests": requests})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
