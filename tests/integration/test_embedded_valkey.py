"""Embedded Valkey from its wheel: a free loopback port, a password, sessions kept across restarts through
the append-only file, eviction limited to keys with a TTL, and no process left behind."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlparse

import psutil
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from hindsight.runtime.embedded import EmbeddedServer, EmbeddedServerError, start_valkey


def _valkey_processes_in(data_dir: Path) -> list[psutil.Process]:
    """Valkey servers working in ``data_dir`` (their command line shows only the address)."""
    found = []
    for process in psutil.process_iter(["name", "cwd"]):
        if process.info["name"] == "valkey-server" and process.info["cwd"] == str(data_dir):
            found.append(process)
    return found


def _stop_and_check_nothing_survives(server: EmbeddedServer) -> None:
    process = psutil.Process(server.pid)
    server.stop()
    assert not server.running()
    assert not process.is_running()
    assert not (server.data_dir / "valkey.pid").exists()


def test_valkey_serves_a_free_loopback_port_with_a_password_and_keeps_sessions_across_a_restart(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "valkey"
    server = start_valkey(data_dir)
    try:
        url = urlparse(server.url)
        assert url.hostname == "127.0.0.1"
        assert url.port not in (None, 6379)
        with redis.Redis.from_url(server.url) as client:
            client.set("session:s1", "turns", ex=3600)
            assert client.config_get("appendonly") == {"appendonly": "yes"}
            assert client.config_get("maxmemory-policy") == {"maxmemory-policy": "volatile-lru"}
        anonymous = redis.Redis(host="127.0.0.1", port=url.port or 0, retry=Retry(NoBackoff(), 0))
        with anonymous, pytest.raises(redis.AuthenticationError):
            anonymous.get("session:s1")
    finally:
        _stop_and_check_nothing_survives(server)
    server.stop()  # a second stop is harmless

    again = start_valkey(data_dir)
    try:
        with redis.Redis.from_url(again.url) as client:
            assert client.get("session:s1") == b"turns"
            assert 0 < client.ttl("session:s1") <= 3600
    finally:
        _stop_and_check_nothing_survives(again)


def test_valkey_that_cannot_bind_its_port_fails_with_its_log_and_leaves_no_process(tmp_path: Path) -> None:
    data_dir = tmp_path / "valkey"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(EmbeddedServerError, match="exited with code") as failure:
            start_valkey(data_dir, port=busy.getsockname()[1])
    assert "Address already in use" in str(failure.value)
    assert not (data_dir / "valkey.pid").exists()
    assert _valkey_processes_in(data_dir.resolve()) == []
