"""Embedded PostgreSQL from its wheel: a free loopback port, a password, a real write, data kept across
restarts, and no process left behind by a stop or by a failed start."""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import psutil
import psycopg
import pytest

from hindsight.runtime.embedded import EmbeddedServer, EmbeddedServerError, start_postgres


@pytest.fixture(scope="module")
def data_dir() -> Iterator[Path]:
    """One cluster directory for the module: initdb runs once (the tests pass on a fresh one as well).

    Not under pytest's tmp_path: as root the server runs as another user who must traverse the path, and
    pytest resets its base directory to mode 0700 whenever a session starts.
    """
    with tempfile.TemporaryDirectory(prefix="hindsight-test-") as path:
        yield Path(path) / "postgres"


def _server_processes(data_dir: Path) -> list[psutil.Process]:
    """PostgreSQL servers whose command line names ``data_dir``."""
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        if process.info["name"] == "postgres" and str(data_dir) in " ".join(process.info["cmdline"] or ()):
            found.append(process)
    return found


def _stop_and_check_nothing_survives(server: EmbeddedServer) -> None:
    workers = psutil.Process(server.pid).children(recursive=True)
    server.stop()
    assert not server.running()
    assert not [worker for worker in workers if worker.is_running()]
    assert _server_processes(server.data_dir) == []


def test_postgres_serves_a_free_loopback_port_with_a_password_and_keeps_data_across_a_restart(
    data_dir: Path,
) -> None:
    server = start_postgres(data_dir)
    try:
        url = urlparse(server.url)
        assert (url.hostname, url.path) == ("127.0.0.1", "/hindsight")
        assert url.port not in (None, 5432)
        with psycopg.connect(server.url) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("DROP TABLE IF EXISTS notes")
            conn.execute("CREATE TABLE notes (body text, embedding vector(2))")
            conn.execute("INSERT INTO notes VALUES ('kept across restarts', '[1, 0]')")
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(f"postgresql://postgres@127.0.0.1:{url.port}/hindsight", connect_timeout=5)
    finally:
        _stop_and_check_nothing_survives(server)
    server.stop()  # a second stop is harmless

    again = start_postgres(data_dir)
    try:
        with psycopg.connect(again.url) as conn:
            rows = conn.execute("SELECT body FROM notes ORDER BY embedding <-> '[1, 0]'").fetchall()
        assert rows == [("kept across restarts",)]
    finally:
        _stop_and_check_nothing_survives(again)


def test_postgres_that_cannot_bind_its_port_fails_with_its_log_and_leaves_no_process(data_dir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(EmbeddedServerError, match="exited with code") as failure:
            start_postgres(data_dir, port=busy.getsockname()[1])
    assert "could not" in str(failure.value)  # the log tail: "could not bind ... Address already in use"
    assert _server_processes(data_dir.resolve()) == []
