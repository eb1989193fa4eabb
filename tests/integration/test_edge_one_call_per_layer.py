"""A recall sends one call to each layer, carrying the query and its rewrites; each layer merges them.

Every layer of the mesh runs with a recorder inside its server interceptor, so the tests count the
calls each layer really answered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeAlias

import pytest

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.inference.v1 import inference_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc
from hindsight.mcp_edge.domain import ALL_LAYERS, LayerName, RecallQuery
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.records import RecordMeta, Role, TimeRange, Turn, to_timestamp
from tests.integration.mesh import CallRecorder, LayerAddresses, layer_mesh

BANK = "one-call-bank"
TIMEOUT = 20
NOW = datetime(2025, 5, 12, 12, tzinfo=UTC)
SearchRequest: TypeAlias = (
    working_pb2.SearchRecentRequest
    | episodic_pb2.SearchTurnsRequest
    | semantic_pb2.SearchRequest
    | reflect_pb2.SearchLessonsRequest
)
SEARCHES: dict[LayerName, tuple[str, type[SearchRequest]]] = {
    LayerName.WORKING: (
        "/hindsight.working.v1.WorkingMemoryService/SearchRecent",
        working_pb2.SearchRecentRequest,
    ),
    LayerName.EPISODIC: (
        "/hindsight.episodic.v1.EpisodicService/SearchTurns",
        episodic_pb2.SearchTurnsRequest,
    ),
    LayerName.SEMANTIC: ("/hindsight.semantic.v1.SemanticService/Search", semantic_pb2.SearchRequest),
    LayerName.REFLECT: (
        "/hindsight.reflect.v1.ReflectService/SearchLessons",
        reflect_pb2.SearchLessonsRequest,
    ),
}
EMBED = "/hindsight.inference.v1.InferenceService/Embed"
EMBED_STREAM = "/hindsight.inference.v1.InferenceService/EmbedStream"
TURNS = [
    ("t1", "Caroline", "I adopted a golden retriever puppy named Biscuit last weekend.", 3, ("pets",)),
    ("t2", "Caroline", "Biscuit chewed through the garden hose this morning.", 1, ("pets", "home")),
    ("t3", "Caroline", "My sister Melanie is moving to Lisbon for a job at a robotics startup.", 20, ()),
]


@dataclass(frozen=True)
class RecordedMesh:
    """A mesh whose every server records the calls it answers, and an edge engine over it."""

    layers: LayerAddresses
    recorder: CallRecorder
    engine: MemoryEngine


@pytest.fixture(scope="module")
async def mesh(
    database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RecordedMesh]:
    recorder = CallRecorder()
    qdrant = tmp_path_factory.mktemp("qdrant")
    async with (
        layer_mesh(database_url, redis_url, qdrant, interceptors=[recorder]) as layers,
        open_engine(layers.edge_settings(llm_rewrite=False, record_access=False)) as engine,
    ):
        turns = [
            Turn(
                id=turn_id,
                session_id="s1",
                text=text,
                role=Role.USER,
                speaker=speaker,
                meta=RecordMeta(time=NOW - timedelta(days=days_ago), tags=tags),
            )
            for turn_id, speaker, text, days_ago, tags in TURNS
        ]
        assert (await engine.retain(BANK, turns)).indexed
        yield RecordedMesh(layers, recorder, engine)


async def test_a_recall_with_rewrites_asks_each_layer_once_with_every_phrasing(mesh: RecordedMesh) -> None:
    start = len(mesh.recorder.calls)
    result = await mesh.engine.recall(
        RecallQuery(bank_id=BANK, query="Did Biscuit chew 2 things last weekend?", reference_time=NOW)
    )
    phrasings = result.analysis.rewrites
    assert len(phrasings) == 3, phrasings  # the query, without its time words, names and content words
    assert not result.partial and result.memories[0].id in {"t1", "t2"}
    for layer in ALL_LAYERS:
        method, kind = SEARCHES[layer]
        requests = mesh.recorder.since(start, method, kind, BANK)
        # the warnings search over held-back turns is a second, separate episodic call: not a memory search
        searches = [r for r in requests if not getattr(r, "quarantined_only", False)]
        if layer is LayerName.WORKING:  # it weighs 0 in fusion (the default): not asked
            assert searches == [] and layer not in {o.layer for o in result.outcomes}
            continue
        assert len(searches) == 1, (layer, len(searches))
        [request] = searches
        # rule rewrites go to keyword search; by meaning they find the query's memories again
        expected = phrasings[:1] if layer is LayerName.SEMANTIC else phrasings
        assert (request.query, *request.rewrites) == expected, layer
        assert request.rewrite_weight == pytest.approx(mesh.engine.settings.rewrite_weight)


async def test_rule_rewrites_are_searched_by_meaning_too_when_the_setting_says_so(mesh: RecordedMesh) -> None:
    settings = mesh.layers.edge_settings(llm_rewrite=False, record_access=False, rewrites_by_meaning=True)
    async with open_engine(settings) as engine:
        start = len(mesh.recorder.calls)
        result = await engine.recall(
            RecallQuery(bank_id=BANK, query="Did Biscuit chew 2 things last weekend?", reference_time=NOW)
        )
    phrasings = result.analysis.rewrites
    assert len(phrasings) == 3, phrasings
    assert not result.partial and result.memories[0].id in {"t1", "t2"}
    for layer in (LayerName.EPISODIC, LayerName.SEMANTIC, LayerName.REFLECT):
        method, kind = SEARCHES[layer]
        searches = mesh.recorder.since(start, method, kind, BANK)
        [request] = [r for r in searches if not getattr(r, "quarantined_only", False)]
        assert (request.query, *request.rewrites) == phrasings, layer


async def test_a_weightless_layer_is_asked_when_the_recall_asks_for_it_alone(mesh: RecordedMesh) -> None:
    start = len(mesh.recorder.calls)
    result = await mesh.engine.recall(
        RecallQuery(
            bank_id=BANK, query="Biscuit chewed the hose", layers=(LayerName.WORKING,), reference_time=NOW
        )
    )
    method, kind = SEARCHES[LayerName.WORKING]
    assert len(mesh.recorder.since(start, method, kind, BANK)) == 1
    assert [(o.layer, o.ok) for o in result.outcomes] == [(LayerName.WORKING, True)]
    assert result.memories and result.memories[0].id == "t2"


async def test_the_semantic_layer_embeds_every_phrasing_of_a_recall_in_one_batch(mesh: RecordedMesh) -> None:
    settings = mesh.layers.edge_settings(llm_rewrite=False, record_access=False, rewrites_by_meaning=True)
    async with open_engine(settings) as engine:
        start = len(mesh.recorder.calls)
        result = await engine.recall(
            RecallQuery(bank_id=BANK, query="Which 2 cities is Melanie moving between?", reference_time=NOW)
        )
    assert len(result.analysis.rewrites) == 2, result.analysis.rewrites
    unary = mesh.recorder.since(start, EMBED, inference_pb2.EmbedRequest, BANK)
    streamed = [
        item.request
        for message in mesh.recorder.since(start, EMBED_STREAM, inference_pb2.EmbedStreamRequest)
        for item in message.items
        if item.request.bank_id == BANK
    ]
    queries = [r for r in (*unary, *streamed) if r.purpose == inference_pb2.EMBED_PURPOSE_QUERY]
    assert [tuple(r.texts) for r in queries] == [result.analysis.rewrites]


async def test_the_layers_filter_each_phrasing_by_tag_and_time_before_merging(mesh: RecordedMesh) -> None:
    week = TimeRange(NOW - timedelta(days=7), NOW)
    working = LayerClient(mesh.layers.working, working_pb2_grpc.WorkingMemoryServiceStub)
    semantic = LayerClient(mesh.layers.semantic, semantic_pb2_grpc.SemanticServiceStub)
    try:
        recent = await working.call(
            "SearchRecent",
            working_pb2.SearchRecentRequest(
                bank_id=BANK,
                query="Biscuit puppy garden",
                rewrites=["Melanie Lisbon robotics"],
                time_range=week.to_pb(),
                tags=["PETS"],
            ),
            TIMEOUT,
        )
        assert {hit.turn.id for hit in recent.hits} == {"t1", "t2"}  # t3: another tag, and three weeks ago
        assert max(hit.score for hit in recent.hits) == pytest.approx(1.0)  # merged: scaled to 0..1
        turns_tagged = semantic_pb2.SearchRequest(
            bank_id=BANK, query="Biscuit", tags=["pets", "home"], kinds=[semantic_pb2.RECORD_KIND_TURN]
        )
        any_tag = await semantic.call("Search", turns_tagged, TIMEOUT)
        assert {hit.record.id for hit in any_tag.hits} == {"t1", "t2"}
        turns_tagged.rewrites.append("the dog")
        turns_tagged.all_tags = True
        every_tag = await semantic.call("Search", turns_tagged, TIMEOUT)
        assert {hit.record.id for hit in every_tag.hits} == {"t2"}
    finally:
        await working.close()
        await semantic.close()


async def test_a_lesson_found_by_several_phrasings_counts_one_hit(mesh: RecordedMesh) -> None:
    bank = "one-call-lessons"
    episode = episodic_pb2.Episode(
        session_id="s-lessons",
        situation="deploying the web app",
        action="installed from the local wheel cache",
        outcome="deployed in a minute",
        lesson="Install from the local wheel cache when deploying the web app.",
        task_type="deploy",
        result=episodic_pb2.OUTCOME_SUCCESS,
        meta=common_pb2.RecordMeta(time=to_timestamp(NOW)),
    )
    await mesh.engine.write_episode(bank, episode)
    assert (await mesh.engine.reflect(bank)).lessons
    reflect = LayerClient(mesh.layers.reflect, reflect_pb2_grpc.ReflectServiceStub)
    try:
        found = await reflect.call(
            "SearchLessons",
            reflect_pb2.SearchLessonsRequest(
                bank_id=bank, query="deploy the web app", rewrites=["wheel cache", "deploying"], limit=5
            ),
            TIMEOUT,
        )
        assert found.hits and 0.5 < found.hits[0].score <= 1.0  # calibrated relevance, not a scaled rank
        listed = await reflect.call("ListLessons", reflect_pb2.ListLessonsRequest(bank_id=bank), TIMEOUT)
        hits = {lesson.id: lesson.hit_count for lesson in listed.lessons}
        assert [hits[hit.lesson.id] for hit in found.hits] == [1] * len(found.hits)
    finally:
        await reflect.close()
