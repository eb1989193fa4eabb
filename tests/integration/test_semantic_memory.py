"""Semantic memory's learning: facts from turns, dedup, supersede chains, the review queue, the entity graph,
the cold tier and deletes, against the real inference service, Qdrant Edge and local mode over real gRPC."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from qdrant_client import AsyncQdrantClient, models

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.llm import LLMClient, LLMSettings
from hindsight.runtime.records import RecordMeta, Source, TimeRange, Trust, to_timestamp
from hindsight.runtime.testing import channel_to, serving
from hindsight.semantic.backend import connect, open_vector_store
from hindsight.semantic.embedder import InferenceEmbedder, describe_model
from hindsight.semantic.engine import SemanticEngine
from hindsight.semantic.llm_extract import LLMExtractor
from hindsight.semantic.payloads import point_id
from hindsight.semantic.records import RecordKind, SearchOptions, SemanticRecord, alias_name
from hindsight.semantic.service import open_service
from hindsight.semantic.settings import SemanticSettings
from tests.integration.rpcs import assert_rejected_naming
from tests.integration.semantic_layer import serve_semantic, turn_record
from tests.llm_test_server import Reply, openai_test_server

TIMEOUT = 30
FACT = semantic_pb2.RECORD_KIND_FACT
TURN = semantic_pb2.RECORD_KIND_TURN


BACKENDS = ["edge", "local"] + (["server"] if os.environ.get("QDRANT_URL") else [])
"""Every test runs on Qdrant Edge, on local mode (the stand-in for the server API), and on the Qdrant server
at ``QDRANT_URL`` when one is given."""


@pytest.fixture(params=BACKENDS)
async def stub(
    request: pytest.FixtureRequest, inference_addr: str, unique_name: str
) -> AsyncIterator[semantic_pb2_grpc.SemanticServiceStub]:
    if request.param == "server":  # a collection prefix of its own, dropped after
        settings = SemanticSettings(
            inference_addr=inference_addr, qdrant_url=os.environ["QDRANT_URL"], collection_prefix=unique_name
        )
    else:
        settings = SemanticSettings(
            inference_addr=inference_addr, qdrant_url="", qdrant_backend=request.param
        )
    async with serve_semantic(settings) as served:
        yield served
    if request.param == "server":
        client = AsyncQdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key or None)
        try:
            for description in (await client.get_aliases()).aliases:
                if description.alias_name.startswith(unique_name):
                    await client.delete_alias(description.alias_name)
            for collection in (await client.get_collections()).collections:
                if collection.name.startswith(unique_name):
                    await client.delete_collection(collection.name)
        finally:
            await client.close()


def at(year: int, month: int = 1, day: int = 1) -> datetime:
    return datetime(year, month, day, 12, tzinfo=UTC)


def turn(
    turn_id: str, text: str, when: datetime, speaker: str = "Alice", session: str = "s1"
) -> semantic_pb2.SemanticRecord:
    return turn_record(turn_id, text, when, speaker, session)


def fact(
    fact_id: str,
    subject: str,
    attribute: str,
    value: str,
    text: str,
    when: datetime,
    source: int = common_pb2.SOURCE_USER,
    turns: Sequence[str] = (),
    kind: int = FACT,
    importance: float = 0.0,
) -> semantic_pb2.SemanticRecord:
    return semantic_pb2.SemanticRecord(
        id=fact_id,
        kind=kind,
        text=text,
        subject=subject,
        attribute=attribute,
        value=value,
        session_id="s1",
        meta=common_pb2.RecordMeta(
            source_turn_ids=list(turns), source=source, time=to_timestamp(when), importance=importance
        ),
    )


async def upsert(stub: semantic_pb2_grpc.SemanticServiceStub, bank: str, *records) -> None:
    await stub.Upsert(semantic_pb2.UpsertRequest(bank_id=bank, records=list(records)), timeout=TIMEOUT)


async def search(
    stub: semantic_pb2_grpc.SemanticServiceStub, bank: str, query: str, **options
) -> list[semantic_pb2.ScoredRecord]:
    reply = await stub.Search(
        semantic_pb2.SearchRequest(bank_id=bank, query=query, **options), timeout=TIMEOUT
    )
    return list(reply.hits)


async def test_a_near_duplicate_fact_merges_newer_text_wins_and_provenance_is_unioned(
    stub, unique_name
) -> None:
    await upsert(
        stub,
        unique_name,
        fact("f1", "", "", "", "Alice's favourite colour is blue.", at(2024), turns=["t1"]),
        fact("other", "", "", "", "The quarterly report is due on Friday.", at(2024), turns=["t9"]),
    )
    await upsert(
        stub,
        unique_name,
        fact("f2", "", "", "", "Alice's favorite color is blue.", at(2024, 2), turns=["t2"]),
    )
    # turns are the episodic layer's records one to one: equal texts stay two records
    await upsert(stub, unique_name, turn("u1", "ok thanks", at(2024)), turn("u2", "ok thanks", at(2024)))

    facts = await search(stub, unique_name, "What colour does Alice like?", kinds=[FACT])
    assert [hit.record.id for hit in facts] == ["f1", "other"]
    merged = facts[0].record
    assert merged.text == "Alice's favorite color is blue."
    assert list(merged.meta.source_turn_ids) == ["t1", "t2"]
    assert merged.mention_count == 2
    turns = await search(stub, unique_name, "ok thanks", kinds=[TURN])
    assert sorted(hit.record.id for hit in turns) == ["u1", "u2"]

    # delivering the same record again changes nothing
    await upsert(
        stub,
        unique_name,
        fact("f2", "", "", "", "Alice's favorite color is blue.", at(2024, 2), turns=["t2"]),
    )
    again = await search(stub, unique_name, "What colour does Alice like?", kinds=[FACT])
    assert [(hit.record.id, hit.record.mention_count) for hit in again] == [("f1", 2), ("other", 1)]


async def test_three_successive_values_form_a_supersede_chain(stub, unique_name) -> None:
    for number, (city, year) in enumerate((("Paris", 2021), ("Rome", 2022), ("Berlin", 2023))):
        await upsert(
            stub,
            unique_name,
            fact(f"home{number}", "Alice", "lives_in", city, f"Alice lives in {city}.", at(year)),
        )

    current = await search(stub, unique_name, "Where does Alice live?", kinds=[FACT])
    assert [hit.record.value for hit in current] == ["Berlin"]
    assert not current[0].record.HasField("valid_to")
    everything = await search(stub, unique_name, "Where does Alice live?", kinds=[FACT], include_history=True)
    assert sorted(hit.record.value for hit in everything) == ["Berlin", "Paris", "Rome"]

    chain = (
        await stub.History(
            semantic_pb2.HistoryRequest(bank_id=unique_name, record_id="home2"), timeout=TIMEOUT
        )
    ).records
    assert [record.value for record in chain] == ["Paris", "Rome", "Berlin"]
    assert [record.superseded_by for record in chain] == ["home1", "home2", ""]
    assert [record.valid_to.ToDatetime(tzinfo=UTC) for record in chain[:2]] == [at(2022), at(2023)]
    by_key = await stub.History(
        semantic_pb2.HistoryRequest(bank_id=unique_name, subject="alice", attribute="lives_in"),
        timeout=TIMEOUT,
    )
    assert [record.id for record in by_key.records] == ["home0", "home1", "home2"]

    then = await search(
        stub, unique_name, "Where does Alice live?", kinds=[FACT], valid_at=to_timestamp(at(2022, 6))
    )
    assert [hit.record.value for hit in then] == ["Rome"]

    # an older statement arriving late becomes history; it does not replace the current value
    await upsert(
        stub, unique_name, fact("home-old", "Alice", "lives_in", "Lyon", "Alice lives in Lyon.", at(2019))
    )
    assert [
        hit.record.value for hit in await search(stub, unique_name, "Where does Alice live?", kinds=[FACT])
    ] == ["Berlin"]

    # deleting the current value makes the one before it current again
    await stub.Delete(semantic_pb2.DeleteRequest(bank_id=unique_name, ids=["home2"]), timeout=TIMEOUT)
    assert [
        hit.record.value for hit in await search(stub, unique_name, "Where does Alice live?", kinds=[FACT])
    ] == ["Rome"]


async def test_turns_yield_facts_that_keep_their_turn_and_supersede_each_other(stub, unique_name) -> None:
    await upsert(stub, unique_name, turn("t1", "Hi! I live in Paris and I love hiking.", at(2022)))
    await upsert(stub, unique_name, turn("t2", "Big news: I moved to Rome last month.", at(2023)))
    await upsert(stub, unique_name, turn("t3", "我叫小美，我住在上海。", at(2024), speaker="Mei"))

    facts = await search(stub, unique_name, "Where does Alice live?", kinds=[FACT], include_history=True)
    homes = {hit.record.value: hit.record for hit in facts if hit.record.attribute == "lives_in"}
    assert set(homes) == {"Paris", "Rome", "上海"}
    assert list(homes["Rome"].meta.source_turn_ids) == ["t2"] and homes["Rome"].subject == "Alice"
    assert homes["Paris"].superseded_by == homes["Rome"].id
    assert homes["上海"].subject == "Mei" and not homes["上海"].superseded_by
    likes = await search(stub, unique_name, "hobbies", kinds=[semantic_pb2.RECORD_KIND_PREFERENCE])
    assert [(hit.record.subject, hit.record.value) for hit in likes] == [("Alice", "hiking")]

    # the same turns delivered again (the episodic outbox retries) change nothing
    before = await search(stub, unique_name, "Alice", include_history=True, limit=50)
    await upsert(stub, unique_name, turn("t1", "Hi! I live in Paris and I love hiking.", at(2022)))
    await upsert(stub, unique_name, turn("t2", "Big news: I moved to Rome last month.", at(2023)))
    after = await search(stub, unique_name, "Alice", include_history=True, limit=50)
    assert [(h.record.id, h.record.mention_count, h.record.superseded_by) for h in after] == [
        (h.record.id, h.record.mention_count, h.record.superseded_by) for h in before
    ]
    assert (
        await stub.ListReviews(semantic_pb2.ListReviewsRequest(bank_id=unique_name), timeout=TIMEOUT)
    ).items == []


async def test_a_conflict_time_and_trust_cannot_settle_goes_to_the_review_queue(stub, unique_name) -> None:
    await upsert(
        stub, unique_name, fact("job1", "Alice", "works_at", "Acme", "Alice works at Acme.", at(2023))
    )
    rumour = fact(
        "job2",
        "Alice",
        "works_at",
        "Globex",
        "Alice works at Globex.",
        at(2024),
        source=common_pb2.SOURCE_EXTERNAL,
    )
    await upsert(stub, unique_name, rumour)

    queue = (
        await stub.ListReviews(semantic_pb2.ListReviewsRequest(bank_id=unique_name), timeout=TIMEOUT)
    ).items
    assert [(item.candidate.id, item.current.id) for item in queue] == [("job2", "job1")]
    assert "less trusted" in queue[0].reason
    current = await search(stub, unique_name, "Where does Alice work?", kinds=[FACT], include_history=True)
    assert [hit.record.value for hit in current] == ["Acme"]

    resolved = await stub.ResolveReview(
        semantic_pb2.ResolveReviewRequest(
            bank_id=unique_name, review_id=queue[0].id, resolution=semantic_pb2.RESOLUTION_ACCEPT
        ),
        timeout=TIMEOUT,
    )
    assert resolved.current.value == "Globex"
    assert [
        hit.record.value for hit in await search(stub, unique_name, "Where does Alice work?", kinds=[FACT])
    ] == ["Globex"]
    chain = (
        await stub.History(
            semantic_pb2.HistoryRequest(bank_id=unique_name, record_id="job1"), timeout=TIMEOUT
        )
    ).records
    assert [(record.value, record.superseded_by) for record in chain] == [("Acme", "job2"), ("Globex", "")]
    assert (
        await stub.ListReviews(semantic_pb2.ListReviewsRequest(bank_id=unique_name), timeout=TIMEOUT)
    ).items == []

    # the same moment, the same trust, two values: rejected, the candidate stays as history that never held
    await upsert(
        stub,
        unique_name,
        fact(
            "job3",
            "Alice",
            "works_at",
            "Initech",
            "Alice works at Initech.",
            at(2024),
            source=common_pb2.SOURCE_EXTERNAL,
        ),
    )
    [item] = (
        await stub.ListReviews(semantic_pb2.ListReviewsRequest(bank_id=unique_name), timeout=TIMEOUT)
    ).items
    kept = await stub.ResolveReview(
        semantic_pb2.ResolveReviewRequest(
            bank_id=unique_name, review_id=item.id, resolution=semantic_pb2.RESOLUTION_REJECT
        ),
        timeout=TIMEOUT,
    )
    assert kept.current.value == "Globex"
    history = await search(stub, unique_name, "Where does Alice work?", kinds=[FACT], include_history=True)
    assert {hit.record.value: hit.record.superseded_by for hit in history} == {
        "Acme": "job2",
        "Globex": "",
        "Initech": "job2",
    }
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await stub.ResolveReview(
            semantic_pb2.ResolveReviewRequest(
                bank_id=unique_name, review_id=item.id, resolution=semantic_pb2.RESOLUTION_ACCEPT
            ),
            timeout=TIMEOUT,
        )
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


FAMILY = [
    ("t1", "My sister is Beth. We grew up together in Leeds.", "Alice"),
    ("t2", "Beth's husband is Carl.", "Alice"),
    ("t3", "Carl works at Globex.", "Alice"),
] + [
    (f"d{i}", text, "Alice")
    for i, text in enumerate(
        [
            "I work at the city library.",
            "My favourite book is Dune.",
            "I love gardening on Sundays.",
            "I'm planning to learn the cello.",
            "I went to the dentist yesterday.",
            "I live in Leeds.",
        ]
    )
]


async def test_two_hop_expansion_finds_a_fact_the_query_never_mentions(stub, unique_name) -> None:
    await upsert(stub, unique_name, *[turn(i, text, at(2024), speaker=who) for i, text, who in FAMILY])
    entities = {
        e.name: e
        for e in (
            await stub.ListEntities(semantic_pb2.ListEntitiesRequest(bank_id=unique_name), timeout=TIMEOUT)
        ).entities
    }
    assert ("sister", "Beth") in {(r.type, r.target) for r in entities["Alice"].relations}
    assert ("husband", "Carl") in {(r.type, r.target) for r in entities["Beth"].relations}

    query = "Where does Alice's family work?"
    two = await search(
        stub, unique_name, query, kinds=[FACT], limit=6, expansion=semantic_pb2.EXPANSION_TWO_HOPS
    )
    found = [hit for hit in two if hit.record.subject == "Carl" and hit.record.attribute == "works_at"]
    assert len(found) == 1 and list(found[0].expanded_via) == ["Alice", "Beth", "Carl"]
    assert list(found[0].record.meta.source_turn_ids) == ["t3"]

    one = await search(
        stub, unique_name, query, kinds=[FACT], limit=6, expansion=semantic_pb2.EXPANSION_ONE_HOP
    )
    assert all(hit.record.subject != "Carl" for hit in one)
    assert any(list(hit.expanded_via) == ["Alice", "Beth"] for hit in one)
    off = await search(stub, unique_name, query, kinds=[FACT], limit=6, expansion=semantic_pb2.EXPANSION_OFF)
    assert all(hit.record.subject != "Carl" and not hit.expanded_via for hit in off)


async def test_cold_records_leave_default_search_and_stay_findable(stub, unique_name) -> None:
    await upsert(
        stub,
        unique_name,
        fact("old", "", "", "", "The office wifi password was hunter2.", at(2020), importance=0.1),
        fact("key", "", "", "", "The server room wifi password is swordfish.", at(2020), importance=0.9),
        fact("aside", "", "", "", "A note about the garden shed.", at(2020), importance=0.1),
    )
    moved = await stub.MarkCold(
        semantic_pb2.MarkColdRequest(bank_id=unique_name, ids=["aside"]), timeout=TIMEOUT
    )
    assert moved.moved_count == 1
    stale = await stub.MarkCold(
        semantic_pb2.MarkColdRequest(
            bank_id=unique_name,
            unused_before=to_timestamp(datetime.now(UTC) + timedelta(days=1)),
            importance_below=0.5,
        ),
        timeout=TIMEOUT,
    )
    assert stale.moved_count == 1  # "old"; "aside" is cold already, "key" is important

    assert [hit.record.id for hit in await search(stub, unique_name, "wifi password")] == ["key"]
    every = await search(stub, unique_name, "wifi password", include_cold=True)
    assert {hit.record.id: hit.record.cold for hit in every} == {"key": False, "old": True, "aside": True}
    assert every[0].record.id in {"old", "key"}

    # written again, a cold record comes back to the hot tier (never in both)
    await upsert(
        stub,
        unique_name,
        fact("old", "", "", "", "The office wifi password was hunter2.", at(2020), importance=0.1),
    )
    again = await search(stub, unique_name, "wifi password", include_cold=True)
    assert sorted((hit.record.id, hit.record.cold) for hit in again) == [
        ("aside", True),
        ("key", False),
        ("old", False),
    ]
    gone = await stub.Delete(
        semantic_pb2.DeleteRequest(bank_id=unique_name, ids=["aside", "old"]), timeout=TIMEOUT
    )
    assert gone.deleted_count == 2


async def test_delete_by_session_and_whole_bank_reach_every_tier_the_graph_and_the_queue(
    stub, unique_name
) -> None:
    mine, theirs = f"{unique_name}-a", f"{unique_name}-b"
    for bank in (mine, theirs):
        await upsert(
            stub,
            bank,
            turn("t1", "My sister is Beth and I live in Oslo.", at(2023), session="s1"),
            turn("t2", "The weather is nice today.", at(2023), session="s2"),
        )
        await upsert(
            stub,
            bank,
            fact(
                "rumour",
                "Alice",
                "lives_in",
                "Bergen",
                "Alice lives in Bergen.",
                at(2024),
                source=common_pb2.SOURCE_EXTERNAL,
            ),
        )
    by_session = await stub.Delete(semantic_pb2.DeleteRequest(bank_id=mine, session_id="s2"), timeout=TIMEOUT)
    assert by_session.deleted_count == 1
    left = await search(stub, mine, "anything", include_history=True, include_cold=True, limit=50)
    assert "t2" not in {hit.record.id for hit in left} and "t1" in {hit.record.id for hit in left}

    await stub.MarkCold(semantic_pb2.MarkColdRequest(bank_id=mine, ids=["t1"]), timeout=TIMEOUT)
    whole = await stub.Delete(semantic_pb2.DeleteRequest(bank_id=mine, whole_bank=True), timeout=TIMEOUT)
    assert whole.deleted_count == len(left)
    assert await search(stub, mine, "anything", include_history=True, include_cold=True) == []
    assert not (
        await stub.ListEntities(semantic_pb2.ListEntitiesRequest(bank_id=mine), timeout=TIMEOUT)
    ).entities
    assert not (await stub.ListReviews(semantic_pb2.ListReviewsRequest(bank_id=mine), timeout=TIMEOUT)).items
    # the other bank keeps everything
    assert len(await search(stub, theirs, "anything", limit=50)) == len(left) + 1
    assert (
        await stub.ListEntities(semantic_pb2.ListEntitiesRequest(bank_id=theirs), timeout=TIMEOUT)
    ).entities
    assert (
        len((await stub.ListReviews(semantic_pb2.ListReviewsRequest(bank_id=theirs), timeout=TIMEOUT)).items)
        == 1
    )


SISTERS = ["Anna", "Bella", "Cara", "Dora", "Edna", "Fiona", "Gina", "Hanna", "Ida", "Jana"]


class CountingEmbedder(InferenceEmbedder):
    """The real embedder, counting its calls to the inference layer."""

    calls = 0

    async def embed(self, bank_id, texts, query=False):
        self.calls += -(-len(texts) // 64)
        return await super().embed(bank_id, texts, query)


async def test_extracted_facts_are_embedded_in_the_same_batched_call_as_their_turns(
    inference_addr, unique_name
) -> None:
    client = LayerClient(inference_addr, inference_pb2_grpc.InferenceServiceStub)
    try:
        model = await describe_model(client, "", wait_seconds=5)
        embedder = CountingEmbedder(client, model)
        async with open_vector_store(SemanticSettings(), model) as store:
            engine = SemanticEngine(store, embedder)
            turns = [
                SemanticRecord(
                    id=f"t{i}",
                    text=f"I live in City{i}. I love sport number {i}. My sister is {SISTERS[i]}.",
                    speaker=f"Person{i}",
                    meta=RecordMeta(source=Source.USER, trust=Trust.HIGH, time=at(2024)),
                )
                for i in range(10)
            ]
            assert await engine.upsert(unique_name, turns) == 10
            assert embedder.calls == 1  # 10 turns + 30 facts: one Embed call
            [vector] = await embedder.embed(unique_name, ["City3"])
            only_facts = SearchOptions(kinds=frozenset({RecordKind.FACT}))
            facts = await store.search(unique_name, vector, 50, TimeRange(), only_facts)
            assert len([hit for hit in facts if hit.record.kind is RecordKind.FACT]) == 20
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (semantic_pb2.SearchRequest(bank_id="b", query="q", min_score=1.5), "min_score"),
        (semantic_pb2.SearchRequest(bank_id="b", query="q", kinds=[42]), "kinds[0]"),
        (semantic_pb2.SearchRequest(bank_id="b", query="q", tags=["a", ""]), "tags[1]"),
        (semantic_pb2.DeleteRequest(bank_id="b", ids=["x"], whole_bank=True), "whole_bank"),
        (semantic_pb2.MarkColdRequest(bank_id="b"), "ids"),
        (semantic_pb2.MarkColdRequest(bank_id="b", importance_below=0.5), "unused_before"),
        (semantic_pb2.ResolveReviewRequest(bank_id="b", review_id="r"), "resolution"),
        (semantic_pb2.HistoryRequest(bank_id="b", subject="Alice"), "record_id"),
        (
            semantic_pb2.UpsertRequest(
                bank_id="b", records=[semantic_pb2.SemanticRecord(id="x", text="t", subject="Alice")]
            ),
            "records[0].attribute",
        ),
        (
            semantic_pb2.UpsertRequest(
                bank_id="b", records=[semantic_pb2.SemanticRecord(id="x", text="t", confidence=2)]
            ),
            "records[0].confidence",
        ),
    ],
)
async def test_invalid_requests_are_rejected_naming_the_field(stub, request_, field) -> None:
    method = {
        semantic_pb2.UpsertRequest: stub.Upsert,
        semantic_pb2.SearchRequest: stub.Search,
        semantic_pb2.DeleteRequest: stub.Delete,
        semantic_pb2.MarkColdRequest: stub.MarkCold,
        semantic_pb2.ResolveReviewRequest: stub.ResolveReview,
        semantic_pb2.HistoryRequest: stub.History,
    }[type(request_)]
    await assert_rejected_naming(method(request_, timeout=TIMEOUT), field)


async def test_the_llm_extractor_adds_facts_after_the_reply_and_a_failed_answer_leaves_the_rules(
    inference_addr, unique_name
) -> None:
    client = LayerClient(inference_addr, inference_pb2_grpc.InferenceServiceStub)
    try:
        model = await describe_model(client, "", wait_seconds=5)
        async with openai_test_server() as server, open_vector_store(SemanticSettings(), model) as store:
            llm = LLMClient(
                LLMSettings(api_base=server.base_url, model="test", max_retries=0, backoff_seconds=0)
            )
            engine = SemanticEngine(store, InferenceEmbedder(client, model), llm=LLMExtractor(llm, 10))
            server.script(
                Reply(
                    {
                        "facts": [
                            {
                                "turn": 2,
                                "kind": "fact",
                                "subject": "Alice",
                                "attribute": "owns",
                                "value": "a red bicycle",
                                "text": "Alice owns a red bicycle.",
                            },
                            {
                                "turn": 9,
                                "kind": "fact",
                                "subject": "X",
                                "attribute": "y",
                                "value": "z",
                                "text": "t",
                            },
                        ]
                    }
                ),
                Reply(status=500),
            )
            first = [
                SemanticRecord(
                    id="t1", text="I live in Oslo.", speaker="Alice", meta=RecordMeta(time=at(2024))
                ),
                SemanticRecord(
                    id="t2", text="Got a red bike today!", speaker="Alice", meta=RecordMeta(time=at(2024))
                ),
            ]
            await engine.upsert(unique_name, first)
            await engine.drain()
            await engine.upsert(
                unique_name,
                [
                    SemanticRecord(
                        id="t3", text="I love tea.", speaker="Alice", meta=RecordMeta(time=at(2024))
                    )
                ],
            )
            await engine.drain()
            await llm.close()
            [vector] = await engine.embedder.embed(unique_name, ["What does Alice have?"], query=True)
            facts = await store.search(
                unique_name,
                vector,
                50,
                TimeRange(),
                SearchOptions(kinds=frozenset(RecordKind) - {RecordKind.TURN}),
            )
            found = {(hit.record.attribute, hit.record.value): hit.record for hit in facts}
            assert set(found) == {("lives_in", "Oslo"), ("owns", "a red bicycle"), ("likes", "tea")}
            assert found[("owns", "a red bicycle")].meta.source_turn_ids == ("t2",)
            assert found[("owns", "a red bicycle")].confidence == pytest.approx(0.75)
            assert (
                "Turns:\n1. [2024-01-01] Alice: I live in Oslo."
                in server.requests[0].body["messages"][1]["content"]
            )
    finally:
        await client.close()


async def test_points_written_before_validity_and_tiers_existed_stay_current_and_can_go_cold(
    inference_addr, tmp_path, unique_name
) -> None:
    settings = SemanticSettings(inference_addr=inference_addr, qdrant_path=str(tmp_path / "qdrant"))
    client = LayerClient(inference_addr, inference_pb2_grpc.InferenceServiceStub)
    try:
        model = await describe_model(client, "", wait_seconds=5)
        [vector] = await InferenceEmbedder(client, model).embed(unique_name, ["The door code is 4711."])
    finally:
        await client.close()
    async with open_vector_store(settings, model):
        pass  # creates the collections
    qdrant = connect(settings)
    try:
        older_payload = {
            "bank_id": unique_name,
            "record_id": "legacy",
            "kind": "fact",
            "text": "The door code is 4711.",
            "speaker": "",
            "session_id": "",
            **RecordMeta(importance=0.1).to_fields(),
            "time_ts": None,
            "time": None,
        }
        await qdrant.upsert(
            alias_name(settings.collection_prefix),
            points=[
                models.PointStruct(id=point_id(unique_name, "legacy"), vector=vector, payload=older_payload)
            ],
        )
    finally:
        await qdrant.close()
    async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
        stub = semantic_pb2_grpc.SemanticServiceStub(channel)
        assert [hit.record.id for hit in await search(stub, unique_name, "door code")] == ["legacy"]
        then = await search(stub, unique_name, "door code", valid_at=to_timestamp(at(2020)))
        assert [hit.record.id for hit in then] == ["legacy"]
        moved = await stub.MarkCold(
            semantic_pb2.MarkColdRequest(
                bank_id=unique_name, unused_before=to_timestamp(at(2000)), importance_below=0.5
            ),
            timeout=TIMEOUT,
        )
        assert moved.moved_count == 1
        assert [
            hit.record.cold for hit in await search(stub, unique_name, "door code", include_cold=True)
        ] == [True]
