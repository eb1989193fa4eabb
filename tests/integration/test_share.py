"""Sharing memories into a team bank, on a mesh closed as deployed ones are, through real gRPC, the official
MCP client over streamable HTTP and the CLI: what is copied (turns, episodes, facts, lessons) and who finds
it, who may share, lineage (a purge of a source takes its copy from every layer of the team bank unless the
team re-stated it) and reflection over episodes that several agents shared.

Agents alpha and beta each own a bank and write their team's; a teammate only reads the team bank; two
tokens lack one of the operations a share needs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import psycopg
import pytest
from psycopg import sql

from hindsight.cli import share as share_command
from hindsight.client import AsyncMemoryClient, PermissionDenied, SharedMemory, ShareResult
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.runtime.auth import Grants
from hindsight.runtime.records import to_timestamp
from tests.integration.mcp_http import call_tool, mcp_client
from tests.integration.mesh import LayerAddresses, MeshCredentials, layer_mesh, serving_edge

TIMEOUT = 30
ALPHA, BETA, GAMMA, MATE = "share-alpha-token", "share-beta-token", "share-gamma-token", "share-mate-token"
NO_WRITE, NO_READ = "share-nowrite-token", "share-noread-token"
OWN, BETA_OWN, GAMMA_OWN, TEAM = "share-alpha", "share-beta", "share-gamma", "share-team"
CREDENTIALS = MeshCredentials(
    internal="share-mesh-secret",
    admin="share-admin-secret",
    tokens=";".join(
        [
            f"{ALPHA}={OWN}:read+write+forget,{TEAM}:read+write",
            f"{BETA}={BETA_OWN}:read+write+forget,{TEAM}:read+write",
            f"{GAMMA}={GAMMA_OWN}:read+write+forget,{TEAM}:read+write",
            f"{MATE}={TEAM}:read",
            f"{NO_WRITE}={OWN}:read,{TEAM}:read",
            f"{NO_READ}={OWN}:write,{TEAM}:write",
        ]
    ),
)
GRANTS = Grants.parse(f"{CREDENTIALS.tokens};admin:{CREDENTIALS.admin}=*")
ALPHA_NAME, BETA_NAME = GRANTS.authenticate(ALPHA).name, GRANTS.authenticate(BETA).name
NOW = datetime(2025, 6, 2, 12, tzinfo=UTC)


@dataclass(frozen=True)
class Team:
    engine: MemoryEngine
    stub: memory_pb2_grpc.MemoryServiceStub
    grpc_address: str
    mcp_url: str
    layers: LayerAddresses
    database_url: str


def _as(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


@pytest.fixture(scope="module")
async def team(
    database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Team]:
    async with layer_mesh(
        database_url, redis_url, tmp_path_factory.mktemp("qdrant"), credentials=CREDENTIALS
    ) as layers:
        settings = layers.edge_settings(
            internal_token=CREDENTIALS.internal,
            admin_token=CREDENTIALS.admin,
            llm_rewrite=False,
            record_access=False,
        )
        async with open_engine(settings) as engine, serving_edge(engine, CREDENTIALS, GRANTS, OWN) as served:
            yield Team(engine, served.stub, served.address, served.mcp_url, layers, database_url)


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _turn(turn_id: str, text: str, session: str, speaker: str = "", days_ago: float = 1) -> common_pb2.Turn:
    return common_pb2.Turn(
        id=turn_id,
        session_id=session,
        role=common_pb2.ROLE_USER,
        speaker=speaker,
        text=text,
        meta=common_pb2.RecordMeta(
            time=to_timestamp(NOW - timedelta(days=days_ago)), source=common_pb2.SOURCE_USER
        ),
    )


async def _retain(team: Team, token: str, bank: str, *turns: common_pb2.Turn) -> None:
    reply = await team.stub.Retain(
        memory_pb2.RetainRequest(bank_id=bank, turns=list(turns)), metadata=_as(token), timeout=TIMEOUT
    )
    assert reply.indexed


async def _episode(team: Team, token: str, bank: str, **fields: Any) -> str:
    fields.setdefault("meta", common_pb2.RecordMeta(time=to_timestamp(NOW), source=common_pb2.SOURCE_AGENT))
    reply = await team.stub.WriteEpisode(
        memory_pb2.WriteEpisodeRequest(bank_id=bank, episode=episodic_pb2.Episode(**fields)),
        metadata=_as(token),
        timeout=TIMEOUT,
    )
    return str(reply.episode.id)


async def _recall(team: Team, token: str, bank: str, query: str, top_k: int = 5) -> list[memory_pb2.Memory]:
    reply = await team.stub.Recall(
        memory_pb2.RecallRequest(bank_id=bank, query=query, top_k=top_k, reference_time=to_timestamp(NOW)),
        metadata=_as(token),
        timeout=TIMEOUT,
    )
    assert not reply.partial, reply.layer_reports
    return list(reply.memories)


async def _share(team: Team, token: str, ids: list[str], source: str = OWN) -> memory_pb2.ShareResponse:
    reply: memory_pb2.ShareResponse = await team.stub.Share(
        memory_pb2.ShareRequest(bank_id=source, target_bank_id=TEAM, ids=ids),
        metadata=_as(token),
        timeout=TIMEOUT,
    )
    return reply


async def _refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call
    return refused.value


async def _links(team: Team, bank: str = TEAM) -> list[dict[str, Any]]:
    """The copies episodic memory links to their sources (the provenance a share records)."""
    table = sql.Identifier(team.layers.episodic_schema, "shared_copies")
    async with await psycopg.AsyncConnection.connect(team.database_url) as conn:
        cursor = await conn.execute(
            sql.SQL(
                "SELECT id, kind, source_bank_id, source_id, source_kind, lineage_ids, source_agent, agent "
                "FROM {} WHERE bank_id = %s ORDER BY id"
            ).format(table),
            (bank,),
        )
        names = [column.name for column in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in await cursor.fetchall()]


async def _team_turns(team: Team, ids: list[str]) -> list[common_pb2.Turn]:
    reply = await team.engine.clients.episodic.call(
        "GetTurns", episodic_pb2.GetTurnsRequest(bank_id=TEAM, turn_ids=ids), TIMEOUT
    )
    return list(reply.turns)


async def _team_records(team: Team, ids: list[str]) -> list[str]:
    reply = await team.engine.clients.semantic.call(
        "GetRecords", semantic_pb2.GetRecordsRequest(bank_id=TEAM, ids=ids), TIMEOUT
    )
    return [record.id for record in reply.records]


async def _team_lessons(team: Team, ids: list[str]) -> list[str]:
    reply = await team.engine.clients.reflect.call(
        "GetLessons", reflect_pb2.GetLessonsRequest(bank_id=TEAM, ids=ids), TIMEOUT
    )
    return [lesson.id for lesson in reply.lessons]


async def _fact_of(team: Team, query: str) -> memory_pb2.Memory:
    """A fact the semantic layer drew in alpha's bank (as recall returns it), once extraction has run."""
    for _ in range(50):
        facts = [m for m in await _recall(team, ALPHA, OWN, query, top_k=20) if m.kind == "fact"]
        if facts:
            return facts[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no fact drawn for {query!r}")


# ----- what a share copies, and who finds it ------------------------------------------------------------


async def test_a_share_through_mcp_copies_a_turn_an_episode_a_fact_and_a_lesson_that_a_teammate_recalls(
    team: Team,
) -> None:
    session = _unique("work")
    turn_id = _unique("turn")
    await _retain(
        team,
        ALPHA,
        OWN,
        _turn(
            turn_id, "The payments gateway certificate is renewed by the ops rotation every April.", session
        ),
        _turn(_unique("turn"), "I live in Lisbon.", session, speaker="Dana"),
    )
    episode_id = await _episode(
        team,
        ALPHA,
        OWN,
        session_id=session,
        situation="Migrating the ledger database to the new cluster",
        action="ran the schema migration in a maintenance window",
        outcome="no downtime for the ledger",
        lesson="Run ledger schema migrations inside a maintenance window",
        task_type="ledger migration",
        result=episodic_pb2.OUTCOME_SUCCESS,
    )
    reflected = await team.stub.Reflect(
        memory_pb2.ReflectRequest(bank_id=OWN, session_id=session), metadata=_as(ALPHA), timeout=TIMEOUT
    )
    [lesson] = [
        lesson for lesson in reflected.lessons if lesson.lesson.startswith("Run ledger schema migrations")
    ]
    fact = await _fact_of(team, "Where does Dana live?")
    asked = [turn_id, episode_id, fact.id, lesson.id]

    async with mcp_client(team.mcp_url, ALPHA) as client:
        shared = await call_tool(client, "share", {"bank": OWN, "to_bank": TEAM, "ids": asked})
        again = await call_tool(client, "share", {"bank": OWN, "to_bank": TEAM, "ids": asked})

    assert shared["to_bank"] == TEAM and shared["indexed"] is True
    assert [item["source_id"] for item in shared["shared"]] == asked
    kinds = {item["source_id"]: (item["kind"], item["layer"]) for item in shared["shared"]}
    assert kinds == {
        turn_id: ("turn", "episodic"),
        episode_id: ("episode", "episodic"),
        fact.id: ("fact", "episodic"),
        lesson.id: ("lesson", "reflect"),
    }
    assert again["shared"] == shared["shared"]  # a record shared again keeps its one copy
    copy_of = {item["source_id"]: item["id"] for item in shared["shared"]}
    assert not set(copy_of.values()) & set(asked)

    # provenance: the source bank, the records each copy stands on, who wrote them and who shared them
    links = {link["source_id"]: link for link in await _links(team)}
    for source_id in asked:
        link = links[source_id]
        assert link["source_bank_id"] == OWN and link["agent"] == ALPHA_NAME
        assert source_id in link["lineage_ids"]
    assert links[turn_id]["source_agent"] == links[episode_id]["source_agent"] == ALPHA_NAME
    assert links[fact.id]["lineage_ids"] != [fact.id]  # and the turn the fact was drawn from
    assert [t.meta.agent for t in await _team_turns(team, [copy_of[turn_id]])] == [ALPHA_NAME]

    # a teammate who may only read the team bank finds each copy among its top five
    questions = {
        turn_id: "When is the payments gateway certificate renewed?",
        episode_id: "How should we migrate the ledger database?",
        fact.id: "Where does Dana live?",
        lesson.id: "ledger schema migrations maintenance window",
    }
    for source_id, question in questions.items():
        found = await _recall(team, MATE, TEAM, question)
        assert copy_of[source_id] in [m.id for m in found], (source_id, [(m.id, m.text) for m in found])
    found = await _recall(team, MATE, TEAM, questions[turn_id])
    copy = next(m for m in found if m.id == copy_of[turn_id])
    assert copy.meta.agent == ALPHA_NAME and copy.bank_id == TEAM


# ----- who may share ----------------------------------------------------------------------------------


async def test_a_share_needs_read_on_the_source_and_write_on_the_team_bank_and_is_refused_whole(
    team: Team,
) -> None:
    turn_id = _unique("private")
    await _retain(team, ALPHA, OWN, _turn(turn_id, "The staging database password rotates weekly.", "s1"))
    before = await _links(team)

    refused = await _refused(_share(team, NO_WRITE, [turn_id]))
    assert refused.code() is grpc.StatusCode.PERMISSION_DENIED
    assert f"'{TEAM}'" in (refused.details() or "") and "'write'" in (refused.details() or "")
    refused = await _refused(_share(team, NO_READ, [turn_id]))
    assert refused.code() is grpc.StatusCode.PERMISSION_DENIED
    assert f"'{OWN}'" in (refused.details() or "") and "'read'" in (refused.details() or "")
    refused = await _refused(_share(team, MATE, [turn_id]))  # reads the team bank, not alpha's
    assert refused.code() is grpc.StatusCode.PERMISSION_DENIED and f"'{OWN}'" in (refused.details() or "")
    refused = await _refused(_share(team, BETA, [turn_id]))  # writes the team bank, reads only its own
    assert refused.code() is grpc.StatusCode.PERMISSION_DENIED

    ghost = _unique("no-such-memory")
    refused = await _refused(_share(team, ALPHA, [turn_id, ghost]))
    assert refused.code() is grpc.StatusCode.INVALID_ARGUMENT and ghost in (refused.details() or "")
    assert turn_id not in (refused.details() or "")
    refused = await _refused(
        team.stub.Share(
            memory_pb2.ShareRequest(bank_id=OWN, target_bank_id=OWN, ids=[turn_id]), metadata=_as(ALPHA)
        )
    )
    assert refused.code() is grpc.StatusCode.INVALID_ARGUMENT and "target_bank_id" in (
        refused.details() or ""
    )

    async with mcp_client(team.mcp_url, NO_WRITE) as client:
        result = await client.call_tool("share", {"bank": OWN, "to_bank": TEAM, "ids": [turn_id]})
    text = str(getattr(result.content[0], "text", ""))
    assert result.is_error and "PERMISSION_DENIED" in text and f"'{TEAM}'" in text and "'write'" in text
    async with mcp_client(team.mcp_url, NO_READ) as client:
        result = await client.call_tool("share", {"bank": OWN, "to_bank": TEAM, "ids": [turn_id]})
    text = str(getattr(result.content[0], "text", ""))
    assert result.is_error and "PERMISSION_DENIED" in text and f"'{OWN}'" in text and "'read'" in text
    async with mcp_client(team.mcp_url, ALPHA) as client:
        result = await client.call_tool("share", {"bank": OWN, "to_bank": TEAM, "ids": [turn_id, ghost]})
    text = str(getattr(result.content[0], "text", ""))
    assert result.is_error and "INVALID_ARGUMENT" in text and ghost in text

    assert await _links(team) == before  # nothing written by any of them
    found = await _recall(team, MATE, TEAM, "When does the staging database password rotate?", top_k=20)
    assert not any("staging database password" in m.text for m in found)


# ----- lineage ----------------------------------------------------------------------------------------


async def test_purging_sources_removes_their_copies_from_every_layer_of_the_team_bank_unless_restated(
    team: Team,
) -> None:
    session = _unique("purged")
    kept_session = _unique("kept")
    plain, edited, other = _unique("plain"), _unique("edited"), _unique("other")
    await _retain(
        team,
        ALPHA,
        OWN,
        _turn(plain, "The quarterly audit of vendor contracts is owned by Priya Raman.", session),
        _turn(edited, "The disaster recovery drill for the warehouse runs every March.", session),
        _turn(other, "Blue-green deploys of the invoicing service need a warm standby.", kept_session),
        _turn(_unique("fact-source"), "I live in Reykjavik.", kept_session, speaker="Oskar"),
    )
    episode_id = await _episode(
        team,
        ALPHA,
        OWN,
        session_id=session,
        situation="Rotating the invoicing service's signing keys",
        action="staged the new key beside the old one before switching",
        outcome="no failed signatures",
        lesson="Stage a new signing key beside the old one before switching",
        task_type="key rotation",
        result=episodic_pb2.OUTCOME_SUCCESS,
        meta=common_pb2.RecordMeta(
            time=to_timestamp(NOW), source=common_pb2.SOURCE_AGENT, source_turn_ids=[plain]
        ),
    )
    reflected = await team.stub.Reflect(
        memory_pb2.ReflectRequest(bank_id=OWN, session_id=session), metadata=_as(ALPHA), timeout=TIMEOUT
    )
    [lesson] = [lesson for lesson in reflected.lessons if lesson.lesson.startswith("Stage a new signing key")]
    fact = await _fact_of(team, "Where does Oskar live?")
    reply = await _share(team, ALPHA, [plain, edited, other, episode_id, lesson.id, fact.id])
    copy_of = {m.source_id: m.id for m in reply.shared}
    drawn = copy_of[lesson.id]
    assert await _team_lessons(team, [drawn]) == [drawn]
    anchors = {link["source_id"]: link["id"] for link in await _links(team)}

    # the team re-states one copy: an update makes it the team's own
    restated = await team.stub.Update(
        memory_pb2.UpdateRequest(
            bank_id=TEAM,
            turn_id=copy_of[edited],
            text="The warehouse disaster recovery drill runs every March; the team adds a failover test.",
        ),
        metadata=_as(BETA),
        timeout=TIMEOUT,
    )

    purged = await team.stub.Purge(
        memory_pb2.PurgeRequest(bank_id=OWN, session_id=session), metadata=_as(ALPHA), timeout=TIMEOUT
    )
    # the plain turn, the episode (it stood on the plain turn) and the lesson's episode (drawn from it)
    assert purged.shared_copy_count >= 3
    gone = [copy_of[plain], copy_of[episode_id], anchors[lesson.id]]
    assert await _team_turns(team, [copy_of[plain]]) == []
    assert await _team_records(team, gone) == []
    assert await _team_lessons(team, [drawn]) == []
    for question in ("Who owns the quarterly audit of vendor contracts?", "How do we rotate signing keys?"):
        found = await _recall(team, MATE, TEAM, question, top_k=20)
        assert not set(gone) & {m.id for m in found}, [(m.id, m.text) for m in found]
        assert not any("vendor contracts" in m.text or "signing key" in m.text for m in found)
    # what the team re-stated stays (with its history), and so does what was not purged
    assert [t.id for t in await _team_turns(team, [copy_of[edited], restated.turn.id])] == [
        copy_of[edited],
        restated.turn.id,
    ]
    found = await _recall(team, MATE, TEAM, "When does the warehouse disaster recovery drill run?")
    assert restated.turn.id in [m.id for m in found]
    assert await _team_turns(team, [copy_of[other], copy_of[fact.id]]) != []
    links = {link["source_id"] for link in await _links(team)}
    assert {plain, edited, episode_id, lesson.id}.isdisjoint(links) and {other, fact.id} <= links

    # purging the turn a fact was drawn from takes the fact's copy too
    fact_source = next(i for i in (await _links(team)) if i["source_id"] == fact.id)["lineage_ids"]
    turns_of_fact = [i for i in fact_source if i != fact.id]
    purged = await team.stub.Purge(
        memory_pb2.PurgeRequest(bank_id=OWN, ids=turns_of_fact), metadata=_as(ALPHA), timeout=TIMEOUT
    )
    assert purged.shared_copy_count == 1
    assert await _team_turns(team, [copy_of[fact.id]]) == []
    assert await _team_records(team, [copy_of[fact.id]]) == []
    assert await _team_turns(team, [copy_of[other]]) != []


async def test_a_hard_forget_and_a_purge_of_the_whole_source_bank_take_its_copies_too(team: Team) -> None:
    first, second = _unique("gamma"), _unique("gamma")
    await _retain(
        team,
        GAMMA,
        GAMMA_OWN,
        _turn(first, "The nightly export of the CRM lands in the reporting bucket at two.", "g1"),
        _turn(second, "The CRM sandbox is refreshed from production every Sunday night.", "g2"),
    )
    copy_of = {m.source_id: m.id for m in (await _share(team, GAMMA, [first, second], GAMMA_OWN)).shared}

    forgotten = await team.stub.Forget(
        memory_pb2.ForgetRequest(bank_id=GAMMA_OWN, turn_ids=[first], hard=True),
        metadata=_as(GAMMA),
        timeout=TIMEOUT,
    )
    assert forgotten.forgotten_count == 1
    assert await _team_turns(team, [copy_of[first]]) == []
    assert await _team_records(team, [copy_of[first]]) == []
    assert [t.id for t in await _team_turns(team, [copy_of[second]])] == [copy_of[second]]

    purged = await team.stub.Purge(
        memory_pb2.PurgeRequest(bank_id=GAMMA_OWN, whole_bank=True), metadata=_as(GAMMA), timeout=TIMEOUT
    )
    assert purged.shared_copy_count == 1
    assert await _team_turns(team, [copy_of[second]]) == []
    assert await _team_records(team, [copy_of[second]]) == []
    found = await _recall(team, MATE, TEAM, "When is the CRM sandbox refreshed?", top_k=20)
    assert not any("CRM" in m.text for m in found)
    assert not any(link["source_bank_id"] == GAMMA_OWN for link in await _links(team))
    audit = await team.stub.ListAudit(
        memory_pb2.ListAuditRequest(bank_id=TEAM, action="purge"), metadata=_as(CREDENTIALS.admin)
    )
    assert any(GAMMA_OWN in entry.reason and copy_of[second] in entry.details_json for entry in audit.entries)


# ----- reflection over a team's shared episodes -----------------------------------------------------------


async def test_closing_a_team_session_draws_a_lesson_from_episodes_two_agents_shared(team: Team) -> None:
    session = _unique("incident")
    failed = await _episode(
        team,
        ALPHA,
        OWN,
        session_id=session,
        situation="Deploying the search indexer to production",
        action="restarted all indexer nodes at once",
        outcome="search was down for ten minutes",
        task_type="indexer deploy",
        result=episodic_pb2.OUTCOME_FAILURE,
        meta=common_pb2.RecordMeta(
            time=to_timestamp(NOW - timedelta(hours=2)), source=common_pb2.SOURCE_AGENT
        ),
    )
    succeeded = await _episode(
        team,
        BETA,
        BETA_OWN,
        session_id=session,
        situation="Deploying the search indexer to production",
        action="rolled the indexer nodes one at a time",
        outcome="no downtime",
        task_type="indexer deploy",
        result=episodic_pb2.OUTCOME_SUCCESS,
        meta=common_pb2.RecordMeta(
            time=to_timestamp(NOW - timedelta(hours=1)), source=common_pb2.SOURCE_AGENT
        ),
    )
    [from_alpha] = (await _share(team, ALPHA, [failed])).shared
    [from_beta] = (await _share(team, BETA, [succeeded], source=BETA_OWN)).shared
    agents = {link["id"]: link["agent"] for link in await _links(team)}
    assert (agents[from_alpha.id], agents[from_beta.id]) == (ALPHA_NAME, BETA_NAME)

    async with mcp_client(team.mcp_url, ALPHA) as client:
        closed = await call_tool(client, "close_session", {"bank": TEAM, "session_id": session})
    assert closed["reflected"] and closed["episodes_read"] == 2
    together = [
        lesson
        for lesson in closed["lessons"]
        if {from_alpha.id, from_beta.id} <= set(lesson["source_episode_ids"])
    ]
    assert together, closed["lessons"]
    assert "rolled the indexer nodes one at a time worked where restarted all" in together[0]["lesson"]
    found = await _recall(team, MATE, TEAM, "How should the search indexer be deployed?")
    assert together[0]["id"] in [m.id for m in found]


# ----- the CLI ------------------------------------------------------------------------------------------


def _cli(team: Team, capsys: pytest.CaptureFixture[str], token: str, *arguments: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    share_command.add_command(parser.add_subparsers())
    args = parser.parse_args(["share", *arguments, "--address", team.grpc_address, "--token", token])
    code = share_command.run(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def test_the_cli_shares_into_a_team_bank_and_reports_a_refusal(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    turn_id = _unique("cli")
    await _retain(
        team, ALPHA, OWN, _turn(turn_id, "The build cache for the mobile app lives in bucket m-cache.", "s2")
    )
    code, out, err = await asyncio.to_thread(
        _cli, team, capsys, ALPHA, "--bank", OWN, "--to", TEAM, turn_id, "--json"
    )
    assert code == 0, err
    shown = json.loads(out)
    assert shown["to_bank"] == TEAM and [item["source_id"] for item in shown["shared"]] == [turn_id]
    assert set(shown["shared"][0]) == {"source_id", "id", "layer", "kind"}
    found = await _recall(team, MATE, TEAM, "Where does the mobile app build cache live?")
    assert shown["shared"][0]["id"] in [m.id for m in found]

    code, out, err = await asyncio.to_thread(
        _cli, team, capsys, NO_WRITE, "--bank", OWN, "--to", TEAM, turn_id
    )
    assert code == 1 and "PERMISSION_DENIED" in err and f"'{TEAM}'" in err and not out


async def test_the_python_client_shares_and_a_refusal_is_its_permission_error(team: Team) -> None:
    turn_id = _unique("client")
    await _retain(
        team, ALPHA, OWN, _turn(turn_id, "The staging database snapshot runs nightly at 02:30.", "s3")
    )
    async with AsyncMemoryClient(team.grpc_address, token=ALPHA) as client:
        result = await client.share(OWN, TEAM, [turn_id])
        again = await client.share(OWN, TEAM, [turn_id])
    assert isinstance(result, ShareResult) and result.target_bank == TEAM
    [shared] = result.shared
    assert isinstance(shared, SharedMemory) and shared.source_id == turn_id and shared.kind == "turn"
    assert again.shared == result.shared  # sharing again returns the same copy
    found = await _recall(team, MATE, TEAM, "When does the staging database snapshot run?")
    assert shared.id in [m.id for m in found]

    async with AsyncMemoryClient(team.grpc_address, token=NO_WRITE) as client:
        with pytest.raises(PermissionDenied) as refused:
            await client.share(OWN, TEAM, [turn_id])
    assert TEAM in str(refused.value)
