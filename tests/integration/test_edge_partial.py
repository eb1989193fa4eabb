"""A layer in its own process hangs, then dies: recall still answers, marked partial, naming the layer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import redis.asyncio as aioredis

from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.mcp_edge.domain import LayerName, RecallQuery
from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.service import open_service
from hindsight.runtime.records import Turn
from hindsight.runtime.testing import channel_to, serving
from tests.integration.mesh import LayerAddresses

RECALL_TIMEOUT = 1.5
START_TIMEOUT = 120.0
MESH_TOKEN = "partial-test-" + uuid.uuid4().hex


@contextlib.asynccontextmanager
async def working_process(
    redis_url: str, tmp_path: Path
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """The working layer as its own process (``hindsight serve working``), at the address it reports."""
    prefix = f"t:{uuid.uuid4().hex[:10]}"
    port_file = tmp_path / "working.port"
    env = dict(
        os.environ,
        REDIS_URL=redis_url,
        HINDSIGHT_WORKING_PREFIX=prefix,
        HINDSIGHT_HOST="127.0.0.1",
        HINDSIGHT_PORT="0",
        HINDSIGHT_PORT_FILE=str(port_file),
        HINDSIGHT_INTERNAL_TOKEN=MESH_TOKEN,  # closed, as every deployed layer is
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hindsight.cli.main",
        "serve",
        "working",
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
    )
    try:
        async with asyncio.timeout(START_TIMEOUT):
            while not (port_file.exists() and port_file.read_text().strip()):
                assert process.returncode is None, "the working layer exited during start-up"
                await asyncio.sleep(0.05)
        yield process, f"127.0.0.1:{port_file.read_text().strip()}"
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGCONT)
                process.kill()
            await process.wait()
        client = aioredis.from_url(redis_url)
        try:
            keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()


def _outcome(result, layer: LayerName):  # type: ignore[no-untyped-def]
    return next(o for o in result.outcomes if o.layer is layer)


async def test_recall_answers_partial_when_a_layer_process_hangs_and_when_it_is_killed(
    mesh_layers: LayerAddresses, redis_url: str, tmp_path: Path
) -> None:
    async with working_process(redis_url, tmp_path) as (process, address):
        # working memory weighs 0 in fusion by default, and is then not asked: this edge asks it anyway
        settings = mesh_layers.edge_settings(
            working_addr=address,
            recall_timeout=RECALL_TIMEOUT,
            internal_token=MESH_TOKEN,
            ask_unweighted=True,
        )
        async with (
            open_engine(settings) as engine,
            open_engine(replace(settings, ask_unweighted=False)) as lean,
        ):
            turn = Turn(id="p1", session_id="s", text="The boiler was serviced by Northwind Heating.")
            stored = await engine.retain("partial-bank", [turn])
            assert stored.turn_ids == ("p1",)
            query = RecallQuery(bank_id="partial-bank", query="who serviced the boiler")
            healthy = await engine.recall(query)
            assert not healthy.partial and _outcome(healthy, LayerName.WORKING).candidates

            process.send_signal(signal.SIGSTOP)  # alive but silent: only the deadline can end the wait
            hung = await asyncio.wait_for(engine.recall(query), timeout=RECALL_TIMEOUT * 10)
            working = _outcome(hung, LayerName.WORKING)
            assert hung.partial and not working.ok and "deadline" in working.error
            assert working.elapsed_ms < RECALL_TIMEOUT * 10 * 1000  # cut by the deadline, not left to hang
            assert [o.layer for o in hung.outcomes if not o.ok] == [LayerName.WORKING]
            assert hung.memories[0].id == "p1"
            unasked = await asyncio.wait_for(lean.recall(query), timeout=RECALL_TIMEOUT * 10)
            assert not unasked.partial and LayerName.WORKING not in {o.layer for o in unasked.outcomes}
            assert unasked.memories[0].id == "p1"  # a hung layer that is not asked costs nothing

            process.send_signal(signal.SIGCONT)
            process.kill()
            await process.wait()
            async with (
                serving(lambda: open_service(settings)) as server,
                channel_to(server) as channel,
            ):
                stub = memory_pb2_grpc.MemoryServiceStub(channel)
                call = stub.Recall(
                    memory_pb2.RecallRequest(bank_id="partial-bank", query="who serviced the boiler"),
                    timeout=RECALL_TIMEOUT * 10,
                )
                reply = await call
                trailing = dict(await call.trailing_metadata())
    assert reply.partial
    failed = [r for r in reply.layer_reports if not r.ok]
    assert [r.layer for r in failed] == [memory_pb2.LAYER_WORKING] and failed[0].error
    assert all(r.elapsed_ms > 0 for r in reply.layer_reports)
    assert reply.memories[0].id == "p1" and "[id=p1 " in reply.context
    timings = dict(item.split("=") for item in trailing["x-hindsight-layers"].split(","))
    assert set(timings) == {"working", "episodic", "semantic", "reflect"}
    assert timings["working"].startswith("failed:") and timings["episodic"].startswith("ok:")
