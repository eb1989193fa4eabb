"""A reply is found by what it answers: episodic memory sends each turn to semantic memory with the turn just
before it in its session when another speaker said it, and that turn's words are read into the reply's
vector. Only the id is kept; deleting the turn answered re-embeds the reply alone (a vector keeps no words
of a purged turn)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.runtime.records import RecordMeta, Role, Turn
from tests.integration.mesh import LayerAddresses

SESSION_TIME = datetime(2025, 7, 1, 9, 0, tzinfo=UTC)
TIMEOUT = 20
QUESTION = "Did you finally see the Tchaikovsky concert at the Vienna opera house?"
REPLY = "Yes, last Friday! It was wonderful."


@pytest.fixture(scope="module")
async def engine(mesh_layers: LayerAddresses) -> AsyncIterator[MemoryEngine]:
    async with open_engine(mesh_layers.edge_settings()) as opened:
        yield opened


def _said(turn_id: str, speaker: str, text: str, role: Role = Role.USER) -> Turn:
    """A chat message: every turn of the session has the session's time, as chat logs stamp them."""
    return Turn(turn_id, "chat", text, role=role, speaker=speaker, meta=RecordMeta(time=SESSION_TIME))


async def _records(engine: MemoryEngine, bank: str, ids: list[str]) -> dict[str, semantic_pb2.SemanticRecord]:
    reply = await engine.clients.semantic.call(
        "GetRecords", semantic_pb2.GetRecordsRequest(bank_id=bank, ids=ids), TIMEOUT
    )
    return {record.id: record for record in reply.records}


async def _score(engine: MemoryEngine, bank: str, query: str, record_id: str) -> float:
    """The vector score of ``record_id`` for ``query`` (0 when it is not among the hits)."""
    reply = await engine.clients.semantic.call(
        "Search", semantic_pb2.SearchRequest(bank_id=bank, query=query, limit=50), TIMEOUT
    )
    return next((hit.score for hit in reply.hits if hit.record.id == record_id), 0.0)


async def test_a_reply_is_found_by_the_question_it_answers_until_the_question_is_purged(
    engine: MemoryEngine,
) -> None:
    bank = f"reply-{uuid.uuid4().hex[:8]}"
    turns = [
        _said("q", "Maria", QUESTION),
        _said("a", "Jon", REPLY),
        _said("a2", "Jon", "I also bought a new umbrella on the way home."),
    ]
    # Written in one request, in the order of the conversation: the ids sort otherwise ("a" < "q").
    retained = await engine.retain(bank, turns)
    assert retained.indexed
    stored = await _records(engine, bank, ["q", "a", "a2"])
    assert stored["a"].replies_to.id == "q"  # another speaker's turn before it: a reply
    assert stored["a2"].replies_to.id == ""  # the same speaker goes on: read alone
    assert stored["q"].replies_to.id == ""  # the first turn of the session answers nothing
    assert not stored["a"].replies_to.text  # the words answered are never stored
    with_question = await _score(engine, bank, "Tchaikovsky concert Vienna opera", "a")

    await engine.purge(bank, ids=["q"])
    after = await _records(engine, bank, ["a", "a2"])
    assert after["a"].replies_to.id == ""
    alone = await _score(engine, bank, "Tchaikovsky concert Vienna opera", "a")
    assert with_question > alone + 0.1, (with_question, alone)


async def test_a_turn_written_later_answers_the_last_turn_of_its_session(engine: MemoryEngine) -> None:
    bank = f"reply-{uuid.uuid4().hex[:8]}"
    await engine.retain(bank, [_said("m1", "", QUESTION, Role.USER)])
    await engine.retain(bank, [_said("m2", "", REPLY, Role.ASSISTANT)])
    stored = await _records(engine, bank, ["m2"])
    assert stored["m2"].replies_to.id == "m1"  # no names: the roles tell the speakers apart


async def test_the_new_version_of_an_updated_turn_answers_what_the_old_one_answered(
    engine: MemoryEngine,
) -> None:
    bank = f"reply-{uuid.uuid4().hex[:8]}"
    await engine.retain(bank, [_said("x1", "Maria", QUESTION), _said("x2", "Jon", REPLY)])
    new, superseded, _ = await engine.update(bank, "x2", "Yes, last Saturday! It was wonderful.")
    assert superseded == "x2"
    stored = await _records(engine, bank, [new.id])
    assert stored[new.id].replies_to.id == "x1"
