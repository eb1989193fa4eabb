"""Segmentation of sessions into episodes on a real PostgreSQL: topic shifts (by shared words, and by
embeddings from a real inference service), pauses, the open last segment, the LLM, and dedup merges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.episodic.engine import EpisodicMemory
from hindsight.episodic.models import Outcome
from hindsight.episodic.service import inference_embed
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.inference.service import open_service as open_inference
from hindsight.inference.settings import InferenceSettings
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.llm import LLMClient, LLMSettings
from hindsight.runtime.records import RecordMeta, Role, Turn
from hindsight.runtime.testing import serving
from tests.llm_test_server import Reply, openai_test_server

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

DEPLOY = [
    (Role.USER, "", "The kubernetes deploy of the payments service fails with an image pull error."),
    (
        Role.ASSISTANT,
        "",
        "The deploy uses an image tag that the registry does not have; the payments image pull fails.",
    ),
    (
        Role.TOOL,
        "kubectl",
        "kubectl rollout status payments: image pull error, tag v2.3 not found in registry",
    ),
    (Role.USER, "", "Pushed the v2.3 image to the registry, the payments deploy works now, thanks."),
]
COOKING = [
    (Role.USER, "", "What should I cook for dinner tonight with pasta, garlic and tomatoes?"),
    (Role.ASSISTANT, "", "Cook the pasta, fry garlic in olive oil, add the tomatoes and simmer for a sauce."),
    (Role.USER, "", "Great, the garlic tomato pasta sauce was delicious."),
]


def conversation(
    session: str, *parts: list[tuple[Role, str, str]], start: float = 0, gap_after: int = -1, gap: float = 0
) -> list[Turn]:
    turns = []
    minute = start
    for index, (role, speaker, text) in enumerate(item for part in parts for item in part):
        turns.append(
            Turn(
                f"{session}-{index}",
                session,
                text,
                role=role,
                speaker=speaker,
                meta=RecordMeta(time=T0 + timedelta(minutes=minute)),
            )
        )
        minute += 1 + (gap if index == gap_after else 0)
    return turns


async def test_a_topic_shift_ends_an_episode_and_the_last_segment_waits_for_the_session_end(
    episodic_store: PostgresEpisodicStore, episodic_settings: EpisodicSettings
) -> None:
    memory = EpisodicMemory(episodic_store, episodic_settings)
    await memory.record_turns("b", conversation("s", DEPLOY, COOKING))
    first = await memory.segment_session("b", "s", final=False)
    assert first.method == "similarity"
    (deploy,) = first.episodes
    assert deploy.meta.source_turn_ids == tuple(f"s-{i}" for i in range(len(DEPLOY)))
    assert "kubernetes deploy" in deploy.situation and deploy.tools == ("kubectl",)
    assert deploy.result is Outcome.SUCCESS and "payments" in deploy.meta.tags
    assert (await memory.segment_session("b", "s", final=False)).episodes == []  # nothing new has finished
    (cooking,) = (await memory.segment_session("b", "s", final=True)).episodes
    assert cooking.meta.source_turn_ids == tuple(
        f"s-{i}" for i in range(len(DEPLOY), len(DEPLOY) + len(COOKING))
    )
    assert (await memory.segment_session("b", "s", final=True)).episodes == []  # segmented once only
    page = await memory.list_episodes("b", "s", 10, "")
    assert [e.id for e in page.items] == [cooking.id, deploy.id]


async def test_a_long_pause_ends_an_episode_even_on_the_same_topic(
    episodic_store: PostgresEpisodicStore, episodic_settings: EpisodicSettings
) -> None:
    memory = EpisodicMemory(episodic_store, episodic_settings)
    await memory.record_turns(
        "b", conversation("s", DEPLOY, gap_after=1, gap=episodic_settings.segment_gap_minutes + 1)
    )
    episodes = (await memory.segment_session("b", "s", final=True)).episodes
    assert [e.meta.source_turn_ids for e in episodes] == [("s-0", "s-1"), ("s-2", "s-3")]


async def test_an_episode_that_repeats_a_stored_one_merges_into_it(
    episodic_store: PostgresEpisodicStore, episodic_settings: EpisodicSettings
) -> None:
    memory = EpisodicMemory(episodic_store, episodic_settings)
    await memory.record_turns("b", conversation("monday", DEPLOY))
    await memory.record_turns("b", conversation("friday", DEPLOY, start=60 * 24 * 4))
    (first,) = (await memory.segment_session("b", "monday", final=True)).episodes
    (merged,) = (await memory.segment_session("b", "friday", final=True)).episodes
    assert merged.id == first.id
    assert merged.meta.source_turn_ids == first.meta.source_turn_ids + tuple(f"friday-{i}" for i in range(4))
    assert merged.meta.time == T0 + timedelta(days=4, minutes=3)
    assert [e.id for e in (await memory.list_episodes("b", "", 10, "")).items] == [first.id]


async def test_the_llm_extracts_the_fixed_fields_when_configured(
    episodic_store: PostgresEpisodicStore, episodic_settings: EpisodicSettings
) -> None:
    answer = {
        "situation": "Payments deploy failed: image tag missing from the registry",
        "action": "Pushed the v2.3 image",
        "outcome": "The deploy succeeded",
        "lesson": "Push the image before deploying a new tag",
        "tags": ["deploy", "registry"],
    }
    async with openai_test_server() as server:
        server.script(
            Reply(answer), Reply({"situation": "", "action": "", "outcome": "", "lesson": "", "tags": []})
        )
        llm = LLMClient(LLMSettings(api_base=server.base_url, model="small", max_retries=0))
        try:
            memory = EpisodicMemory(episodic_store, episodic_settings, llm=llm)
            await memory.record_turns("b", conversation("s", DEPLOY, COOKING))
            result = await memory.segment_session("b", "s", final=True)
        finally:
            await llm.close()
        request = server.requests[0].body
    assert result.method == "llm"
    deploy, cooking = result.episodes
    assert (deploy.situation, deploy.lesson, deploy.meta.tags) == (
        answer["situation"],
        answer["lesson"],
        ("deploy", "registry"),
    )
    assert deploy.tools == ("kubectl",) and len(deploy.meta.source_turn_ids) == len(DEPLOY)
    assert "image pull error" in request["messages"][1]["content"]
    assert request["response_format"]["json_schema"]["schema"]["required"] == [
        "situation",
        "action",
        "outcome",
        "lesson",
        "tags",
    ]
    # an unusable answer falls back to the rules for that segment
    assert "pasta" in cooking.situation and cooking.lesson == ""


async def test_embeddings_from_the_inference_service_find_a_shift_without_shared_words(
    episodic_store: PostgresEpisodicStore, episodic_settings: EpisodicSettings
) -> None:
    talk = [
        (Role.USER, "", "My flight to Tokyo leaves at seven in the morning."),
        (Role.ASSISTANT, "", "Plan to reach the airport two hours before departure."),
        (Role.USER, "", "Which terminal do international planes use?"),
        (Role.USER, "", "Also, my tomato plants have yellow leaves."),
        (Role.ASSISTANT, "", "Yellowing foliage often means the garden soil lacks nitrogen."),
        (Role.USER, "", "Should I add compost to the vegetable bed?"),
    ]
    async with serving(lambda: open_inference(InferenceSettings())) as inference:
        client = LayerClient(f"127.0.0.1:{inference.port}", inference_pb2_grpc.InferenceServiceStub)
        try:
            memory = EpisodicMemory(episodic_store, episodic_settings, embed=inference_embed(client))
            await memory.record_turns("b", conversation("s", talk))
            episodes = (await memory.segment_session("b", "s", final=True)).episodes
        finally:
            await client.close()
    assert [e.meta.source_turn_ids for e in episodes] == [("s-0", "s-1", "s-2"), ("s-3", "s-4", "s-5")]
