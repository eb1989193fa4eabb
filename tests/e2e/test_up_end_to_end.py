"""`hindsight up` on the embedded default, driven like a user would: the official MCP client over
streamable HTTP and over stdio, then a restart that must keep every memory."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from hindsight.runtime.embedded import free_port

HINDSIGHT = str(Path(sys.executable).parent / "hindsight")
READY_TIMEOUT = 240.0
STOP_TIMEOUT = 60.0

ENGLISH = [
    "I adopted a golden retriever puppy named Biscuit last weekend.",
    "My sister Melanie is moving to Lisbon for a job at a robotics startup.",
    "Please always answer me in British English, not American spelling.",
    "The quarterly report is due on the fourteenth of March.",
    "I have been learning to play the cello for about two years.",
    "Our team switched the build system from Make to Bazel in June.",
    "My favourite restaurant downtown serves Ethiopian food.",
    "I ran my first half marathon in Rotterdam this spring.",
    "The staging server needs the --force flag when you deploy.",
    "I'm allergic to peanuts, so please keep that in mind for recipes.",
]
CHINESE = [
    "我昨天在北京大学见了王老师，讨论了论文的实验部分。",
    "周末我们全家去杭州西湖划船了。",
    "我的女儿下个月要参加钢琴比赛。",
    "公司年会定在十二月二十号，在上海举行。",
    "我最近开始每天早上跑步五公里。",
    "妈妈喜欢喝龙井茶，不喜欢咖啡。",
    "我们计划明年春天去日本看樱花。",
    "我的车上周在修理厂换了新的轮胎。",
    "弟弟在深圳的一家科技公司做软件工程师。",
    "晚饭我做了红烧肉和番茄炒蛋。",
]


@dataclass
class Mesh:
    process: asyncio.subprocess.Process
    mcp_url: str
    output: list[str]


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "QDRANT_URL"}}
    env["HINDSIGHT_HOME"] = str(home)
    env["HINDSIGHT_BANK"] = "e2e"
    return env


async def _start(home: Path, mcp_port: int) -> Mesh:
    process = await asyncio.create_subprocess_exec(
        HINDSIGHT,
        "up",
        "--mcp-port",
        str(mcp_port),
        env=_environment(home),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    output: list[str] = []

    async def until_ready() -> str:
        while line := (await process.stdout.readline()).decode():
            output.append(line)
            if line.startswith("hindsight ready"):
                return "".join(output)
        raise AssertionError("hindsight up exited before it was ready:\n" + "".join(output))

    text = await asyncio.wait_for(until_ready(), READY_TIMEOUT)
    match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", text)
    assert match, text
    asyncio.get_running_loop().create_task(_drain(process, output))
    return Mesh(process, match.group(1), output)


def agent_token(home: Path) -> str:
    """The generated agent token, as a user finds it: ``hindsight status --tokens``."""
    status = subprocess.run(
        [HINDSIGHT, "status", "--tokens", "--json"],
        env=_environment(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode == 0, status.stdout + status.stderr
    return str(json.loads(status.stdout)["tokens"]["agent"])


@contextlib.asynccontextmanager
async def agent_client(mesh: Mesh, home: Path) -> AsyncIterator[Client]:
    """The official MCP client over streamable HTTP, presenting the mesh's agent token."""
    headers = {"authorization": f"Bearer {agent_token(home)}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http,
        Client(streamable_http_client(mesh.mcp_url, http_client=http)) as client,
    ):
        yield client


async def _drain(process: asyncio.subprocess.Process, output: list[str]) -> None:
    assert process.stdout is not None
    while line := await process.stdout.readline():
        output.append(line.decode())


async def _stop(mesh: Mesh) -> int:
    mesh.process.send_signal(signal.SIGINT)
    return await asyncio.wait_for(mesh.process.wait(), STOP_TIMEOUT)


@pytest.fixture
def home() -> Iterator[Path]:
    """A fresh HINDSIGHT_HOME. Not pytest's tmp_path: the embedded PostgreSQL runs as its own system
    user, which must traverse the path, and pytest keeps its base directory private to root."""
    with tempfile.TemporaryDirectory(prefix="hindsight-e2e-") as path:
        yield Path(path) / "home"


async def _recall_texts(client: Client, query: str, top_k: int = 3) -> list[str]:
    result = await client.call_tool("recall", {"query": query, "top_k": top_k})
    assert not result.is_error, result.content
    assert not result.structured_content["partial"], result.structured_content["layers"]
    return [memory["text"] for memory in result.structured_content["memories"]]


async def _check_recall(client: Client) -> None:
    assert (await _recall_texts(client, "Which dog did she get recently?"))[0] == ENGLISH[0]
    assert (await _recall_texts(client, "Rotterdam"))[0] == ENGLISH[7]
    assert (await _recall_texts(client, "北京大学"))[0] == CHINESE[0]
    assert (await _recall_texts(client, "孩子的音乐比赛是什么时候"))[:3].count(CHINESE[2]) == 1


async def test_up_serves_mcp_keeps_memories_across_a_restart_and_stops_cleanly(home: Path) -> None:
    port = free_port()
    mesh = await _start(home, port)
    try:
        printed = [line.split(":", 1)[1].split()[0] for line in mesh.output if "agent token:" in line]
        assert printed == [agent_token(home)]  # printed once, on the first start
        async with httpx2.AsyncClient() as anonymous:
            refused = await anonymous.post(mesh.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        async with agent_client(mesh, home) as client:
            for index, text in enumerate(ENGLISH):
                stored = await client.call_tool(
                    "retain", {"text": text, "speaker": "Caroline", "session_id": "chat-1"}
                )
                assert not stored.is_error, stored.content
                assert stored.structured_content["indexed"], index
            turns = [{"text": text, "speaker": "小王", "id": f"zh-{i}"} for i, text in enumerate(CHINESE)]
            batch = await client.call_tool("retain", {"turns": turns, "session_id": "chat-2"})
            assert batch.structured_content["turn_ids"] == [f"zh-{i}" for i in range(10)]
            await _check_recall(client)
    finally:
        exit_code = await _stop(mesh)
    assert exit_code == 0, "".join(mesh.output)

    mesh = await _start(home, port)
    try:
        assert not [line for line in mesh.output if "token:" in line]  # not printed again
        async with agent_client(mesh, home) as client:
            await _check_recall(client)
        stdio = StdioServerParameters(command=HINDSIGHT, args=["mcp"], env=_environment(home))
        async with Client(stdio) as client:
            assert (await _recall_texts(client, "peanut allergy"))[0] == ENGLISH[9]
    finally:
        exit_code = await _stop(mesh)
    assert exit_code == 0, "".join(mesh.output)
