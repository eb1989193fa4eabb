"""Starts every layer the way docker-compose.yml would: the service's command after the image's entrypoint
(``hindsight``), in its own process, with exactly the variables compose gives that container. Only what
cannot exist here is rewritten: container host names become loopback ports, and the stores become the
test's real PostgreSQL, Redis and a Qdrant local-mode directory. Then the compose health checks must pass
and the published edge must retain and recall, with tokens as a fleet would set them, while a layer behind
the edge refuses the agent's token and serves the internal one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import grpc
import psycopg
import pytest
import redis.asyncio as aioredis
from grpc_health.v1 import health_pb2, health_pb2_grpc
from psycopg import sql

from hindsight.cli.layers import BY_NAME
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.runtime.embedded import free_port
from tests.deploy.compose import (
    ENV_EXAMPLE,
    LAYER_PORT,
    compose,
    container_env,
    layer_services,
    read_env_file,
)

HINDSIGHT = Path(sys.executable).with_name("hindsight")
AGENT_TOKEN, INTERNAL_TOKEN, BANK = "agent-token", "internal-token", "fleet-a"
SERVING = health_pb2.HealthCheckResponse.SERVING
_CONTAINER_HOST = re.compile(rf"[/@](postgres|redis|qdrant)[:/]|^[a-z_]+:{LAYER_PORT}$")


@dataclass
class Container:
    """One layer process started as its compose service."""

    name: str
    port: int
    env: dict[str, str]
    command: list[str]
    healthcheck: list[str]
    process: subprocess.Popen[bytes] | None = None


def _rewrite(env: dict[str, str], ports: dict[str, int], stores: dict[str, str], own: str) -> dict[str, str]:
    """Container addresses to loopback; store URLs to the test's stores; everything else unchanged."""
    out: dict[str, str] = {}
    for key, value in env.items():
        if match := re.fullmatch(rf"(\w+):{LAYER_PORT}", value):
            value = f"127.0.0.1:{ports[match.group(1)]}"
        elif key in ("HINDSIGHT_HOST", "HINDSIGHT_MCP_HOST"):
            value = "127.0.0.1"
        elif key == "HINDSIGHT_PORT":
            value = str(ports[own])
        elif key == "HINDSIGHT_METRICS_PORT":  # one port in every container; on one host, one each
            value = str(ports[f"{own}:metrics"])
        elif key == "HINDSIGHT_MCP_PORT":
            value = str(ports["mcp_http"])
        elif key in stores:
            value = stores[key]
        out[key] = value
    if "QDRANT_URL" in out:
        del out["QDRANT_URL"]
        out["HINDSIGHT_QDRANT_PATH"] = stores["HINDSIGHT_QDRANT_PATH"]
    return out


@contextlib.contextmanager
def compose_services(stores: dict[str, str], isolation: dict[str, str]) -> Iterator[dict[str, Container]]:
    """Start every layer service of docker-compose.yml as a local process; stop them all on exit."""
    variables = read_env_file(ENV_EXAMPLE) | {
        "POSTGRES_PASSWORD": "unused-here",
        # The agents' token goes to the edge alone; the layers know each other by the internal token.
        "HINDSIGHT_TOKENS": f"{AGENT_TOKEN}={BANK}",
        "HINDSIGHT_INTERNAL_TOKEN": INTERNAL_TOKEN,
        "HINDSIGHT_LOG_LEVEL": "WARNING",
    }
    services = layer_services(compose(variables))
    ports = {name: free_port() for name in [*services, *(f"{s}:metrics" for s in services), "mcp_http"]}
    containers: dict[str, Container] = {}
    for name, service in services.items():
        env = _rewrite(container_env(service), ports, stores, name)
        leftover = [f"{k}={v}" for k, v in env.items() if _CONTAINER_HOST.search(v)]
        assert not leftover, f"{name}: a container address was not rewritten: {leftover}"
        test = service["healthcheck"]["test"]
        assert test[:2] == ["CMD", "hindsight"], test
        check = [str(HINDSIGHT), *(arg.replace(f":{LAYER_PORT}", f":{ports[name]}") for arg in test[2:])]
        containers[name] = Container(name, ports[name], env, [str(HINDSIGHT), *service["command"]], check)
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "PYTHONUNBUFFERED": "1"}
    try:
        for container in containers.values():
            container.process = subprocess.Popen(
                container.command, env=base | container.env | isolation, stderr=subprocess.PIPE
            )
        yield containers
    finally:
        for container in containers.values():
            if container.process and container.process.poll() is None:
                container.process.send_signal(signal.SIGTERM)
        for container in containers.values():
            if container.process:
                try:
                    container.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    container.process.kill()
                    container.process.wait()


async def _until_serving(container: Container) -> None:
    """Watch the compose health check's service until SERVING (a stream: no polling)."""
    service = container.healthcheck[container.healthcheck.index("--service") + 1]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{container.port}") as channel:
        await channel.channel_ready()
        stub = health_pb2_grpc.HealthStub(channel)
        async for reply in stub.Watch(health_pb2.HealthCheckRequest(service=service)):
            if reply.status == SERVING:
                return


async def _all_serving(containers: dict[str, Container], bound: float) -> None:
    try:
        async with asyncio.timeout(bound):
            await asyncio.gather(*(_until_serving(c) for c in containers.values()))
    except TimeoutError:
        report = []
        for c in containers.values():
            assert c.process is not None
            if c.process.poll() is not None and c.process.stderr is not None:
                report.append(f"{c.name} exited {c.process.returncode}: {c.process.stderr.read()[-2000:]!r}")
        pytest.fail(f"not every layer reported SERVING in {bound}s: {report}")


@contextlib.asynccontextmanager
async def _cleanup(database_url: str, redis_url: str, isolation: dict[str, str]) -> AsyncIterator[None]:
    try:
        yield
    finally:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            for key in ("HINDSIGHT_EPISODIC_SCHEMA", "HINDSIGHT_REFLECT_SCHEMA"):
                await conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(isolation[key]))
                )
        client = aioredis.from_url(redis_url)
        try:
            keys = [key async for key in client.scan_iter(match=f"{isolation['HINDSIGHT_WORKING_PREFIX']}*")]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()


async def test_every_compose_service_starts_from_its_compose_environment_and_answers_a_recall(
    database_url: str, redis_url: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:10]
    stores = {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "HINDSIGHT_QDRANT_PATH": str(tmp_path / "qdrant"),
    }
    # Separate schemas and key prefix only so that parallel test runs never share rows.
    isolation = {
        "HINDSIGHT_EPISODIC_SCHEMA": f"t_cep_{suffix}",
        "HINDSIGHT_REFLECT_SCHEMA": f"t_crf_{suffix}",
        "HINDSIGHT_WORKING_PREFIX": f"t:compose:{suffix}",
    }
    assert urlsplit(database_url).scheme.startswith("postgres")
    async with _cleanup(database_url, redis_url, isolation):
        with compose_services(stores, isolation) as containers:
            assert set(containers) == set(BY_NAME)
            await _all_serving(containers, bound=120)

            checks = await asyncio.gather(
                *(
                    asyncio.to_thread(
                        subprocess.run, c.healthcheck, env=c.env, capture_output=True, timeout=30
                    )
                    for c in containers.values()
                )
            )
            failed = {
                c.name: done.stderr
                for c, done in zip(containers.values(), checks, strict=True)
                if done.returncode
            }
            assert not failed, failed

            edge = containers["mcp_edge"]
            agent = (("authorization", f"Bearer {AGENT_TOKEN}"),)
            async with grpc.aio.insecure_channel(f"127.0.0.1:{edge.port}") as channel:
                memory = memory_pb2_grpc.MemoryServiceStub(channel)
                turn = common_pb2.Turn(
                    session_id="s1", role=common_pb2.ROLE_USER, text="The deploy key rotates every Tuesday."
                )
                await memory.Retain(
                    memory_pb2.RetainRequest(bank_id=BANK, turns=[turn]), metadata=agent, timeout=30
                )
                reply = await memory.Recall(
                    memory_pb2.RecallRequest(bank_id=BANK, query="when does the deploy key rotate"),
                    metadata=agent,
                    timeout=30,
                )
                assert any("Tuesday" in m.text for m in reply.memories), reply
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await memory.Recall(
                        memory_pb2.RecallRequest(bank_id="another-team", query="deploy key"),
                        metadata=agent,
                        timeout=10,
                    )
                assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED

            # A layer behind the edge knows only the internal token: the agent's token, or none, is refused.
            window = working_pb2.GetWindowRequest(bank_id=BANK, session_id="s1")
            async with grpc.aio.insecure_channel(f"127.0.0.1:{containers['working'].port}") as channel:
                working = working_pb2_grpc.WorkingMemoryServiceStub(channel)
                for metadata in (agent, ()):
                    with pytest.raises(grpc.aio.AioRpcError) as direct:
                        await working.GetWindow(window, metadata=metadata, timeout=10)
                    assert direct.value.code() == grpc.StatusCode.UNAUTHENTICATED, metadata
                internal = (("authorization", f"Bearer {INTERNAL_TOKEN}"),)
                served = await working.GetWindow(window, metadata=internal, timeout=10)
                assert any("Tuesday" in turn.text for turn in served.turns), served
