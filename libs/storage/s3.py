"""The object store on an S3-compatible server (MinIO, S3, ...) through the `minio` client.

The client's own HTTP pool waits up to five minutes per connect and retries five times; a push
waits on `put`, so this module gives it a pool that fails within a few seconds when the server is
down. Every minio/urllib3 exception is translated here: NoSuchKey → `ObjectNotFound`; connection
errors, timeouts, 5xx and throttling → `StorageUnavailable`; rejected credentials →
`StorageConfigError`; anything else → `StorageError`.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import BinaryIO

import urllib3
from minio import Minio
from minio.error import InvalidResponseError, MinioException, S3Error, ServerError
from minio.helpers import MAX_PART_SIZE, MIN_PART_SIZE

from flamewatch.storage.errors import ObjectNotFound, StorageConfigError, StorageError, StorageUnavailable
from flamewatch.storage.objstore import ObjectInfo, S3Config, check_key, check_prefix

CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 10.0  # between two reads of one response (and PUT body → reply), not the whole body
_TRANSIENT_CODES = frozenset(
    {"SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "XMinioServerNotInitialized"}
)
_CREDENTIAL_CODES = frozenset({"InvalidAccessKeyId", "SignatureDoesNotMatch"})
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FILE_PART_BYTES = 16 << 20


class S3ObjectStore:
    """An `ObjectStore` in one bucket, created at open if missing."""

    # A block read in ranges (`ranged.RangedObject`) comes with up to `range_open_bytes` of its end at open,
    # which its first reads take from, keeping only what they read; later ranges up to `range_hole_bytes`
    # apart come in one request. A round trip to S3 costs about what a megabyte of transfer does: a week of
    # a 100-series fleet's hour blocks (1.26 MB) from MinIO on this machine took 1.84 s in 6 requests a
    # block with 8 KiB gaps, 1.44 s in 2 with 1 MiB gaps, and 1.0 s fetched whole.
    range_open_bytes = 4 << 20
    range_hole_bytes = 1 << 20

    def __init__(self, config: S3Config) -> None:
        self._config = config
        self._bucket = config.bucket
        self._prefix = _normalise_prefix(config.prefix)
        self._where = f"S3 endpoint {config.endpoint} bucket {config.bucket}"
        self._http = _pool_manager()
        self._client = self._make_client()
        self._ensure_bucket()

    def put(self, key: str, data: bytes) -> None:
        name = self._name(key)
        # One part up to 5 GiB: a single PUT is atomic and one round trip.
        part_size = min(max(len(data), MIN_PART_SIZE), MAX_PART_SIZE)
        with self._errors(key):
            self._client.put_object(self._bucket, name, io.BytesIO(data), len(data), part_size=part_size)

    def put_file(self, key: str, file: BinaryIO, size: int) -> None:
        name = self._name(key)
        # One PUT up to _FILE_PART_BYTES; a larger file goes in parts of that size (the client holds a
        # part at a time), and the object appears whole when the upload completes.
        with self._errors(key):
            self._client.put_object(self._bucket, name, file, size, part_size=_FILE_PART_BYTES)

    def get(self, key: str) -> bytes:
        return self._read(key)[0]

    def get_range(self, key: str, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        return self._read(key, offset=start, length=length)[0]

    def get_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        return [self.get_range(key, start, length) for start, length in ranges]

    def get_tail(self, key: str, length: int) -> tuple[bytes, int]:
        # A suffix range: the last `length` bytes, or the whole object when shorter; Content-Range
        # ("bytes 1197670-1263205/1263206") gives the size
        data, headers = self._read(key, request_headers={"Range": f"bytes=-{max(length, 1)}"})
        total = (headers.get("Content-Range") or "").rpartition("/")[2]
        return data, int(total) if total.isdigit() else len(data)

    def _read(self, key: str, **ranges) -> tuple[bytes, dict[str, str]]:
        name = self._name(key)
        with self._errors(key):
            response = self._client.get_object(self._bucket, name, **ranges)
            try:
                return response.read(), dict(response.headers)
            finally:
                response.close()
                response.release_conn()

    def delete(self, key: str) -> None:
        name = self._name(key)
        with self._errors(key):
            self._client.remove_object(self._bucket, name)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        full = self._prefix + check_prefix(prefix)
        with self._errors():
            for obj in self._client.list_objects(self._bucket, prefix=full, recursive=True):
                yield ObjectInfo(
                    key=obj.object_name.removeprefix(self._prefix),
                    size=obj.size or 0,
                    last_modified_ns=_to_ns(obj.last_modified),
                )

    def list_prefixes(self, prefix: str) -> list[str]:
        full = self._prefix + check_prefix(prefix)
        with self._errors():
            names = [
                obj.object_name
                for obj in self._client.list_objects(self._bucket, prefix=full, recursive=False)
                if obj.is_dir
            ]
        return sorted(name.removeprefix(self._prefix) for name in names)

    def ping(self) -> None:
        with self._errors():
            if not self._client.bucket_exists(self._bucket):
                raise StorageError(f"{self._where}: the bucket does not exist")

    def close(self) -> None:
        self._http.clear()

    def _make_client(self) -> Minio:
        config = self._config
        try:
            return Minio(
                config.endpoint,
                access_key=config.access_key,
                secret_key=config.secret_key,
                secure=not config.insecure,
                region=config.region,
                http_client=self._http,
            )
        except ValueError as exc:
            raise StorageConfigError(f"{self._where}: {exc}") from exc

    def _ensure_bucket(self) -> None:
        with self._errors():
            if self._client.bucket_exists(self._bucket):
                return
            try:
                self._client.make_bucket(self._bucket, location=self._config.region)
            except S3Error as exc:
                if exc.code != "BucketAlreadyOwnedByYou":  # another replica won the race
                    raise

    def _name(self, key: str) -> str:
        return self._prefix + check_key(key)

    @contextlib.contextmanager
    def _errors(self, key: str | None = None) -> Iterator[None]:
        """Translate minio/urllib3 exceptions raised inside the block into storage errors."""
        try:
            yield
        except S3Error as exc:
            raise self._s3_error(exc, key) from exc
        except (ServerError, InvalidResponseError) as exc:
            raise self._status_error(exc) from exc
        except ValueError as exc:  # the client validates bucket and object names locally
            raise StorageConfigError(f"{self._where}: {exc}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise StorageUnavailable(f"{self._where} unreachable: {_reason(exc)}") from exc
        except MinioException as exc:
            raise StorageError(f"{self._where}: {exc}") from exc

    def _s3_error(self, exc: S3Error, key: str | None) -> StorageError:
        if exc.code == "NoSuchKey" and key is not None:
            return ObjectNotFound(key)
        detail = f"{self._where}: {exc.code}: {exc.message}"
        if exc.code in _TRANSIENT_CODES or getattr(exc.response, "status", 0) >= 500:
            return StorageUnavailable(detail)
        if exc.code in _CREDENTIAL_CODES:
            return StorageConfigError(f"{detail} (check the access and secret key)")
        return StorageError(detail)

    def _status_error(self, exc: ServerError | InvalidResponseError) -> StorageError:
        """A reply without an S3 error body, e.g. from a proxy in front of the server."""
        status = exc.status_code if isinstance(exc, ServerError) else getattr(exc, "_code", 0)
        error = StorageUnavailable if status >= 500 else StorageError
        return error(f"{self._where}: HTTP {status}: {exc}")


def _pool_manager() -> urllib3.PoolManager:
    """Short connect timeout and few retries, so a dead server fails a push in seconds."""
    retries = urllib3.Retry(
        total=3,
        connect=1,
        read=1,
        status=2,
        backoff_factor=0.2,
        backoff_max=1.0,
        status_forcelist=(500, 502, 503, 504),
        raise_on_status=False,  # hand the last 5xx to minio so its S3 error code is kept
        respect_retry_after_header=False,  # a long Retry-After would stall the push
    )
    return urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S),
        retries=retries,
        maxsize=16,
    )


def _normalise_prefix(prefix: str) -> str:
    prefix = prefix.strip("/")
    return check_key(prefix) + "/" if prefix else ""


def _reason(exc: Exception) -> str:
    """The root cause of a urllib3 error, without the retry wrapper's noise."""
    reason = getattr(exc, "reason", None)
    return str(reason or exc)


def _to_ns(moment: datetime | None) -> int:
    if moment is None:
        return 0
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000
