"""A fleet of agents on a mesh closed as deployed ones are: one recall over an agent's own and its team's
banks (gRPC and the MCP SDK client over streamable HTTP), and who wrote each memory.

Agent alpha may use its own bank, the team bank and a library bank; agent beta its own and the team bank.
Each writes through its own token, so the edge records the token's name as the writing agent.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest

from hindsight.cli.export.dump import export_bank
from hindsight.cli.export.fileformat import read_export
from hindsight.cli.export.load import load
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.contracts.working.v1 import working_pb2
from hindsight.mcp_edge.console.reads import timeline
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.runtime.auth import Grants
from hindsight.runtime.banks import MAX_BANKS
from hindsight.runtime.records import to_timestamp
from tests.integration.mcp_http import call_tool, mcp_client
from tests.integration.mesh import CallRecorder, LayerAddresses, MeshCredentials, layer_mesh, serving_edge

TIMEOUT = 30
ALPHA, BETA, OUTSIDER = "fleet-alpha-token", "fleet-beta-token", "fleet-outsider-token"
OWN, TEAM, LIBRARY, BETA_OWN = "fleet-alpha", "fleet-team", "fleet-library", "fleet-beta"
CREDENTIALS = MeshCredentials(
    internal="fleet-mesh-secret",
    admin="fleet-admin-secret",
    tokens=f"{ALPHA}={OWN},{TEAM},{LIBRARY};{BETA}={BETA_OWN},{TEAM};{OUTSIDER}=fleet-elsewhere",
)
GRANTS = Grants.parse(f"{CREDENTIALS.tokens};admin:{CREDENTIALS.admin}=*")
ALPHA_NAME = GRANTS.authenticate(ALPHA).name
BETA_NAME = GRANTS.authenticate(BETA).name
NOW = datetime(2025, 6, 2, 12, tzinfo=UTC)
SEARCHES = {
    "/hindsight.working.v1.WorkingMemoryService/SearchRecent": working_pb2.SearchRecentRequest,
    "/hindsight.episodic.v1.EpisodicService/SearchTurns": episodic_pb2.SearchTurnsRequest,
    "/hindsight.semantic.v1.SemanticService/Search": semantic_pb2.SearchRequest,
    "/hindsight.reflect.v1.ReflectService/SearchLessons": reflect_pb2.SearchLessonsRequest,
}


@dataclass(frozen=True)
class Fleet:
    engine: MemoryEngine
    stub: memory_pb2_grpc.MemoryServiceStub
    mcp_url: str
    recorder: CallRecorder


def _as(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def _turn(turn_id: str, text: str, days_ago: float = 1, agent: str = "") -> common_pb2.Turn:
    return common_pb2.Turn(
        id=turn_id,
        session_id="fleet",
        role=common_pb2.ROLE_USER,
        text=text,
        meta=common_pb2.RecordMeta(
            time=to_timestamp(NOW - timedelta(days=days_ago)), source=common_pb2.SOURCE_USER, agent=agent
        ),
    )


WRITES: dict[tuple[str, str], list[common_pb2.Turn]] = {
    (ALPHA, OWN): [
        _turn("alpha-1", "The staging deploy of the billing service needs the canary flag first."),
        _turn("same-id", "Alpha's own note: the billing deploy dashboard is on the second monitor."),
    ],
    (ALPHA, TEAM): [_turn("team-a1", "Team practice: every billing deploy is announced in the ops channel.")],
    (BETA, TEAM): [
        _turn("team-b1", "Beta found that the billing deploy fails when the cache is cold."),
        _turn("same-id", "Team note: billing deploy rollbacks need the on-call lead's approval."),
    ],
    (ALPHA, LIBRARY): [_turn("lib-1", "Runbook: a billing deploy starts with a database snapshot.")],
    (BETA, BETA_OWN): [_turn("beta-1", "Beta's private note about the billing deploy: never on Fridays.")],
}
BANK_OF = {turn.text: bank for (_, bank), turns in WRITES.items() for turn in turns}
QUERY = "How do we do a billing deploy?"


@pytest.fixture(scope="module")
async def fleet(
    database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Fleet]:
    recorder = CallRecorder()
    qdrant = tmp_path_factory.mktemp("qdrant")
    async with (
        layer_mesh(
            database_url, redis_url, qdrant, interceptors=[recorder], credentials=CREDENTIALS
        ) as layers,
        _edge(layers, recorder) as served,
    ):
        for (token, bank), turns in WRITES.items():
            reply = await served.stub.Retain(
                memory_pb2.RetainRequest(bank_id=bank, turns=turns), metadata=_as(token), timeout=TIMEOUT
            )
            assert reply.indexed
        yield served


@contextlib.asynccontextmanager
async def _edge(layers: LayerAddresses, recorder: CallRecorder) -> AsyncIterator[Fleet]:
    settings = layers.edge_settings(
        internal_token=CREDENTIALS.internal,
        admin_token=CREDENTIALS.admin,
        llm_rewrite=False,
        record_access=False,
        ask_unweighted=True,  # every layer, working memory too (weighing 0, a default edge skips it)
    )
    async with open_engine(settings) as engine, serving_edge(engine, CREDENTIALS, GRANTS, OWN) as served:
        yield Fleet(engine, served.stub, served.mcp_url, recorder)


async def _recall(fleet: Fleet, token: str = ALPHA, **fields: Any) -> memory_pb2.RecallResponse:
    request = memory_pb2.RecallRequest(query=QUERY, top_k=20, reference_time=to_timestamp(NOW), **fields)
    reply: memory_pb2.RecallResponse = await fleet.stub.Recall(request, metadata=_as(token), timeout=TIMEOUT)
    return reply


async def _refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call
    return refused.value


# ----- one recall over several banks ------------------------------------------------------------------


async def test_a_recall_over_three_banks_through_grpc_finds_each_banks_memories_and_names_their_bank(
    fleet: Fleet,
) -> None:
    start = len(fleet.recorder.calls)
    reply = await _recall(fleet, bank_ids=[OWN, TEAM, LIBRARY])
    assert not reply.partial, reply.layer_reports
    found = {(m.bank_id, m.id) for m in reply.memories}
    assert {m.bank_id for m in reply.memories} == {OWN, TEAM, LIBRARY}
    for memory in reply.memories:
        assert BANK_OF[memory.text] == memory.bank_id, memory
    assert {(OWN, "same-id"), (TEAM, "same-id")} <= found  # one id in two banks: two memories, each its own
    assert not any(m.bank_id == BETA_OWN for m in reply.memories)
    assert f"bank={TEAM}" in reply.context and f"bank={LIBRARY}" in reply.context
    # each layer was asked once, for all three banks
    for method, kind in SEARCHES.items():
        asked = [
            r
            for r in fleet.recorder.since(start, method, kind)  # type: ignore[type-var]
            if not getattr(r, "quarantined_only", False)
        ]
        assert [list(r.bank_ids) for r in asked] == [[OWN, TEAM, LIBRARY]], method


async def test_a_recall_over_three_banks_through_the_mcp_client_labels_each_memory_and_groups_the_context(
    fleet: Fleet,
) -> None:
    async with mcp_client(fleet.mcp_url, ALPHA) as client:
        result = await call_tool(
            client,
            "recall",
            {"query": QUERY, "banks": [OWN, TEAM, LIBRARY], "top_k": 20, "group_by_bank": True},
        )
    memories = result["memories"]
    assert {m["bank_id"] for m in memories} == {OWN, TEAM, LIBRARY}
    assert all(BANK_OF[m["text"]] == m["bank_id"] for m in memories)
    context = result["context"]
    headings = [context.index(f"# Bank {bank}") for bank in (OWN, TEAM, LIBRARY)]
    assert headings == sorted(headings)  # one part per bank, in the order asked
    team_part = context[headings[1] : headings[2]]
    assert "ops channel" in team_part and "database snapshot" not in team_part


async def test_a_recall_naming_one_bank_the_caller_lacks_is_refused_whole_on_both_fronts(
    fleet: Fleet,
) -> None:
    error = await _refused(_recall(fleet, bank_ids=[OWN, TEAM, BETA_OWN]))
    assert error.code() is grpc.StatusCode.PERMISSION_DENIED
    assert BETA_OWN in (error.details() or "")
    async with mcp_client(fleet.mcp_url, ALPHA) as client:
        refused = await client.call_tool("recall", {"query": QUERY, "banks": [OWN, BETA_OWN]})
    assert refused.is_error
    text = json.dumps([c.model_dump() for c in refused.content])
    assert "PERMISSION_DENIED" in text and BETA_OWN in text
    assert not refused.structured_content or not refused.structured_content.get("memories")


async def test_bank_and_bank_ids_together_or_too_many_banks_are_invalid_arguments_naming_the_field(
    fleet: Fleet,
) -> None:
    both = await _refused(_recall(fleet, bank_id=OWN, bank_ids=[TEAM]))
    assert both.code() is grpc.StatusCode.INVALID_ARGUMENT and "bank_ids" in (both.details() or "")
    many = [f"fleet-{i}" for i in range(MAX_BANKS + 1)]
    too_many = await _refused(_recall(fleet, token=CREDENTIALS.admin, bank_ids=many))
    assert too_many.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "bank_ids" in (too_many.details() or "") and str(MAX_BANKS) in (too_many.details() or "")
    stray = await _refused(_recall(fleet, bank_ids=[OWN, TEAM], bank_weights={LIBRARY: 2.0}))
    assert stray.code() is grpc.StatusCode.INVALID_ARGUMENT and LIBRARY in (stray.details() or "")
    async with mcp_client(fleet.mcp_url, ALPHA) as client:
        refused = await client.call_tool("recall", {"query": QUERY, "bank": OWN, "banks": [TEAM]})
    assert refused.is_error and "banks" in json.dumps([c.model_dump() for c in refused.content])


async def test_bank_weights_change_the_order_of_the_fused_memories(fleet: Fleet) -> None:
    def first_bank(reply: memory_pb2.RecallResponse) -> str:
        return next(m.bank_id for m in reply.memories if m.kind != "lesson")

    for favoured, other in ((OWN, TEAM), (TEAM, OWN)):
        reply = await _recall(fleet, bank_ids=[OWN, TEAM], bank_weights={favoured: 10.0, other: 0.1})
        assert first_bank(reply) == favoured
        banks = [m.bank_id for m in reply.memories]
        assert banks.index(favoured) < banks.index(other)
        assert max(i for i, b in enumerate(banks) if b == favoured) < min(
            i for i, b in enumerate(banks) if b == other
        )


async def test_a_recall_of_one_bank_reads_only_that_bank_and_names_it(fleet: Fleet) -> None:
    start = len(fleet.recorder.calls)
    reply = await _recall(fleet, bank_id=TEAM)
    assert reply.memories and {m.bank_id for m in reply.memories} == {TEAM}
    assert "bank=" not in reply.context  # a one-bank context is written as it always was
    same = next(m for m in reply.memories if m.id == "same-id")
    assert same.text.startswith("Team note")
    for method, kind in SEARCHES.items():
        asked = fleet.recorder.since(start, method, kind)  # type: ignore[type-var]
        assert asked and all(r.bank_id == TEAM and not r.bank_ids for r in asked), method


async def test_multi_bank_recall_latency_stays_near_one_bank(fleet: Fleet) -> None:
    """Median of 50 sequential recalls each: three banks against one (figures printed for the report)."""

    async def median_ms(**fields: Any) -> float:
        times = []
        for _ in range(50):
            started = time.perf_counter()
            await _recall(fleet, **fields)
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)

    single = await median_ms(bank_id=OWN)
    multi = await median_ms(bank_ids=[OWN, TEAM, LIBRARY])
    print(f"recall p50: one bank {single:.1f} ms, three banks {multi:.1f} ms ({multi / single:.2f}x)")
    assert multi < single * 3  # generous on a shared machine: the layers search the banks at once


# ----- who wrote it ---------------------------------------------------------------------------------------


async def test_each_turn_records_the_token_that_wrote_it_and_recall_and_listing_filter_by_agent(
    fleet: Fleet,
) -> None:
    listed = await fleet.stub.ListRecent(
        memory_pb2.ListRecentRequest(bank_id=TEAM, limit=50), metadata=_as(BETA), timeout=TIMEOUT
    )
    assert {t.id: t.meta.agent for t in listed.turns} == {
        "team-a1": ALPHA_NAME,
        "team-b1": BETA_NAME,
        "same-id": BETA_NAME,
    }
    betas = await fleet.stub.ListRecent(
        memory_pb2.ListRecentRequest(bank_id=TEAM, limit=50, agent=BETA_NAME),
        metadata=_as(ALPHA),
        timeout=TIMEOUT,
    )
    assert {t.id for t in betas.turns} == {"team-b1", "same-id"}
    recalled = await _recall(fleet, bank_id=TEAM, agent=ALPHA_NAME)
    assert [m.id for m in recalled.memories] == ["team-a1"]
    assert recalled.memories[0].meta.agent == ALPHA_NAME
    everyone = await _recall(fleet, bank_ids=[OWN, TEAM], agent=BETA_NAME)
    assert everyone.memories and {m.meta.agent for m in everyone.memories} == {BETA_NAME}
    async with mcp_client(fleet.mcp_url, BETA) as client:
        recall = await call_tool(client, "recall", {"query": QUERY, "bank": TEAM, "agent": BETA_NAME})
        listing = await call_tool(client, "list_recent", {"bank": TEAM, "agent": ALPHA_NAME})
    assert recall["memories"] and {m["agent"] for m in recall["memories"]} == {BETA_NAME}
    assert [t["id"] for t in listing["turns"]] == ["team-a1"] and listing["turns"][0]["agent"] == ALPHA_NAME
    console = await timeline(fleet.engine, TEAM, {"agent": BETA_NAME})
    assert {t["id"] for t in console["turns"]} == {"team-b1", "same-id"}
    assert all(t["meta"]["agent"] == BETA_NAME for t in console["turns"])


async def test_an_agent_claiming_another_agent_is_refused_and_the_operator_may_name_one(fleet: Fleet) -> None:
    claim = _turn("claimed-1", "A note that pretends beta wrote it.", agent=BETA_NAME)
    refused = await _refused(
        fleet.stub.Retain(
            memory_pb2.RetainRequest(bank_id=TEAM, turns=[claim]), metadata=_as(ALPHA), timeout=TIMEOUT
        )
    )
    assert refused.code() is grpc.StatusCode.PERMISSION_DENIED and "agent" in (refused.details() or "")
    own_name = _turn("claimed-2", "A note alpha signs with its own name.", agent=ALPHA_NAME)
    await fleet.stub.Retain(
        memory_pb2.RetainRequest(bank_id=TEAM, turns=[own_name]), metadata=_as(ALPHA), timeout=TIMEOUT
    )
    async with mcp_client(fleet.mcp_url, ALPHA) as client:
        mcp_refused = await client.call_tool(
            "retain", {"text": "pretending", "bank": TEAM, "agent": "someone"}
        )
    assert mcp_refused.is_error and "PERMISSION_DENIED" in json.dumps(
        [c.model_dump() for c in mcp_refused.content]
    )
    imported = _turn("relayed-1", "A note the operator relays for the importer agent.", agent="importer-bot")
    await fleet.stub.Retain(
        memory_pb2.RetainRequest(bank_id=TEAM, turns=[imported]),
        metadata=_as(CREDENTIALS.admin),
        timeout=TIMEOUT,
    )
    stored = await fleet.stub.ListRecent(
        memory_pb2.ListRecentRequest(bank_id=TEAM, limit=50), metadata=_as(CREDENTIALS.admin), timeout=TIMEOUT
    )
    agents = {t.id: t.meta.agent for t in stored.turns}
    assert "claimed-1" not in agents  # refused whole: nothing written
    assert agents["claimed-2"] == ALPHA_NAME and agents["relayed-1"] == "importer-bot"
    updated = await fleet.stub.Update(
        memory_pb2.UpdateRequest(bank_id=TEAM, turn_id="team-a1", text="Team practice: announce in #ops."),
        metadata=_as(BETA),
        timeout=TIMEOUT,
    )
    assert updated.turn.meta.agent == BETA_NAME  # a new version is written by whoever updated it


async def test_export_and_import_keep_the_writing_agent_and_old_files_without_it_still_import(
    fleet: Fleet,
) -> None:
    out = io.StringIO()
    await export_bank(fleet.engine.clients, BETA_OWN, out)
    lines = out.getvalue().splitlines()
    turns = [json.loads(line) for line in lines if json.loads(line).get("kind") == "turn"]
    assert turns and all(t["meta"]["agent"] == BETA_NAME for t in turns)

    async def imported(bank: str, text: list[str]) -> dict[str, str]:
        header, _ = read_export(text)
        await load(fleet.engine.clients, header, lambda: read_export(text)[1], bank, 1 << 20, TIMEOUT)
        listed = await fleet.engine.list_recent(bank, limit=50)
        return {t.id: t.meta.agent for t in listed.turns}

    assert await imported("fleet-beta-copy", lines) == {"beta-1": BETA_NAME}
    old = [_without_agent(line) for line in lines]
    assert all('"agent"' not in line for line in old)
    assert await imported("fleet-beta-old", old) == {"beta-1": ""}


def _without_agent(line: str) -> str:
    record = json.loads(line)
    if isinstance(record.get("meta"), dict):
        record["meta"].pop("agent", None)
    if isinstance(record.get("turn"), dict) and isinstance(record["turn"].get("meta"), dict):
        record["turn"]["meta"].pop("agent", None)
    return json.dumps(record, sort_keys=True)
