"""Shared fixtures: real PostgreSQL and Redis for integration tests.

The standard local servers are used when they answer (CI starts them); otherwise the embedded
servers from pip wheels are started once for the run, so the suite works on a machine with none.
"""

from __future__ import annotations

import os
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def _listening(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


@pytest.fixture(scope="session")
def embedded_dir() -> Iterator[Path]:
    """A scratch directory for embedded servers started by the test run."""
    with tempfile.TemporaryDirectory(prefix="hindsight-test-") as path:
        yield Path(path)


@pytest.fixture(scope="session")
def database_url(embedded_dir: Path) -> Iterator[str]:
    """A PostgreSQL URL: $HINDSIGHT_TEST_DATABASE_URL, the local server, or an embedded one."""
    if url := os.environ.get("HINDSIGHT_TEST_DATABASE_URL"):
        yield url
        return
    if _listening("127.0.0.1", 5432):
        yield "postgresql://postgres@127.0.0.1:5432/test"
        return
    from hindsight.runtime.embedded import start_postgres

    server = start_postgres(embedded_dir / "postgres")
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_url(embedded_dir: Path) -> Iterator[str]:
    """A Redis URL: $HINDSIGHT_TEST_REDIS_URL, the local server, or an embedded Valkey."""
    if url := os.environ.get("HINDSIGHT_TEST_REDIS_URL"):
        yield url
        return
    if _listening("127.0.0.1", 6379):
        yield "redis://127.0.0.1:6379/15"
        return
    from hindsight.runtime.embedded import start_valkey

    server = start_valkey(embedded_dir / "valkey")
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def unique_name() -> str:
    """A fresh name for a schema, key prefix or bank, so tests never see each other's data."""
    return f"t_{uuid.uuid4().hex[:12]}"
