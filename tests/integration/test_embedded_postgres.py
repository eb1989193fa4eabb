"""Embedded PostgreSQL from its wheel: a free loopback port, a real write, data kept across restarts, and
no process left behind by a stop or by a failed start."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlparse

import psutil
import psycopg
import pytest

from hindsight.runtime.embedded import EmbeddedServer, EmbeddedServerError, start_postgres


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


def test_postgres_starts_on_a_free_loopback_port_and_keeps_its_data_across_a_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "postgres"
    server = start_postgres(data_dir)
    try:
        url = urlparse(server.url)
        assert (url.hostname, url.path) == ("127.0.0.1", "/hindsight")
        assert url.port not in (None, 5432)
        with psycopg.connect(server.url) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("CREATE TABLE notes (body text, embedding vector(2))")
            conn.execute("INSERT INTO notes VALUES ('kept across restarts', '[1, 0]')")
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


def test_postgres_rejects_a_connection_without_its_password(tmp_path: Path) -> None:
    server = start_postgres(tmp_path / "postgres")
    try:
        url = urlparse(server.url)
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(f"postgresql://postgres@127.0.0.1:{url.port}/hindsight", connect_timeout=5)
    finally:
        _stop_and_check_nothing_survives(server)


def test_postgres_that_cannot_bind_its_port_fails_with_its_log_and_leaves_no_process(tmp_path: Path) -> None:
    data_dir = tmp_path / "postgres"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(EmbeddedServerError, match="exited with code") as failure:
            start_postgres(data_dir, port=busy.getsockname()[1])
    assert "could not" in str(failure.value)  # the log tail: "could not bind ... Address already in use"
    assert _server_processes(data_dir.resolve()) == []
