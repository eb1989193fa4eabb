"""Retries of idempotent calls: exponential back-off with full jitter, on transient failures only.

Only a call that can run twice with the effect of once is retried (a recall, a listing, a retain whose
every turn has an id); a forget, purge or update is never sent twice, since its first attempt may have
reached the service before the failure.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import grpc

RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
"""Failures worth another attempt: the edge was unreachable, or the attempt ran out of time."""

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """How long to wait before each retry: ``initial * multiplier**n`` capped at ``maximum``, full jitter."""

    initial: float = 0.2
    multiplier: float = 2.0
    maximum: float = 5.0

    def delay(self, retry: int) -> float:
        """Seconds before retry number ``retry`` (0 for the first), drawn uniformly below the cap."""
        return random.uniform(0.0, min(self.maximum, self.initial * self.multiplier**retry))


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]], retries: int, backoff: Backoff, idempotent: bool
) -> T:
    """``attempt()``, again up to ``retries`` times on a retryable failure when the call is idempotent."""
    tries = retries + 1 if idempotent else 1
    for number in range(tries):
        try:
            return await attempt()
        except grpc.aio.AioRpcError as error:
            if error.code() not in RETRYABLE or number == tries - 1:
                raise
        await asyncio.sleep(backoff.delay(number))
    raise AssertionError("unreachable")  # pragma: no cover
