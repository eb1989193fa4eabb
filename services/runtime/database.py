"""How a store failure reaches callers: retryable only when retrying can help.

psycopg files several kinds of failure under ``OperationalError``: a server that cannot be reached, but
also a statement that exceeds one of PostgreSQL's own limits (SQLSTATE class 54, such as an index row
over a third of a page). The first is UNAVAILABLE, which callers and the outbox retry; the second fails
the same way every time, so it is FAILED_PRECONDITION with the cause in the message, never a retry loop.
A Redis server that cannot be reached or does not answer in time is UNAVAILABLE too.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import redis.exceptions
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from hindsight.runtime.errors import FailedPrecondition, Unavailable

PROGRAM_LIMIT_CLASS = "54"
"""SQLSTATE class of "program limit exceeded": the statement itself is too large; retrying cannot help."""


def database_error(store: str, exc: psycopg.OperationalError) -> Unavailable | FailedPrecondition:
    """The domain error for a failure of ``store`` (a pool timeout included): a PostgreSQL limit is not
    retryable, the rest is."""
    if isinstance(exc, PoolTimeout):
        return Unavailable(f"{store}: no PostgreSQL connection free in time")
    state = exc.sqlstate or ""
    if state.startswith(PROGRAM_LIMIT_CLASS):
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return FailedPrecondition(f"{store}: PostgreSQL limit exceeded (SQLSTATE {state}): {first_line}")
    return Unavailable(f"{store}: PostgreSQL: {exc}")


@contextlib.asynccontextmanager
async def store_errors(store: str) -> AsyncIterator[None]:
    """Around every use of ``store``: PostgreSQL or Redis unreachable (or no pooled connection free) is
    UNAVAILABLE, which callers and the outbox retry, not INTERNAL; see :func:`database_error`."""
    try:
        yield
    except psycopg.OperationalError as exc:  # PoolTimeout is one
        raise database_error(store, exc) from exc
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
        raise Unavailable(f"{store} unreachable: {exc}") from exc


async def pool_answers(pool: AsyncConnectionPool[Any], log: logging.Logger, failure: str) -> bool:
    """Whether PostgreSQL answers ``SELECT 1`` through ``pool`` within 2 seconds: the readiness probe of
    every store on a pool. A failure is logged as ``failure`` on the store's own ``log``, never raised."""
    try:
        async with pool.connection(timeout=2.0) as conn:
            await conn.execute("SELECT 1")
        return True
    except Exception:
        log.warning(failure, exc_info=True)
        return False
