"""One mapping for a store that cannot be reached: PostgreSQL and Redis both become UNAVAILABLE (retryable),
and a PostgreSQL limit stays FAILED_PRECONDITION."""

from __future__ import annotations

import socket

import psycopg
import pytest
import redis.asyncio as aioredis

from hindsight.runtime.database import store_errors
from hindsight.runtime.errors import FailedPrecondition, Unavailable


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_postgresql_server_that_does_not_answer_is_unavailable() -> None:
    url = f"postgresql://nobody@127.0.0.1:{_closed_port()}/none"
    with pytest.raises(Unavailable, match=r"^lesson store: PostgreSQL: "):
        async with store_errors("lesson store"):
            await psycopg.AsyncConnection.connect(url, connect_timeout=2)


async def test_a_redis_server_that_does_not_answer_is_unavailable() -> None:
    client = aioredis.Redis(host="127.0.0.1", port=_closed_port(), socket_connect_timeout=2)
    try:
        with pytest.raises(Unavailable, match=r"^working memory store unreachable: "):
            async with store_errors("working memory store"):
                await client.ping()
    finally:
        await client.aclose()


async def test_a_statement_over_a_postgresql_limit_is_not_retryable(database_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        with pytest.raises(FailedPrecondition, match="SQLSTATE 54"):
            async with store_errors("episodic store"):
                await conn.execute("SELECT repeat('x', 1024 * 1024 * 1024 + 1)")  # over 1 GB: 54000


async def test_other_errors_pass_through() -> None:
    with pytest.raises(KeyError):
        async with store_errors("episodic store"):
            raise KeyError("not a store failure")
