"""Corrections found by meaning, on Qdrant Edge with the real inference service: a later turn answering the
same question anew supersedes the earlier one (``valid_to`` = its time, ``superseded_by`` = it, history
kept, ``valid_from`` on every record, carried by the gRPC messages); look-alikes do not; turning corrections
off (``HINDSIGHT_SEMANTIC_CORRECTIONS=false``) changes the outcome; a pooled bank keeps unnamed speakers of
different sessions apart."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.llm import LLMClient, LLMSettings
from hindsight.runtime.records import RecordMeta, TimeRange
from hindsight.runtime.settings import load
from hindsight.semantic.backend import open_vector_store
from hindsight.semantic.embedder import InferenceEmbedder, describe_model
from hindsight.semantic.engine import SemanticEngine
from hindsight.semantic.lineage_store import SemanticStore
from hindsight.semantic.llm_adjudge import Adjudicator
from hindsight.semantic.records import SearchOptions, SemanticRecord
from hindsight.semantic.servicer import record_to_pb
from hindsight.semantic.settings import SemanticSettings
from hindsight.semantic.speakers import SpeakerPolicy
from tests.llm_test_server import Reply, openai_test_server

START = datetime(2025, 2, 3, 9, tzinfo=UTC)


@contextlib.asynccontextmanager
async def engine_parts(inference_addr: str) -> AsyncIterator[tuple[SemanticStore, InferenceEmbedder]]:
    client = LayerClient(inference_addr, inference_pb2_grpc.InferenceServiceStub)
    try:
        model = await describe_model(client, "", wait_seconds=5)
        async with open_vector_store(SemanticSettings(), model) as store:
            yield store, InferenceEmbedder(client, model)
    finally:
        await client.close()


def said(turn_id: str, text: str, day: int, session: str = "s1", speaker: str = "") -> SemanticRecord:
    return SemanticRecord(
        id=turn_id,
        text=text,
        speaker=speaker,
        session_id=session,
        meta=RecordMeta(time=START + timedelta(days=day)),
    )


async def retain_each(engine: SemanticEngine, bank: str, turns: list[SemanticRecord]) -> None:
    for record in turns:  # one by one, as a conversation is retained
        await engine.upsert(bank, [record])


async def stored(engine: SemanticEngine, bank: str, ids: list[str]) -> dict[str, SemanticRecord]:
    return {i: held.record for i, held in (await engine.store.get(bank, ids)).items()}


CONVERSATION = [
    ("Invoices go out on the 1st.", "From next month invoices go out on the 15th."),
    ("Our boiler is serviced by Northgate Heating.", "The boiler is serviced by Westfield Plumbing now."),
    ("公司年会在三亚办。", "公司年会改在丽江办了。"),
    ("我们的房租每月5号交。", "我们的房租改成每月10号交了。"),
]


@pytest.mark.parametrize(("first", "later"), CONVERSATION, ids=["en-date", "en-name", "zh-place", "zh-date"])
async def test_a_later_answer_to_the_same_question_supersedes_the_earlier_turn(
    inference_addr: str, unique_name: str, first: str, later: str
) -> None:
    async with engine_parts(inference_addr) as (store, embedder):
        engine = SemanticEngine(store, embedder)
        await retain_each(
            engine,
            unique_name,
            [
                said("old", first, 0),
                said("x1", "The weather was lovely this afternoon.", 0),
                said("x2", "帮我写一封给水管工的礼貌邮件。", 0),
                said("new", later, 12, session="s2"),  # a later conversation, no cue needed
            ],
        )
        found = await stored(engine, unique_name, ["old", "new", "x1"])
        assert found["old"].superseded_by == "new"
        assert found["old"].valid_to == START + timedelta(days=12)
        assert found["new"].current and "old" in found["new"].supersedes
        assert found["old"].valid_from == START and found["new"].valid_from == START + timedelta(days=12)
        assert found["x1"].current and found["x1"].valid_from == START
        message = record_to_pb(found["old"])  # what gRPC Search and Get carry to the edge
        assert message.superseded_by == "new" and message.valid_to.ToDatetime(UTC) == START + timedelta(
            days=12
        )
        assert message.valid_from.ToDatetime(UTC) == START
        hits = await engine.search(unique_name, later, 5, TimeRange(), SearchOptions())
        assert "old" not in [hit.record.id for hit in hits]  # current state by default
        history = await engine.search(unique_name, later, 5, TimeRange(), SearchOptions(include_history=True))
        assert "old" in [hit.record.id for hit in history]  # history kept
        then = SearchOptions(valid_at=START + timedelta(days=3))
        assert "old" in [
            hit.record.id for hit in await engine.search(unique_name, first, 5, TimeRange(), then)
        ]


LOOK_ALIKES = [
    "Is the standup at 10:00 now?",
    "If we moved the standup to 10:00 it would be easier for Sam.",
    "We were going to move the standup to 10:00, but we called it off.",
    "Back in college our standup was at 10:00.",
    "The design team's standup is at 10:00.",
    "The standup is in room 4.",
]


async def test_look_alikes_leave_the_earlier_turn_current(inference_addr: str, unique_name: str) -> None:
    async with engine_parts(inference_addr) as (store, embedder):
        engine = SemanticEngine(store, embedder)
        turns = [said("old", "The standup is at 9:30.", 0)]
        turns += [said(f"l{i}", text, 2 + i) for i, text in enumerate(LOOK_ALIKES)]
        await retain_each(engine, unique_name, turns)
        found = await stored(engine, unique_name, [t.id for t in turns])
        assert all(record.current for record in found.values()), {
            i: r.superseded_by for i, r in found.items() if not r.current
        }


async def test_turning_corrections_off_changes_the_outcome(
    inference_addr: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same conversation with HINDSIGHT_SEMANTIC_CORRECTIONS on and off: on, the old turn is superseded;
    off, both stay current (the mechanism fires)."""
    outcome: dict[str, bool] = {}
    for switch in ("true", "false"):
        monkeypatch.setenv("HINDSIGHT_SEMANTIC_CORRECTIONS", switch)
        settings = load(SemanticSettings)
        async with engine_parts(inference_addr) as (store, embedder):
            engine = SemanticEngine(store, embedder, corrections=settings.corrections)
            bank = f"{unique_name}-{switch}"
            await retain_each(
                engine,
                bank,
                [
                    said("old", "Our rent is due on the 5th.", 0),
                    said("new", "Our rent is due on the 10th.", 9, "s2"),
                ],
            )
            outcome[switch] = (await stored(engine, bank, ["old"]))["old"].current
    assert outcome == {"true": False, "false": True}


async def test_a_pooled_bank_keeps_unnamed_speakers_of_other_sessions_apart(
    inference_addr: str, unique_name: str
) -> None:
    async with engine_parts(inference_addr) as (store, embedder):
        policy = SpeakerPolicy.parse("auto", f"{unique_name}-pool=pooled")
        engine = SemanticEngine(store, embedder, speakers=policy)
        for bank in (f"{unique_name}-pool", f"{unique_name}-one"):
            await retain_each(
                engine,
                bank,
                [said("a", "The gym opens at 6am.", 0, "s1"), said("b", "The gym opens at 7am.", 5, "s2")],
            )
        assert (await stored(engine, f"{unique_name}-pool", ["a"]))["a"].current
        assert (await stored(engine, f"{unique_name}-one", ["a"]))["a"].superseded_by == "b"
        named = f"{unique_name}-named"
        await retain_each(
            engine,
            named,
            [
                said("a", "My rent is 900 euros.", 0, speaker="Alice"),
                said("b", "My rent is 1100 euros.", 3, speaker="Bob"),
            ],
        )
        assert (await stored(engine, named, ["a"]))["a"].current  # named speakers are distinct people


async def test_an_llm_when_asked_judges_the_nearest_candidates_and_the_rules_stand_when_it_fails(
    inference_addr: str, unique_name: str
) -> None:
    """With an LLM (the scripted OpenAI-compatible server): a paraphrased question the rules cannot link is
    linked when the LLM says so; a pair the rules would link is left alone when the LLM says no; when the LLM
    fails, the rules decide."""
    async with engine_parts(inference_addr) as (store, embedder), openai_test_server() as server:
        llm = LLMClient(LLMSettings(api_base=server.base_url, model="test", max_retries=0, backoff_seconds=0))
        engine = SemanticEngine(store, embedder, adjudicator=Adjudicator(llm, timeout=10))
        yes = {"same_question": True, "new_value": True, "asserts_now": True}
        no = {"same_question": False, "new_value": True, "asserts_now": True}
        server.script(Reply(yes))
        paraphrase = f"{unique_name}-paraphrase"
        await retain_each(
            engine,
            paraphrase,
            [said("a", "My rent is 900 euros a month.", 0), said("b", "I pay 950 for the flat now.", 4)],
        )
        assert (await stored(engine, paraphrase, ["a"]))["a"].superseded_by == "b"
        assert "My rent is 900 euros a month." in server.requests[-1].body["messages"][1]["content"]
        server.script(Reply(no))
        refused = f"{unique_name}-refused"
        await retain_each(
            engine,
            refused,
            [said("a", "Invoices go out on the 1st.", 0), said("b", "Invoices go out on the 15th.", 4)],
        )
        assert (await stored(engine, refused, ["a"]))["a"].current
        server.script(Reply(status=500))
        failed = f"{unique_name}-failed"
        await retain_each(
            engine,
            failed,
            [said("a", "Invoices go out on the 1st.", 0), said("b", "Invoices go out on the 15th.", 4)],
        )
        assert (await stored(engine, failed, ["a"]))["a"].superseded_by == "b"
