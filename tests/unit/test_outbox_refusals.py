"""How the outbox tells a refused entry from a target that is down, and how it sizes its requests."""

from __future__ import annotations

import grpc
import pytest

from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.episodic.outbox import refused, sized
from hindsight.runtime.errors import DeadlineExceeded, InvalidArgument, ResourceExhausted, Unavailable


def rpc_error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


@pytest.mark.parametrize(
    ("error", "is_refusal"),
    [
        (rpc_error(grpc.StatusCode.INVALID_ARGUMENT, "records[0].text: too long"), True),
        (rpc_error(grpc.StatusCode.FAILED_PRECONDITION, "not a fact"), True),
        (rpc_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "Sent message larger than max (5 vs. 4)"), True),
        (rpc_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "rate limit: try again in 2 s"), False),
        (rpc_error(grpc.StatusCode.UNAVAILABLE, "connection refused"), False),
        (rpc_error(grpc.StatusCode.PERMISSION_DENIED, "token"), False),
        (InvalidArgument("records[0].id", "is required"), True),
        (ResourceExhausted("records", "the request is 9 bytes, over the limit of 8 bytes"), True),
        (Unavailable("semantic: UNAVAILABLE"), False),
        (DeadlineExceeded("semantic: DEADLINE_EXCEEDED"), False),
        (ValueError("unknown outbox entry"), True),
        (OSError("the store is down"), False),
    ],
)
def test_only_what_the_entry_caused_counts_as_a_refusal(error: BaseException, is_refusal: bool) -> None:
    assert refused(error) is is_refusal


def test_requests_are_cut_by_bytes_and_by_count() -> None:
    records = [(str(i), semantic_pb2.SemanticRecord(id=str(i), text="x" * 1000)) for i in range(10)]
    runs = sized(records, budget=3500)
    assert [len(run) for run in runs] == [3, 3, 3, 1]
    assert all(sum(item[1].ByteSize() for item in run) <= 3500 for run in runs)
    assert [len(run) for run in sized(records, budget=10**9, count=4)] == [4, 4, 2]
    huge = [("h", semantic_pb2.SemanticRecord(id="h", text="x" * 10_000)), *records[:1]]
    assert [len(run) for run in sized(huge, budget=3500)] == [1, 1]  # alone, for the size check to refuse
