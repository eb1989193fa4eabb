"""The reflect layer's maintenance moves stale, unimportant semantic records to the cold tier over gRPC.

Real services: inference, semantic (Qdrant Edge), episodic and the reflect engine on PostgreSQL; the
reflect engine's clock is moved forward instead of waiting.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.reflect.engine import ReflectEngine, SemanticColdTier
from hindsight.reflect.episodes import EpisodicClient
from hindsight.reflect.settings import ReflectSettings
from hindsight.reflect.store import open_lesson_store
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.testing import channel_to, serving
from hindsight.semantic.service import open_service
from hindsight.semantic.settings import SemanticSettings
from tests.integration.mesh import drop_schemas

TIMEOUT = 30


async def test_maintenance_moves_stale_unimportant_records_to_the_cold_tier(
    database_url: str, episodic_addr: str, inference_addr: str, unique_name: str
) -> None:
    settings = ReflectSettings(
        database_url=database_url,
        schema=unique_name,
        episodic_addr=episodic_addr,
        cold_after_days=30,
        cold_below_importance=0.5,
    )
    semantic_settings = SemanticSettings(inference_addr=inference_addr)
    async with serving(lambda: open_service(semantic_settings)) as server, channel_to(server) as channel:
        stub = semantic_pb2_grpc.SemanticServiceStub(channel)
        records = [
            semantic_pb2.SemanticRecord(
                id=record_id,
                kind=semantic_pb2.RECORD_KIND_FACT,
                text=text,
                meta=common_pb2.RecordMeta(importance=importance),
            )
            for record_id, text, importance in (
                ("trivia", "The canteen served lasagne once.", 0.1),
                ("allergy", "The user is allergic to peanuts.", 0.9),
            )
        ]
        await stub.Upsert(semantic_pb2.UpsertRequest(bank_id=unique_name, records=records), timeout=TIMEOUT)

        semantic = LayerClient(f"127.0.0.1:{server.port}", semantic_pb2_grpc.SemanticServiceStub)
        episodic = LayerClient(episodic_addr, episodic_pb2_grpc.EpisodicServiceStub)
        later = datetime.now(UTC)
        try:
            async with open_lesson_store(settings) as store:
                engine = ReflectEngine(
                    store,
                    EpisodicClient(episodic),
                    settings,
                    clock=lambda: later,
                    cold_tier=SemanticColdTier(semantic),
                )
                await engine.maintain(unique_name)  # written just now: nothing is stale yet
                found = await stub.Search(
                    semantic_pb2.SearchRequest(bank_id=unique_name, query="food"), timeout=TIMEOUT
                )
                assert sorted(hit.record.id for hit in found.hits) == ["allergy", "trivia"]

                later += timedelta(days=31)
                report = await engine.maintain(unique_name)
                assert not [line for line in report.skipped if "cold" in line]
        finally:
            await semantic.close()
            await episodic.close()
            await drop_schemas(database_url, unique_name)

        hot = await stub.Search(
            semantic_pb2.SearchRequest(bank_id=unique_name, query="food"), timeout=TIMEOUT
        )
        assert [hit.record.id for hit in hot.hits] == ["allergy"]
        every = await stub.Search(
            semantic_pb2.SearchRequest(bank_id=unique_name, query="food", include_cold=True), timeout=TIMEOUT
        )
        assert {hit.record.id: hit.record.cold for hit in every.hits} == {"allergy": False, "trivia": True}


def _job(record_id: str, employer: str, year: int, source: int) -> semantic_pb2.SemanticRecord:
    record = semantic_pb2.SemanticRecord(
        id=record_id,
        kind=semantic_pb2.RECORD_KIND_FACT,
        text=f"Alice works at {employer}.",
        subject="Alice",
        attribute="works_at",
        value=employer,
        meta=common_pb2.RecordMeta(source=source, importance=0.9),
    )
    record.meta.time.FromDatetime(datetime(year, 1, 1, tzinfo=UTC))
    return record


async def test_maintenance_audits_contradictory_facts_waiting_for_review(
    database_url: str, episodic_addr: str, inference_addr: str, unique_name: str
) -> None:
    settings = ReflectSettings(database_url=database_url, schema=unique_name, episodic_addr=episodic_addr)
    semantic_settings = SemanticSettings(inference_addr=inference_addr)
    async with serving(lambda: open_service(semantic_settings)) as server, channel_to(server) as channel:
        stub = semantic_pb2_grpc.SemanticServiceStub(channel)
        trusted = _job("job1", "Acme", 2023, common_pb2.SOURCE_USER)
        rumour = _job("job2", "Globex", 2024, common_pb2.SOURCE_EXTERNAL)
        for record in (trusted, rumour):  # newer but less trusted: neither time nor trust settles it
            await stub.Upsert(
                semantic_pb2.UpsertRequest(bank_id=unique_name, records=[record]), timeout=TIMEOUT
            )

        semantic = LayerClient(f"127.0.0.1:{server.port}", semantic_pb2_grpc.SemanticServiceStub)
        episodic = LayerClient(episodic_addr, episodic_pb2_grpc.EpisodicServiceStub)
        try:
            async with open_lesson_store(settings) as store:
                engine = ReflectEngine(
                    store, EpisodicClient(episodic), settings, cold_tier=SemanticColdTier(semantic)
                )
                report = await engine.maintain(unique_name)
                assert len(report.open_conflicts) == 1
                line = report.open_conflicts[0]
                assert "Alice works_at" in line and "'Acme' vs 'Globex'" in line, line
                assert report.cold_count == 0  # important and fresh: nothing goes cold
                again = await engine.maintain(unique_name)  # the audit lists; it never settles or deletes
                assert again.open_conflicts == report.open_conflicts
        finally:
            await semantic.close()
            await episodic.close()
            await drop_schemas(database_url, unique_name)
