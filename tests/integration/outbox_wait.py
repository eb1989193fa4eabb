"""Waiting on episodic memory's outbox in integration tests, bounded so a stuck outbox fails the test."""

from __future__ import annotations

import asyncio
import time

from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc

WAIT_SECONDS = 30.0
"""Bound on waiting for the outbox to drain (a healthy delivery takes well under a second)."""
TIMEOUT = 20
"""Seconds one OutboxStatus call may take."""


async def drained(
    episodic: episodic_pb2_grpc.EpisodicServiceStub, bank: str
) -> episodic_pb2.OutboxStatusResponse:
    """Wait (bounded) until nothing of the bank waits in the outbox."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        status = await episodic.OutboxStatus(episodic_pb2.OutboxStatusRequest(bank_id=bank), timeout=TIMEOUT)
        if not any(status.pending.values()):
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"the outbox did not drain: {dict(status.pending)}")
        await asyncio.sleep(0.05)
