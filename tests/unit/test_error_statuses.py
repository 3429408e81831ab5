"""How failures answer: a request's mistake as a client error, a failure of our own as an internal one."""

from __future__ import annotations

import grpc
import pyarrow as pa
import pyarrow.parquet as pq

from flamewatch.rpc.errors import connect_error_of, message_of, status_of


def arrow_failure() -> BaseException:
    """What pyarrow raises reading a file that is no Parquet, as a block read by two threads at once did."""
    try:
        pq.ParquetFile(pa.BufferReader(b"not a parquet file at all"))
    except Exception as exc:  # noqa: BLE001 - the failure itself is what is tested
        return exc
    raise AssertionError("pyarrow read bytes that are no Parquet file")


def test_a_pyarrow_failure_is_internal_though_it_is_a_value_error() -> None:
    exc = arrow_failure()
    assert isinstance(exc, ValueError)  # ArrowInvalid: why it used to answer 400
    status = status_of(exc)
    assert (status.grpc_code, status.http_status) == (grpc.StatusCode.INTERNAL, 500)
    assert connect_error_of(exc).http_status == 500
    assert message_of(exc).startswith("internal error: ArrowInvalid:")


def test_a_requests_mistake_stays_a_client_error() -> None:
    exc = ValueError('unknown granularity "lines2"')
    status = status_of(exc)
    assert (status.grpc_code, status.http_status) == (grpc.StatusCode.INVALID_ARGUMENT, 400)
    assert message_of(exc) == str(exc)
