"""Typed Python clients of the edge's gRPC ``MemoryService``, on plain dataclasses (no protobuf).

``AsyncMemoryClient`` for asyncio code, ``MemoryClient`` for everything else; both take a deadline per call,
retry idempotent calls on transient failures and present a bearer token. See docs/python-client.md.
"""

from hindsight.client.aio import AsyncMemoryClient
from hindsight.client.errors import (
    DeadlineExceeded,
    FailedPrecondition,
    HindsightError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from hindsight.client.retry import Backoff
from hindsight.client.sync import MemoryClient
from hindsight.client.types import *  # noqa: F403
from hindsight.client.types import __all__ as _types

__all__ = [
    "AsyncMemoryClient",
    "Backoff",
    "DeadlineExceeded",
    "FailedPrecondition",
    "HindsightError",
    "InvalidArgument",
    "MemoryClient",
    "NotFound",
    "PermissionDenied",
    "ResourceExhausted",
    "Unauthenticated",
    "Unavailable",
    *_types,
]
