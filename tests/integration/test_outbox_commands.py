"""``hindsight outbox`` and the dead-letter line of ``hindsight status``, run as an operator runs them,
against a real episodic layer that serves the dead-letter list to the admin token only."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from hindsight.cli.status import dead_letter_line, outbox_backlog
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.runtime.embedded import free_ports
from hindsight.runtime.records import RecordMeta, Turn
from hindsight.runtime.testing import serving
from tests.integration.mesh import drop_schemas

ADMIN = "admin-secret"
MESH = "mesh-secret"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def hindsight(address: str, *arguments: str, token: str = ADMIN) -> subprocess.CompletedProcess[str]:
    action, *rest = arguments
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "hindsight.cli.main",
            "outbox",
            action,
            "--address",
            address,
            "--token",
            token,
            *rest,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
async def episodic(database_url: str, unique_name: str) -> AsyncIterator[str]:
    """An episodic layer (its semantic layer never answers) whose bank "b" has three dead letters, and
    "c" one."""
    settings = EpisodicSettings(
        database_url=database_url,
        schema=unique_name,
        semantic_addr=f"127.0.0.1:{free_ports(1)[0]}",
        outbox_backoff_seconds=30.0,
        outbox_max_backoff_seconds=60.0,
    )
    store = await PostgresEpisodicStore.open(settings)
    try:
        for index, bank in enumerate(["b", "b", "b", "c"]):
            turn = Turn(
                id=f"t{index}",
                session_id="s1",
                text=f"turn {index}",
                meta=RecordMeta(time=T0 + timedelta(minutes=index)),
            )
            await store.record_turns(bank, [turn], None)
        now = datetime.now(UTC)
        claimed = await store.claim_due(now, now + timedelta(hours=1), 100)
        await store.dead_letters.bury([entry.id for entry in claimed], "records[0].text: refused")
    finally:
        await store.close()
    try:
        async with serving(lambda: open_episodic(settings), internal_token=MESH, admin_token=ADMIN) as server:
            yield f"127.0.0.1:{server.port}"
    finally:
        await drop_schemas(database_url, unique_name)


async def test_an_operator_lists_retries_and_drops_dead_letters(
    episodic: str, database_url: str, unique_name: str
) -> None:
    listed = await asyncio.to_thread(hindsight, episodic, "dead-letters", "--json")
    assert listed.returncode == 0, listed.stderr
    report = json.loads(listed.stdout)
    assert report["counts"] == {"semantic": 4}
    assert [(item["bank_id"], item["record_id"]) for item in report["dead_letters"]] == [
        ("b", "t0"),
        ("b", "t1"),
        ("b", "t2"),
        ("c", "t3"),
    ]
    assert report["dead_letters"][0]["attempts"] == 1
    text = await asyncio.to_thread(hindsight, episodic, "dead-letters", "--bank", "b")
    assert "records[0].text: refused" in text.stdout and "3 dead letters (semantic 3)" in text.stdout

    ids = [item["id"] for item in report["dead_letters"]]
    retried = await asyncio.to_thread(hindsight, episodic, "retry", "--bank", "b", str(ids[0]))
    assert (retried.returncode, retried.stdout.strip()) == (0, "queued 1 dead letters for delivery again")
    wrong_bank = await asyncio.to_thread(hindsight, episodic, "drop", "--bank", "b", str(ids[3]))
    assert wrong_bank.returncode == 1 and f"not dead letters: {ids[3]}" in wrong_bank.stderr
    dropped = await asyncio.to_thread(hindsight, episodic, "drop", "--bank", "b")
    assert (dropped.returncode, dropped.stdout.strip()) == (0, "dropped 2 dead letters")

    # what status reads (PostgreSQL, every bank) and says
    counts = outbox_backlog(database_url, unique_name, "outbox_dead_letters")
    assert counts == {"semantic": 1}
    assert dead_letter_line(counts).startswith("semantic 1 (refused for good")
    assert dead_letter_line({}) == "none" and dead_letter_line(None).startswith("unknown")
    assert outbox_backlog(database_url, unique_name) == {"semantic": 1}  # the one queued again

    async with grpc.aio.insecure_channel(episodic) as channel:
        stub = episodic_pb2_grpc.EpisodicServiceStub(channel)
        audit = await stub.ListAudit(
            episodic_pb2.ListAuditRequest(bank_id="b"),
            metadata=(("authorization", f"Bearer {ADMIN}"),),
            timeout=10,
        )
        assert sorted(entry.action for entry in audit.entries) == [
            "outbox.drop",
            "outbox.drop",
            "outbox.retry",
        ]
        assert {entry.actor for entry in audit.entries} == {"admin"}


async def test_the_mesh_credential_cannot_touch_the_dead_letters(episodic: str) -> None:
    async with grpc.aio.insecure_channel(episodic) as channel:
        stub = episodic_pb2_grpc.EpisodicServiceStub(channel)
        mesh = (("authorization", f"Bearer {MESH}"),)
        for call in (
            stub.ListDeadLetters(episodic_pb2.ListDeadLettersRequest(), metadata=mesh, timeout=10),
            stub.RetryDeadLetters(episodic_pb2.RetryDeadLettersRequest(), metadata=mesh, timeout=10),
            stub.DropDeadLetters(episodic_pb2.DropDeadLettersRequest(), metadata=mesh, timeout=10),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        # the counts are no secret: the mesh reads them in the outbox status
        status = await stub.OutboxStatus(episodic_pb2.OutboxStatusRequest(), metadata=mesh, timeout=10)
        assert dict(status.dead_letters) == {"semantic": 4}
    listed = await asyncio.to_thread(hindsight, episodic, "dead-letters", token=MESH)
    assert listed.returncode == 1 and "admin" in listed.stderr
