"""Lineage as data in the semantic layer, over real gRPC against the inference service and Qdrant Edge.

Every derived record (fact, entity mention, review item) lists the turns it stands on: a Delete of source
turns subtracts them, a record dies with the last of them, and the tombstones a Delete leaves drop late
writes of deleted turns. Concurrent Upserts into one bank settle as if they ran one after the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.semantic.settings import SemanticSettings
from tests.integration.semantic_layer import serve_semantic, turn_record

TIMEOUT = 60
TURN = semantic_pb2.RECORD_KIND_TURN
FACT = semantic_pb2.RECORD_KIND_FACT
START = datetime(2024, 3, 1, 12, tzinfo=UTC)


@pytest.fixture
async def stub(inference_addr: str) -> AsyncIterator[semantic_pb2_grpc.SemanticServiceStub]:
    settings = SemanticSettings(inference_addr=inference_addr, qdrant_url="", qdrant_backend="edge")
    async with serve_semantic(settings) as served:
        yield served


def turn(
    turn_id: str,
    text: str,
    when: datetime,
    speaker: str = "Caroline",
    cites: Sequence[str] = (),
    source: int = common_pb2.SOURCE_USER,
    session: str = "s1",
) -> semantic_pb2.SemanticRecord:
    return turn_record(turn_id, text, when, speaker, session, cites=cites, source=source)


async def upsert(stub: semantic_pb2_grpc.SemanticServiceStub, bank: str, *records) -> None:
    await stub.Upsert(semantic_pb2.UpsertRequest(bank_id=bank, records=list(records)), timeout=TIMEOUT)


async def delete(stub: semantic_pb2_grpc.SemanticServiceStub, bank: str, *turn_ids: str, **more) -> int:
    reply = await stub.Delete(
        semantic_pb2.DeleteRequest(bank_id=bank, ids=list(turn_ids), source_turn_ids=list(turn_ids), **more),
        timeout=TIMEOUT,
    )
    return reply.deleted_count


async def facts(
    stub: semantic_pb2_grpc.SemanticServiceStub, bank: str, attribute: str, subject: str = "Caroline"
):
    reply = await stub.History(
        semantic_pb2.HistoryRequest(bank_id=bank, subject=subject, attribute=attribute), timeout=TIMEOUT
    )
    return list(reply.records)


async def entity_names(stub: semantic_pb2_grpc.SemanticServiceStub, bank: str) -> list[str]:
    reply = await stub.ListEntities(
        semantic_pb2.ListEntitiesRequest(bank_id=bank, limit=200), timeout=TIMEOUT
    )
    return [entity.name for entity in reply.entities]


async def page(stub: semantic_pb2_grpc.SemanticServiceStub, bank: str, name: str):
    return await stub.GetEntityPage(
        semantic_pb2.GetEntityPageRequest(bank_id=bank, entity=name, mention_limit=100), timeout=TIMEOUT
    )


async def reviews(stub: semantic_pb2_grpc.SemanticServiceStub, bank: str):
    reply = await stub.ListReviews(semantic_pb2.ListReviewsRequest(bank_id=bank), timeout=TIMEOUT)
    return list(reply.items)


async def test_purging_the_only_turn_that_mentions_a_person_takes_them_off_every_page(
    stub, unique_name
) -> None:
    await upsert(
        stub,
        unique_name,
        turn("t1", "I went hiking with Jonathan in the mountains.", START),
        turn("t2", "I painted a lake sunrise last weekend.", START + timedelta(days=1)),
        turn("t3", "My sister is Beth.", START + timedelta(days=2)),
    )
    assert "Jonathan" in await entity_names(stub, unique_name)
    assert "Jonathan" in dict(
        (r.name, r.count) for r in (await page(stub, unique_name, "Caroline")).entity.related
    )

    await delete(stub, unique_name, "t1")
    assert "Jonathan" not in await entity_names(stub, unique_name)
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await page(stub, unique_name, "Jonathan")
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    caroline = (await page(stub, unique_name, "Caroline")).entity
    assert "Jonathan" not in {r.name for r in caroline.related}
    assert (caroline.mention_count, caroline.spoken_count) == (2, 2)
    assert caroline.first_seen.ToDatetime(tzinfo=UTC) == START + timedelta(days=1)

    await delete(stub, unique_name, "t3")  # the relation came from t3's fact: it goes with it
    assert "Beth" not in await entity_names(stub, unique_name)
    caroline = (await page(stub, unique_name, "Caroline")).entity
    assert not [r for r in caroline.relations if r.target == "Beth"]
    assert caroline.mention_count == 1


async def test_deleting_the_old_version_of_an_updated_turn_keeps_the_new_version_findable(
    stub, unique_name
) -> None:
    await upsert(stub, unique_name, turn("old", "I live in Boston.", START))
    await upsert(stub, unique_name, turn("new", "I live in Denver.", START, cites=["old"]))
    [current] = [f for f in await facts(stub, unique_name, "lives_in") if not f.superseded_by]
    assert current.value == "Denver"

    await delete(stub, unique_name, "old")
    hits = (
        await stub.Search(
            semantic_pb2.SearchRequest(bank_id=unique_name, query="Where does Caroline live?"),
            timeout=TIMEOUT,
        )
    ).hits
    assert "new" in {hit.record.id for hit in hits}
    assert [(f.value, f.superseded_by) for f in await facts(stub, unique_name, "lives_in")] == [
        ("Denver", "")
    ]


async def test_a_fact_lives_while_one_of_its_source_turns_lives(stub, unique_name) -> None:
    await upsert(stub, unique_name, turn("t1", "I work at Acme.", START))
    await upsert(stub, unique_name, turn("t2", "I work at Acme.", START + timedelta(days=1)))
    [fact] = await facts(stub, unique_name, "works_at")
    assert {"t1", "t2"} <= set(fact.meta.source_turn_ids)

    await delete(stub, unique_name, "t1")
    [kept] = await facts(stub, unique_name, "works_at")
    assert kept.value == "Acme" and "t1" not in kept.meta.source_turn_ids

    await delete(stub, unique_name, "t2")
    assert await facts(stub, unique_name, "works_at") == []


async def test_a_review_lists_its_source_turns_and_dies_with_them(stub, unique_name) -> None:
    await upsert(stub, unique_name, turn("t1", "I live in Boston.", START))
    await upsert(stub, unique_name, turn("t2", "I live in Denver.", START, source=common_pb2.SOURCE_USER))
    [item] = await reviews(stub, unique_name)
    assert list(item.source_turn_ids) == ["t2"]

    await delete(stub, unique_name, "t2")
    assert await reviews(stub, unique_name) == []
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await stub.ResolveReview(
            semantic_pb2.ResolveReviewRequest(
                bank_id=unique_name, review_id=item.id, resolution=semantic_pb2.RESOLUTION_ACCEPT
            ),
            timeout=TIMEOUT,
        )
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    assert [f.value for f in await facts(stub, unique_name, "lives_in")] == ["Boston"]


async def test_a_late_write_of_a_purged_turn_is_dropped_and_an_archived_one_comes_back(
    stub, unique_name
) -> None:
    await upsert(stub, unique_name, turn("t1", "I live in Boston.", START))
    await delete(stub, unique_name, "t1")
    await upsert(stub, unique_name, turn("t1", "I live in Boston.", START))  # an indexing call in flight
    assert await facts(stub, unique_name, "lives_in") == []
    assert "t1" not in {
        hit.record.id
        for hit in (
            await stub.Search(
                semantic_pb2.SearchRequest(bank_id=unique_name, query="Boston"), timeout=TIMEOUT
            )
        ).hits
    }

    await upsert(stub, unique_name, turn("t2", "I work at Acme.", START))
    await delete(stub, unique_name, "t2", archived=True)
    await upsert(stub, unique_name, turn("t2", "I work at Acme.", START))  # a restore indexes it again
    assert [f.value for f in await facts(stub, unique_name, "works_at")] == ["Acme"]


async def test_concurrent_upserts_into_one_bank_leave_one_current_value_and_exact_counts(
    stub, unique_name
) -> None:
    cities = ["Boston", "Denver", "Austin", "Seattle", "Chicago", "Portland", "Phoenix", "Dallas"]
    batches = [
        [turn(f"t{i}", f"I live in {city} and my friend Jonathan visited me.", START + timedelta(days=i))]
        for i, city in enumerate(cities)
    ]
    await asyncio.gather(*(upsert(stub, unique_name, *batch) for batch in batches))
    chain = await facts(stub, unique_name, "lives_in")
    assert [f.value for f in chain if not f.superseded_by] == ["Dallas"]
    assert len(chain) == len(cities)
    for name in ("Caroline", "Jonathan"):
        entity = (await page(stub, unique_name, name)).entity
        assert entity.mention_count == len(cities), name


async def test_an_upsert_retried_reaches_the_same_end_state(stub, unique_name) -> None:
    first = [
        turn("t1", "I live in Boston.", START),
        turn("t2", "I live in Denver.", START + timedelta(days=1)),
    ]
    await upsert(stub, unique_name, *first)
    once = [(f.id, f.value, f.superseded_by) for f in await facts(stub, unique_name, "lives_in")]
    caroline = (await page(stub, unique_name, "Caroline")).entity
    await upsert(stub, unique_name, *first)
    assert [(f.id, f.value, f.superseded_by) for f in await facts(stub, unique_name, "lives_in")] == once
    assert (await page(stub, unique_name, "Caroline")).entity == caroline


async def test_a_purged_session_leaves_no_mention_and_a_purged_bank_takes_no_late_write(
    stub, unique_name
) -> None:
    await upsert(
        stub,
        unique_name,
        turn("t1", "I went hiking with Jonathan in the mountains.", START, session="hike"),
        turn("t2", "I painted a lake sunrise last weekend.", START + timedelta(days=1), session="art"),
    )
    await stub.Delete(semantic_pb2.DeleteRequest(bank_id=unique_name, session_id="hike"), timeout=TIMEOUT)
    assert "Jonathan" not in await entity_names(stub, unique_name)
    assert (await page(stub, unique_name, "Caroline")).entity.mention_count == 1
    await upsert(stub, unique_name, turn("t1", "I went hiking with Jonathan.", START, session="hike"))
    assert "Jonathan" not in await entity_names(stub, unique_name)

    await stub.Delete(semantic_pb2.DeleteRequest(bank_id=unique_name, whole_bank=True), timeout=TIMEOUT)
    await upsert(stub, unique_name, turn("t2", "I painted a lake sunrise.", START, session="art"))
    assert await entity_names(stub, unique_name) == []


async def test_a_review_whose_current_value_is_deleted_settles_its_candidate(stub, unique_name) -> None:
    await upsert(stub, unique_name, turn("t1", "I live in Boston.", START))
    await upsert(stub, unique_name, turn("t2", "I live in Denver.", START))
    assert len(await reviews(stub, unique_name)) == 1

    await delete(stub, unique_name, "t1")
    assert await reviews(stub, unique_name) == []
    assert [(f.value, f.superseded_by) for f in await facts(stub, unique_name, "lives_in")] == [
        ("Denver", "")
    ]


async def _forget_the_new_version_of_an_update(stub, bank: str) -> None:
    """Paris (a live turn), then Boston, updated to Denver; the old version leaves by its id alone (the
    episodic outbox: a row no longer live), then the new version is forgotten (an archive)."""
    await upsert(stub, bank, turn("t0", "I live in Paris.", START - timedelta(days=30)))
    await upsert(stub, bank, turn("old", "I live in Boston.", START))
    await upsert(stub, bank, turn("new", "I live in Denver.", START, cites=["old"]))
    await stub.Delete(semantic_pb2.DeleteRequest(bank_id=bank, ids=["old"]), timeout=TIMEOUT)
    await delete(stub, bank, "new", archived=True)


async def test_a_value_an_update_replaced_stays_replaced_when_the_new_version_is_forgotten(
    stub, unique_name
) -> None:
    await _forget_the_new_version_of_an_update(stub, unique_name)
    chain = {f.value: f for f in await facts(stub, unique_name, "lives_in")}
    assert set(chain) == {"Paris", "Boston"}, chain
    assert chain["Boston"].superseded_by, "the replaced value stands on an archived turn only"
    assert [v for v, f in chain.items() if not f.superseded_by] == ["Paris"]
    caroline = await page(stub, unique_name, "Caroline")
    assert [f.value for f in caroline.facts if f.attribute == "lives_in" and not f.superseded_by] == ["Paris"]

    await upsert(stub, unique_name, turn("new", "I live in Denver.", START, cites=["old"]))  # a restore
    chain = {f.value: f for f in await facts(stub, unique_name, "lives_in")}
    assert [v for v, f in chain.items() if not f.superseded_by] == ["Denver"], chain
    assert chain["Boston"].superseded_by == chain["Denver"].id


async def test_restoring_the_old_version_of_a_forgotten_update_brings_its_value_back(
    stub, unique_name
) -> None:
    await _forget_the_new_version_of_an_update(stub, unique_name)
    await upsert(stub, unique_name, turn("old", "I live in Boston.", START))  # a restore of the old version
    chain = {f.value: f for f in await facts(stub, unique_name, "lives_in")}
    assert [v for v, f in chain.items() if not f.superseded_by] == ["Boston"], chain
    assert chain["Paris"].superseded_by == chain["Boston"].id


async def test_a_review_drawn_from_an_updated_version_goes_and_never_becomes_the_current_value(
    stub, unique_name
) -> None:
    """An outside report contradicting the user waits for review; the report is then corrected (an
    update) and the user's turn purged: the corrected report settles, never the text it replaced."""
    outside = common_pb2.SOURCE_EXTERNAL
    await upsert(stub, unique_name, turn("u1", "I live in Paris.", START, session="home"))
    await upsert(
        stub, unique_name, turn("x1", "I live in Boston.", START + timedelta(days=1), source=outside)
    )
    assert [item.candidate.value for item in await reviews(stub, unique_name)] == ["Boston"]

    later = START + timedelta(days=2)
    await upsert(stub, unique_name, turn("x2", "I live in Denver.", later, cites=["x1"], source=outside))
    await stub.Delete(semantic_pb2.DeleteRequest(bank_id=unique_name, ids=["x1"]), timeout=TIMEOUT)
    assert [item.candidate.value for item in await reviews(stub, unique_name)] == ["Denver"]

    await delete(stub, unique_name, "u1")
    current = [f.value for f in await facts(stub, unique_name, "lives_in") if not f.superseded_by]
    assert current == ["Denver"]
    assert await reviews(stub, unique_name) == []


async def test_a_fact_stated_in_two_sessions_outlives_the_purge_of_one(stub, unique_name) -> None:
    await upsert(stub, unique_name, turn("t1", "I live in Lisbon.", START, session="first"))
    await upsert(
        stub, unique_name, turn("t2", "I live in Lisbon.", START + timedelta(hours=1), session="second")
    )
    await stub.Delete(semantic_pb2.DeleteRequest(bank_id=unique_name, session_id="first"), timeout=TIMEOUT)
    current = [(f.value, list(f.meta.source_turn_ids)) for f in await facts(stub, unique_name, "lives_in")]
    assert current == [("Lisbon", ["t2"])]
    caroline = await page(stub, unique_name, "Caroline")
    assert [f.value for f in caroline.facts if f.attribute == "lives_in"] == ["Lisbon"]
