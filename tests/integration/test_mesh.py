"""``hindsight up`` end to end: six real service processes on loopback, ready, healthy, stopped cleanly.

Each test runs the command as a user would, in a temporary HINDSIGHT_HOME, and waits (bounded) for its
ready line. Most use the test run's PostgreSQL and Redis to save time; one embeds every store.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx2
import psutil
import psycopg
import pytest
import redis
from grpc_health.v1 import health_pb2, health_pb2_grpc
from psycopg import sql

from hindsight.cli.layers import LAYERS
from hindsight.cli.mesh import READY_LINE, MeshInfo, ensure_mesh, read_mesh
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from tests.integration.rpcs import call_raw, every_rpc

START_TIMEOUT = 150.0
STOP_TIMEOUT = 60.0
STORE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "QDRANT_URL", "HINDSIGHT_QDRANT_PATH", "HINDSIGHT_HOME")


@dataclass
class Mesh:
    """A ``hindsight up`` process and the lines it printed."""

    process: subprocess.Popen[str]
    home: Path
    lines: list[str] = field(default_factory=list)
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def start_reading(self) -> None:
        assert self.process.stdout is not None
        stdout = self.process.stdout

        def pump() -> None:
            for line in stdout:
                self._queue.put(line.rstrip("\n"))
            self._queue.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def wait_for_line(self, prefix: str, timeout: float = START_TIMEOUT) -> str:
        """The first printed line starting with ``prefix``; fails on timeout or when the output ends."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                break
            if line is None:
                pytest.fail(
                    f"hindsight up ended before {prefix!r}:\n" + "\n".join(self.lines) + self.errors()
                )
            self.lines.append(line)
            if line.startswith(prefix):
                return line
        pytest.fail(f"no {prefix!r} within {timeout}s:\n" + "\n".join(self.lines) + self.errors())

    def errors(self) -> str:
        return "\n--- stderr:\n" + (self.home / "up.stderr").read_text(errors="replace")[-4000:]

    def family(self) -> list[psutil.Process]:
        """Every process the mesh started: services, stores and their workers."""
        return psutil.Process(self.process.pid).children(recursive=True)


@pytest.fixture
def environment() -> Iterator[dict[str, str]]:
    """The caller's environment without store settings (each test says which stores it gives) and a
    fresh HINDSIGHT_HOME. Not under pytest's tmp_path: as root the embedded PostgreSQL runs as another
    user who must traverse the path, and pytest resets its base directory to mode 0700 at each session."""
    with tempfile.TemporaryDirectory(prefix="hindsight-test-") as path:
        env = {key: value for key, value in os.environ.items() if key not in STORE_VARIABLES}
        env["HINDSIGHT_HOME"] = str(Path(path) / "home")
        yield env


@pytest.fixture
def shared_stores(
    environment: dict[str, str], database_url: str, redis_url: str, unique_name: str
) -> Iterator[dict[str, str]]:
    """The test run's PostgreSQL and Redis, under schema names and a key prefix of this test's own."""
    environment |= {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "HINDSIGHT_EPISODIC_SCHEMA": f"{unique_name}_episodic",
        "HINDSIGHT_REFLECT_SCHEMA": f"{unique_name}_reflect",
        "HINDSIGHT_WORKING_PREFIX": f"test:{unique_name}",
    }
    yield environment
    with psycopg.connect(database_url, autocommit=True) as conn:
        for schema in (f"{unique_name}_episodic", f"{unique_name}_reflect"):
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    with redis.Redis.from_url(redis_url) as client:
        keys = list(client.scan_iter(match=f"test:{unique_name}:*"))
        if keys:
            client.delete(*keys)


def start_up(env: dict[str, str], *extra: str) -> Mesh:
    home = Path(env["HINDSIGHT_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "hindsight.cli.main", "up", "--mcp-port", "0", *extra]
    with (home / "up.stderr").open("w") as stderr:
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
    mesh = Mesh(process, home)
    mesh.start_reading()
    return mesh


def health(address: str, service: str) -> int:
    with grpc.insecure_channel(address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=10
        )
    return reply.status


def assert_every_service_serving(info: MeshInfo) -> None:
    statuses = {layer.name: health(info.addresses[layer.name], layer.service) for layer in LAYERS}
    assert statuses == {layer.name: health_pb2.HealthCheckResponse.SERVING for layer in LAYERS}


def interrupt_and_check_clean_exit(mesh: Mesh, family: list[psutil.Process]) -> None:
    mesh.process.send_signal(signal.SIGINT)
    assert mesh.process.wait(timeout=STOP_TIMEOUT) == 0, mesh.errors()
    survivors = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert survivors == []
    assert read_mesh(mesh.home) is None
    assert not (mesh.home / "mesh.json").exists()


def stop_for_sure(mesh: Mesh) -> None:
    """Teardown when a test failed half-way: never leave a mesh running."""
    if mesh.process.poll() is None:
        mesh.process.send_signal(signal.SIGINT)
        try:
            mesh.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            for process in [*mesh.family(), psutil.Process(mesh.process.pid)]:
                process.kill()
            mesh.process.wait()


def test_up_starts_six_serving_services_refuses_a_second_mesh_and_stops_cleanly_on_ctrl_c(
    shared_stores: dict[str, str],
) -> None:
    mesh = start_up(shared_stores)
    try:
        ready = mesh.wait_for_line(READY_LINE)
        assert "s" in ready.removeprefix(READY_LINE)  # the start-up time in seconds
        info = read_mesh(mesh.home)
        assert info is not None
        assert info.pid == mesh.process.pid
        assert f"MCP endpoint:       {info.mcp_url}" in mesh.lines
        assert f"gRPC MemoryService: {info.memory_address}" in mesh.lines
        assert info.mcp_url.startswith("http://127.0.0.1:") and info.mcp_url.endswith("/mcp")
        assert info.database_url == shared_stores["DATABASE_URL"]
        assert info.qdrant == str(mesh.home / "qdrant")
        assert_every_service_serving(info)
        assert {path.name for path in (mesh.home / "logs").iterdir()} >= {f"{x.name}.log" for x in LAYERS}

        healthcheck = [sys.executable, "-m", "hindsight.cli.main", "healthcheck", "--address"]
        serving = subprocess.run(
            [*healthcheck, info.addresses["working"], "--service", "working"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert serving.returncode == 0, serving.stderr
        assert "SERVING" in serving.stdout

        second = subprocess.run(
            [sys.executable, "-m", "hindsight.cli.main", "up", "--mcp-port", "0"],
            env=shared_stores,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 1
        assert "already running" in second.stderr
        assert read_mesh(mesh.home) == info

        interrupt_and_check_clean_exit(mesh, mesh.family())
    finally:
        stop_for_sure(mesh)

    unreachable = subprocess.run(
        [*healthcheck, info.addresses["working"], "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unreachable.returncode == 1


def test_up_with_no_store_configured_embeds_postgres_valkey_and_qdrant_and_stops_them(
    environment: dict[str, str],
) -> None:
    mesh = start_up(environment)
    try:
        mesh.wait_for_line(READY_LINE)
        info = read_mesh(mesh.home)
        assert info is not None
        assert info.database_url.startswith("postgresql://") and info.database_url.endswith("/hindsight")
        assert info.redis_url.startswith("redis://")
        assert "PostgreSQL embedded, Valkey embedded, Qdrant Edge" in "\n".join(mesh.lines)
        assert_every_service_serving(info)
        family = mesh.family()
        assert {p.name() for p in family} >= {"postgres", "valkey-server"}
        interrupt_and_check_clean_exit(mesh, family)
    finally:
        stop_for_sure(mesh)
    assert (mesh.home / "postgres" / "data" / "PG_VERSION").exists()
    assert (mesh.home / "valkey" / "appendonly").is_dir()


def test_up_reports_the_log_of_a_service_that_dies_during_start_up_and_exits_1(
    shared_stores: dict[str, str],
) -> None:
    shared_stores["HINDSIGHT_GRACE_SECONDS"] = "soon"  # every service rejects it when it loads its settings
    mesh = start_up(shared_stores)
    try:
        assert mesh.process.wait(timeout=START_TIMEOUT) == 1
    finally:
        stop_for_sure(mesh)
    errors = mesh.errors()
    assert "exited with code" in errors and "during start-up" in errors
    assert "HINDSIGHT_GRACE_SECONDS" in errors  # the service's own log tail
    assert not (mesh.home / "mesh.json").exists()


def background_mesh(
    stores: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, MeshInfo, psutil.Process]:
    """A mesh started in the background as ``hindsight mcp`` starts one when none runs, from this process's
    environment pointed at ``stores`` (no Qdrant server: the mesh keeps its own); its home, its description
    and its supervisor."""
    for key, value in stores.items():
        monkeypatch.setenv(key, value)
    for key in ("QDRANT_URL", "HINDSIGHT_QDRANT_PATH"):
        monkeypatch.delenv(key, raising=False)
    home = Path(stores["HINDSIGHT_HOME"])
    info = ensure_mesh(home, timeout=START_TIMEOUT)
    return home, info, psutil.Process(info.pid)


def test_ensure_mesh_starts_one_background_mesh_reuses_it_and_a_dead_service_is_restarted(
    shared_stores: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, info, supervisor = background_mesh(shared_stores, monkeypatch)
    family = supervisor.children(recursive=True)
    try:
        assert ensure_mesh(home, timeout=START_TIMEOUT) == info
        assert_every_service_serving(info)
        assert READY_LINE in (home / "logs" / "up.log").read_text()

        psutil.Process(info.children["working"]).kill()  # the supervisor starts it again
        deadline = time.monotonic() + START_TIMEOUT
        while (now := read_mesh(home)) is not None and not now.restarts.get("working"):
            assert time.monotonic() < deadline, "working was not restarted"
            time.sleep(0.2)
        assert now is not None and now.restarts["working"] == 1
        assert now.children["working"] != info.children["working"]
        family = supervisor.children(recursive=True)
    finally:
        if supervisor.is_running():
            supervisor.send_signal(signal.SIGINT)
            psutil.wait_procs([supervisor], timeout=STOP_TIMEOUT)
    assert "working exited with code -9; restarting it" in (home / "logs" / "up.log").read_text()
    assert [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
    assert read_mesh(home) is None


async def _probe_closed_mesh(info: MeshInfo, client_token: str) -> None:
    """Every RPC on every port refuses a caller without a credential; a client token reaches its bank only;
    the mesh's own calls between layers still work (a retain is indexed, then recalled by meaning)."""
    answered = []
    for rpc in every_rpc():
        async with grpc.aio.insecure_channel(info.addresses[rpc.layer]) as channel:
            for token in (None, "forged-token"):
                code, replies = await call_raw(channel, rpc, rpc.request(bank_id="bank-mine"), token)
                if code != grpc.StatusCode.UNAUTHENTICATED or replies:
                    answered.append((rpc.path, token, code.name))
            if rpc.names_a_bank and not all(rpc.streaming):  # a stream checks each message's bank in-band
                code, _ = await call_raw(channel, rpc, rpc.request(bank_id="bank-other"), client_token)
                if code != grpc.StatusCode.PERMISSION_DENIED:
                    answered.append((rpc.path, "other bank", code.name))
    assert answered == [], answered

    async with grpc.aio.insecure_channel(info.memory_address) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        metadata = (("authorization", f"Bearer {client_token}"),)
        turn = common_pb2.Turn(id="closed-1", session_id="s", text="The lighthouse keeper feeds three cats.")
        stored = await stub.Retain(
            memory_pb2.RetainRequest(bank_id="bank-mine", turns=[turn]), metadata=metadata, timeout=60
        )
        assert stored.indexed  # the edge reached episodic and semantic with the mesh credential
        recalled = await stub.Recall(
            memory_pb2.RecallRequest(bank_id="bank-mine", query="who feeds the cats?", top_k=3),
            metadata=metadata,
            timeout=60,
        )
        assert not recalled.partial
        assert any("lighthouse" in memory.text for memory in recalled.memories)


def test_a_fresh_up_refuses_every_rpc_without_a_token_and_tokens_from_the_environment_never_break_the_mesh(
    shared_stores: dict[str, str],
) -> None:
    mine = "tok-" + os.urandom(8).hex()
    shared_stores |= {"HINDSIGHT_TOKENS": f"{mine}=bank-mine", "HINDSIGHT_AUTH": "off"}  # off: overridden
    mesh = start_up(shared_stores)
    try:
        mesh.wait_for_line(READY_LINE)
        info = read_mesh(mesh.home)
        assert info is not None
        assert any(line.strip().startswith("admin token:") for line in mesh.lines)
        assert not any("agent token:" in line for line in mesh.lines)  # HINDSIGHT_TOKENS replaces it
        assert oct((mesh.home / "credentials.json").stat().st_mode & 0o777) == "0o600"
        assert oct((mesh.home / "tokens").stat().st_mode & 0o777) == "0o600"
        asyncio.run(_probe_closed_mesh(info, mine))

        anonymous = httpx2.post(info.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30)
        assert anonymous.status_code == 401
        assert anonymous.headers["www-authenticate"].lower().startswith("bearer")

        status = subprocess.run(
            [sys.executable, "-m", "hindsight.cli.main", "status", "--tokens", "--json"],
            env=shared_stores,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert status.returncode == 0, status.stderr
        shown = json.loads(status.stdout)
        assert shown["running"] and set(shown["tokens"]) == {"admin"}
        assert shown["services"]["semantic"]["alive"]
        interrupt_and_check_clean_exit(mesh, mesh.family())
    finally:
        stop_for_sure(mesh)
