"""``hindsight export`` from one mesh and ``hindsight import`` into another: everything comes back.

Two real ``hindsight up`` meshes share the test run's PostgreSQL and Redis under different schemas and key
prefixes, each with its own home (and so its own embedded Qdrant). A bank is filled in mesh A through the
gRPC ``MemoryService``: turns in two sessions, one corrected (a supersede link), an episode, the lesson
reflection draws from it (recalled once, so it has a hit). It is exported, imported into mesh B, exported
from B and compared; a second import changes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest
import redis
from psycopg import sql

from hindsight.cli.credentials import read_credentials
from hindsight.cli.mesh import READY_LINE, read_mesh
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from tests.integration import test_mesh
from tests.integration.test_mesh import Mesh, start_up, stop_for_sure

environment = test_mesh.environment  # the fixtures of the mesh tests: a fresh home, the shared stores
shared_stores = test_mesh.shared_stores
BANK = "export-bank"
SETTLE_TIMEOUT = 120.0
ONE_BANK_TOKEN = "one-bank-" + os.urandom(8).hex()
"""An agent's token on mesh B, granting only the exported bank."""
DIFFERING_FIELDS: dict[str, set[str]] = {"episode": {"recorded_at"}}
"""Fields that must differ between the two meshes' exports, by kind (see docs/operations.md)."""


@pytest.fixture
def second_stores(shared_stores: dict[str, str], unique_name: str) -> Iterator[dict[str, str]]:
    """Mesh B's environment: the same servers, other schemas, another key prefix and another home."""
    name = f"{unique_name}_b"
    home = Path(shared_stores["HINDSIGHT_HOME"]).with_name("home-b")
    env = shared_stores | {
        "HINDSIGHT_HOME": str(home),
        "HINDSIGHT_EPISODIC_SCHEMA": f"{name}_episodic",
        "HINDSIGHT_REFLECT_SCHEMA": f"{name}_reflect",
        "HINDSIGHT_WORKING_PREFIX": f"test:{name}",
        "HINDSIGHT_TOKENS": f"{ONE_BANK_TOKEN}={BANK}",
    }
    yield env
    with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
        for schema in (f"{name}_episodic", f"{name}_reflect"):
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    with redis.Redis.from_url(env["REDIS_URL"]) as client:
        keys = list(client.scan_iter(match=f"test:{name}:*"))
        if keys:
            client.delete(*keys)


def hindsight(env: dict[str, str], *arguments: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "hindsight.cli.main", *arguments],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def settle(env: dict[str, str]) -> None:
    """Wait until the mesh's outbox is empty: every turn indexed, every fact drawn."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while time.monotonic() < deadline:
        backlog = json.loads(hindsight(env, "status", "--json").stdout)["outbox_backlog"]
        if backlog == {}:
            return
        time.sleep(0.5)
    pytest.fail(f"the outbox of {env['HINDSIGHT_HOME']} did not empty: {backlog}")


def fill(mesh: Mesh) -> None:
    info = read_mesh(mesh.home)
    credentials = read_credentials(mesh.home)
    assert info is not None and credentials is not None
    metadata = (("authorization", f"Bearer {credentials.admin}"),)
    with grpc.insecure_channel(info.memory_address) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)

        def turn(turn_id: str, session: str, text: str, speaker: str = "Alice") -> common_pb2.Turn:
            return common_pb2.Turn(
                id=turn_id, session_id=session, role=common_pb2.ROLE_USER, speaker=speaker, text=text,
                meta=common_pb2.RecordMeta(tags=["trip"], importance=0.4),
            )  # fmt: skip

        stub.Retain(
            memory_pb2.RetainRequest(
                bank_id=BANK,
                turns=[
                    turn("t1", "s1", "I live in Berlin."),
                    turn("t2", "s1", "My sister Carol works at Siemens."),
                    turn("t3", "s2", "We deploy the app with blue-green releases.", speaker="Bob"),
                ],
            ),
            metadata=metadata,
            timeout=60,
        )
        # The corrected turn states no fact: the semantic layer's handling of a corrected fact is its own
        # business (tests/integration/test_corrections_mcp.py), the supersede link between turns is ours.
        updated = stub.Update(
            memory_pb2.UpdateRequest(
                bank_id=BANK, turn_id="t3", text="We deploy the app with canary releases."
            ),
            metadata=metadata,
            timeout=60,
        )
        assert updated.superseded_id == "t3"
        episode = episodic_pb2.Episode(
            session_id="s2",
            situation="deploying the app on Friday",
            action="ran the migration before the release",
            outcome="the release went out without downtime",
            lesson="Run the migration before the release when deploying.",
            task_type="deploy",
            result=episodic_pb2.OUTCOME_SUCCESS,
        )
        stub.WriteEpisode(memory_pb2.WriteEpisodeRequest(bank_id=BANK, episode=episode), metadata=metadata)
        reflected = stub.Reflect(memory_pb2.ReflectRequest(bank_id=BANK), metadata=metadata, timeout=60)
        assert reflected.lessons
        stub.Recall(
            memory_pb2.RecallRequest(bank_id=BANK, query="how do we deploy the release?", top_k=5),
            metadata=metadata,
            timeout=60,
        )


def export(env: dict[str, str], path: Path, bank: str = BANK) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    hindsight(env, "export", bank, "--out", str(path))
    header, *records = [json.loads(line) for line in path.read_text().splitlines()]
    return header, records


def comparable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            key: value
            for key, value in record.items()
            if key not in DIFFERING_FIELDS.get(record["kind"], set())
        }
        for record in records
    ]


def assert_an_agent_may_not_write_lessons_whole(mesh: Mesh) -> None:
    """``ImportLessons`` sets confidence and statistics as given: an operator's call, not an agent's."""
    info = read_mesh(mesh.home)
    assert info is not None
    with grpc.insecure_channel(info.addresses["reflect"]) as channel:
        request = reflect_pb2.ImportLessonsRequest(
            bank_id=BANK, lessons=[reflect_pb2.Lesson(id="forged", lesson="Trust me.", confidence=1.0)]
        )
        with pytest.raises(grpc.RpcError) as refused:
            reflect_pb2_grpc.ReflectServiceStub(channel).ImportLessons(
                request, metadata=(("authorization", f"Bearer {ONE_BANK_TOKEN}"),), timeout=30
            )
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED  # type: ignore[attr-defined]
    assert "grants every bank" in refused.value.details()  # type: ignore[attr-defined]


def test_a_bank_exported_from_one_mesh_and_imported_into_another_comes_back_whole(
    shared_stores: dict[str, str], second_stores: dict[str, str], tmp_path: Path
) -> None:
    first, second = start_up(shared_stores), start_up(second_stores)
    try:
        first.wait_for_line(READY_LINE)
        second.wait_for_line(READY_LINE)
        fill(first)
        settle(shared_stores)
        header, records = export(shared_stores, tmp_path / "a.jsonl")
        assert header["format"] == "hindsight-export" and header["version"] == 1 and header["bank"] == BANK
        kinds = {
            kind: [r for r in records if r["kind"] == kind] for kind in ("turn", "episode", "fact", "lesson")
        }
        assert header["counts"] == {kind: len(found) for kind, found in kinds.items()}
        new_version = next(r for r in kinds["turn"] if "canary" in r["text"])
        archived = {r["id"]: r["archived"] for r in kinds["turn"]}
        assert archived == {"t1": False, "t2": False, "t3": True, new_version["id"]: False}
        assert new_version["meta"]["source_turn_ids"][0] == "t3" and new_version["session_id"] == "s2"
        assert len(kinds["episode"]) == 1 and kinds["lesson"] and kinds["fact"]
        assert {(f["subject"], f["attribute"], f["value"]) for f in kinds["fact"]} >= {
            ("Alice", "sister", "Carol"),
            ("Carol", "works_at", "Siemens"),
            ("Alice", "lives_in", "Berlin"),
        }
        assert kinds["lesson"][0]["hit_count"] >= 1  # the recall counted

        imported = hindsight(second_stores, "import", str(tmp_path / "a.jsonl"))
        assert f"{len(kinds['turn'])} turns recorded" in imported.stdout
        settle(second_stores)
        header_b, records_b = export(second_stores, tmp_path / "b.jsonl")
        assert header_b["counts"] == header["counts"]
        assert comparable(records_b) == comparable(records)

        assert_an_agent_may_not_write_lessons_whole(second)
        again = hindsight(second_stores, "import", str(tmp_path / "a.jsonl"))
        assert "0 turns recorded" in again.stdout and "0 lessons" in again.stdout
        settle(second_stores)
        _, records_again = export(second_stores, tmp_path / "b2.jsonl")
        assert records_again == records_b

        hindsight(second_stores, "import", str(tmp_path / "a.jsonl"), "--bank", "copy-bank")
        settle(second_stores)
        header_copy, records_copy = export(second_stores, tmp_path / "copy.jsonl", "copy-bank")
        assert header_copy["bank"] == "copy-bank" and header_copy["counts"] == header["counts"]
        assert comparable(records_copy) == comparable(records)
    finally:
        stop_for_sure(first)
        stop_for_sure(second)
