"""The semantic layer against the real inference service and Qdrant Edge, over real gRPC."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from qdrant_client import models

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.errors import FailedPrecondition
from hindsight.runtime.records import to_timestamp
from hindsight.runtime.testing import channel_to, serving
from hindsight.semantic.backend import connect
from hindsight.semantic.embedder import describe_model
from hindsight.semantic.records import collection_name
from hindsight.semantic.service import SERVICE_NAME, open_service
from hindsight.semantic.settings import SemanticSettings
from tests.integration.rpcs import assert_rejected_naming
from tests.integration.semantic_layer import serve_semantic as semantic

TIMEOUT = 30


@pytest.fixture
async def stub(inference_addr: str) -> AsyncIterator[semantic_pb2_grpc.SemanticServiceStub]:
    async with semantic(SemanticSettings(inference_addr=inference_addr)) as client:
        yield client


def record(
    record_id: str,
    text: str,
    *,
    turns: tuple[str, ...] = (),
    at: datetime | None = None,
    kind: int = semantic_pb2.RECORD_KIND_FACT,
) -> semantic_pb2.SemanticRecord:
    return semantic_pb2.SemanticRecord(
        id=record_id,
        text=text,
        kind=kind,
        speaker="Caroline",
        session_id="s1",
        meta=common_pb2.RecordMeta(
            source_turn_ids=list(turns),
            source=common_pb2.SOURCE_USER,
            time=to_timestamp(at),
            tags=["profile"],
            importance=0.5,
        ),
    )


async def search(
    stub: semantic_pb2_grpc.SemanticServiceStub,
    bank: str,
    query: str,
    time_range: common_pb2.TimeRange | None = None,
) -> list[semantic_pb2.ScoredRecord]:
    reply = await stub.Search(
        semantic_pb2.SearchRequest(bank_id=bank, query=query, time_range=time_range), timeout=TIMEOUT
    )
    return list(reply.hits)


async def test_a_paraphrase_in_english_is_found_first_with_its_metadata(stub, unique_name) -> None:
    facts = [
        record(
            "home",
            "I moved to Berlin last spring for a new job.",
            turns=("t1",),
            at=datetime(2024, 4, 2, 9, 30, 15, 123456, tzinfo=UTC),
        ),
        record("food", "My favourite meal is a spicy Thai green curry."),
        record("work", "The quarterly sales report is due on Friday."),
        record("pet", "We adopted a golden retriever puppy called Max."),
    ]
    reply = await stub.Upsert(semantic_pb2.UpsertRequest(bank_id=unique_name, records=facts), timeout=TIMEOUT)
    assert reply.upserted_count == 4

    hits = await search(stub, unique_name, "Which city does she live in now?")
    assert hits[0].record.id == "home"
    assert len(hits) == 4
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    assert 0 < hits[0].score <= 1.0001
    top = hits[0].record
    assert (top.text, top.speaker, top.session_id, top.kind) == (
        facts[0].text,
        "Caroline",
        "s1",
        semantic_pb2.RECORD_KIND_FACT,
    )
    assert list(top.meta.source_turn_ids) == ["t1"]
    assert top.meta.source == common_pb2.SOURCE_USER and top.meta.trust == common_pb2.TRUST_HIGH
    assert top.meta.time.ToDatetime(tzinfo=UTC) == datetime(2024, 4, 2, 9, 30, 15, 123456, tzinfo=UTC)
    assert list(top.meta.tags) == ["profile"] and top.meta.importance == pytest.approx(0.5)

    assert (await search(stub, unique_name, "what kind of dog do they have"))[0].record.id == "pet"


async def test_a_paraphrase_in_chinese_is_found_first(stub, unique_name) -> None:
    facts = [
        record("coffee", "我每天早上都要喝一杯黑咖啡。"),
        record("daughter", "我的女儿在上海读大学, 学的是计算机。"),
        record("meeting", "明天下午三点要开项目评审会议。"),
    ]
    await stub.Upsert(semantic_pb2.UpsertRequest(bank_id=unique_name, records=facts), timeout=TIMEOUT)
    assert (await search(stub, unique_name, "她的孩子在哪个城市上学"))[0].record.id == "daughter"
    assert (await search(stub, unique_name, "早餐喝什么饮料"))[0].record.id == "coffee"


async def test_one_bank_never_sees_or_deletes_another_banks_records(stub, unique_name) -> None:
    mine, theirs = f"{unique_name}-a", f"{unique_name}-b"
    await stub.Upsert(
        semantic_pb2.UpsertRequest(
            bank_id=mine, records=[record("r1", "The door code is 4711.", turns=("t1",))]
        ),
        timeout=TIMEOUT,
    )
    assert await search(stub, theirs, "door code") == []
    deleted = await stub.Delete(
        semantic_pb2.DeleteRequest(bank_id=theirs, ids=["r1"], source_turn_ids=["t1"]), timeout=TIMEOUT
    )
    assert deleted.deleted_count == 0
    assert [hit.record.id for hit in await search(stub, mine, "door code")] == ["r1"]


async def test_a_time_range_keeps_only_records_that_happened_inside_it(stub, unique_name) -> None:
    facts = [
        record("jan", "Went skiing in the Alps.", at=datetime(2024, 1, 15, tzinfo=UTC)),
        record("feb", "Went skiing in Norway.", at=datetime(2024, 2, 15, tzinfo=UTC)),
        record("mar", "Went skiing in Japan.", at=datetime(2024, 3, 1, tzinfo=UTC)),
        record("undated", "Went skiing somewhere."),
    ]
    await stub.Upsert(semantic_pb2.UpsertRequest(bank_id=unique_name, records=facts), timeout=TIMEOUT)
    february = common_pb2.TimeRange(
        start=to_timestamp(datetime(2024, 2, 1, tzinfo=UTC)),
        end=to_timestamp(datetime(2024, 3, 1, tzinfo=UTC)),
    )
    assert [hit.record.id for hit in await search(stub, unique_name, "skiing trip", february)] == ["feb"]
    since_february = common_pb2.TimeRange(start=to_timestamp(datetime(2024, 2, 1, tzinfo=UTC)))
    assert {hit.record.id for hit in await search(stub, unique_name, "skiing", since_february)} == {
        "feb",
        "mar",
    }
    assert len(await search(stub, unique_name, "skiing")) == 4


async def test_deleting_a_source_turn_removes_the_records_that_stand_on_it_alone(stub, unique_name) -> None:
    facts = [
        record("a", "Alice likes tea.", turns=("t1",)),
        record("b", "Alice lives in Oslo.", turns=("t1", "t2")),
        record("c", "Bob likes coffee.", turns=("t3",)),
        record("d", "Bob has a bike.", turns=("t4",)),
    ]
    await stub.Upsert(semantic_pb2.UpsertRequest(bank_id=unique_name, records=facts), timeout=TIMEOUT)
    by_turn = await stub.Delete(
        semantic_pb2.DeleteRequest(bank_id=unique_name, source_turn_ids=["t1"]), timeout=TIMEOUT
    )
    assert by_turn.deleted_count == 1  # "b" stands on t2 as well: it lives, without t1
    both = await stub.Delete(
        semantic_pb2.DeleteRequest(bank_id=unique_name, ids=["c", "missing"], source_turn_ids=["t3"]),
        timeout=TIMEOUT,
    )
    assert both.deleted_count == 1
    hits = {hit.record.id: hit.record for hit in await search(stub, unique_name, "Alice")}
    assert sorted(hits) == ["b", "d"] and list(hits["b"].meta.source_turn_ids) == ["t2"]
    await stub.Delete(
        semantic_pb2.DeleteRequest(bank_id=unique_name, source_turn_ids=["t2"]), timeout=TIMEOUT
    )
    assert [hit.record.id for hit in await search(stub, unique_name, "Alice")] == ["d"]


async def test_upserting_an_id_again_replaces_the_record(stub, unique_name) -> None:
    await stub.Upsert(
        semantic_pb2.UpsertRequest(bank_id=unique_name, records=[record("r", "I live in Paris.")]),
        timeout=TIMEOUT,
    )
    await stub.Upsert(
        semantic_pb2.UpsertRequest(bank_id=unique_name, records=[record("r", "I live in Rome.")]),
        timeout=TIMEOUT,
    )
    hits = await search(stub, unique_name, "where do I live")
    assert [(hit.record.id, hit.record.text) for hit in hits] == [("r", "I live in Rome.")]


async def test_upserts_larger_than_one_embedding_batch_store_every_record(stub, unique_name) -> None:
    facts = [record(f"n{i}", f"Note number {i} about topic {i % 7}.") for i in range(150)]
    reply = await stub.Upsert(semantic_pb2.UpsertRequest(bank_id=unique_name, records=facts), timeout=TIMEOUT)
    assert reply.upserted_count == 150
    hits = await stub.Search(
        semantic_pb2.SearchRequest(bank_id=unique_name, query="note", limit=200), timeout=TIMEOUT
    )
    assert len(hits.hits) == 150


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (
            semantic_pb2.UpsertRequest(bank_id="b", records=[record("ok", "fine"), record("x", " ")]),
            "records[1].text",
        ),
        (semantic_pb2.UpsertRequest(bank_id="b", records=[record("", "text")]), "records[0].id"),
        (
            semantic_pb2.UpsertRequest(
                bank_id="b",
                records=[
                    semantic_pb2.SemanticRecord(id="x", text="t", meta=common_pb2.RecordMeta(importance=2))
                ],
            ),
            "records[0].meta.importance",
        ),
        (semantic_pb2.UpsertRequest(bank_id="b"), "records"),
        (semantic_pb2.SearchRequest(bank_id="b", query=""), "query"),
        (semantic_pb2.SearchRequest(bank_id="b", query="q", limit=201), "limit"),
        (
            semantic_pb2.SearchRequest(
                bank_id="b",
                query="q",
                time_range=common_pb2.TimeRange(
                    start=to_timestamp(datetime(2024, 2, 1, tzinfo=UTC)),
                    end=to_timestamp(datetime(2024, 1, 1, tzinfo=UTC)),
                ),
            ),
            "time_range",
        ),
        (semantic_pb2.DeleteRequest(bank_id="b"), "ids"),
        (semantic_pb2.DeleteRequest(bank_id="b", source_turn_ids=["t1", ""]), "source_turn_ids[1]"),
    ],
)
async def test_invalid_requests_are_rejected_naming_the_field(stub, request_, field) -> None:
    method = {
        semantic_pb2.UpsertRequest: stub.Upsert,
        semantic_pb2.SearchRequest: stub.Search,
        semantic_pb2.DeleteRequest: stub.Delete,
    }[type(request_)]
    await assert_rejected_naming(method(request_, timeout=TIMEOUT), field)


async def test_a_local_store_keeps_records_across_restarts_and_reports_ready(
    inference_addr, tmp_path: Path, unique_name
) -> None:
    settings = SemanticSettings(inference_addr=inference_addr, qdrant_path=str(tmp_path / "qdrant"))
    async with serving(lambda: open_service(settings)) as server, channel_to(server) as channel:
        stub = semantic_pb2_grpc.SemanticServiceStub(channel)
        await stub.Upsert(
            semantic_pb2.UpsertRequest(bank_id=unique_name, records=[record("r", "Kept on disk.")]),
            timeout=TIMEOUT,
        )
        watch = health_pb2_grpc.HealthStub(channel).Watch(
            health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=TIMEOUT
        )
        async for reply in watch:
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                break
        watch.cancel()
    async with semantic(settings) as stub:
        assert [hit.record.id for hit in await search(stub, unique_name, "disk")] == ["r"]


async def test_a_collection_of_another_dimension_refuses_to_start(inference_addr, tmp_path: Path) -> None:
    settings = SemanticSettings(inference_addr=inference_addr, qdrant_path=str(tmp_path / "qdrant"))
    client = LayerClient(inference_addr, inference_pb2_grpc.InferenceServiceStub)
    model = await describe_model(client, "", wait_seconds=5)
    await client.close()
    qdrant = connect(settings)
    await qdrant.create_collection(
        collection_name(settings.collection_prefix, model),
        vectors_config=models.VectorParams(size=3, distance=models.Distance.COSINE),
    )
    await qdrant.close()

    with pytest.raises(
        FailedPrecondition, match=rf"holds 3-d vectors but model .* makes {model.dimension}-d"
    ):
        async with open_service(settings):
            pytest.fail("the service started over a collection of another dimension")


async def test_import_records_writes_learned_records_as_exported_and_replaces_what_was_derived(
    stub, unique_name
) -> None:
    bank = unique_name
    derived = record("f-derived", "Caroline lives in Boston", turns=("t1",))
    await stub.Upsert(semantic_pb2.UpsertRequest(bank_id=bank, records=[derived]), timeout=TIMEOUT)
    old = record("f-old", "Caroline lives in Paris", turns=("t0",))
    old.valid_to.CopyFrom(to_timestamp(datetime(2025, 1, 1, tzinfo=UTC)))
    old.superseded_by, old.merged_ids[:], old.lineage[:] = "f-new", ["f-twin"], ["t0"]
    old.cold = True  # the export found it in the cold tier
    new = record("f-new", "Caroline lives in Denver", turns=("t2", "t0"))
    new.supersedes[:], new.lineage[:] = ["f-old"], ["t2"]
    review = semantic_pb2.ReviewItem(
        id="r1",
        candidate=record("f-tool", "Caroline lives in Rome", turns=("t3",)),
        current=new,
        reason="both values were stated at the same time with the same trust",
        created_at=to_timestamp(datetime(2025, 2, 1, tzinfo=UTC)),
        source_turn_ids=["t3"],
    )
    reply = await stub.ImportRecords(
        semantic_pb2.ImportRecordsRequest(bank_id=bank, records=[old, new], reviews=[review], replace=True),
        timeout=TIMEOUT,
    )
    assert (reply.imported_count, reply.review_count, reply.removed_count) == (2, 1, 1)
    got = await stub.GetRecords(
        semantic_pb2.GetRecordsRequest(bank_id=bank, ids=["f-derived", "f-old", "f-new"]), timeout=TIMEOUT
    )
    by_id = {r.id: r for r in got.records}
    assert set(by_id) == {"f-old", "f-new"}  # what was derived before is replaced
    assert by_id["f-old"].superseded_by == "f-new" and by_id["f-old"].HasField("valid_to")
    assert by_id["f-old"].mention_count == 2 and list(by_id["f-old"].lineage) == ["t0"]
    assert by_id["f-old"].cold and not by_id["f-new"].cold
    assert list(by_id["f-new"].supersedes) == ["f-old"] and list(by_id["f-new"].lineage) == ["t2"]
    queued = await stub.ListReviews(semantic_pb2.ListReviewsRequest(bank_id=bank), timeout=TIMEOUT)
    assert [(item.id, item.created_at.seconds) for item in queued.items] == [
        ("r1", review.created_at.seconds)
    ]


async def test_import_records_refuses_a_turn_and_writes_nothing(stub, unique_name) -> None:
    bank = unique_name
    fact = record("f1", "Caroline lives in Denver", turns=("t1",))
    turn = record("t1", "I moved to Denver", kind=semantic_pb2.RECORD_KIND_TURN)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.ImportRecords(
            semantic_pb2.ImportRecordsRequest(bank_id=bank, records=[fact, turn], replace=True),
            timeout=TIMEOUT,
        )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "records[1].kind" in (refused.value.details() or "")
    got = await stub.GetRecords(semantic_pb2.GetRecordsRequest(bank_id=bank, ids=["f1"]), timeout=TIMEOUT)
    assert not got.records
