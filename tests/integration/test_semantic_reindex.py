"""Model identity and reindex, end to end: change the model, the restart refuses, reindex, recall works.

Real inference service (both packaged models), real semantic service over gRPC, Qdrant Edge on disk.
"""

from __future__ import annotations

import argparse
import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hindsight.cli.reindex import run_async as run_reindex
from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.inference.settings import BLEND_MODEL, DEFAULT_MODEL, MINILM_MODEL
from hindsight.runtime.errors import FailedPrecondition
from hindsight.runtime.records import to_timestamp
from hindsight.semantic.backend import connect
from hindsight.semantic.collection_setup import active_collection, open_active
from hindsight.semantic.records import ModelIdentity, alias_name, collection_name
from hindsight.semantic.service import open_service
from hindsight.semantic.settings import SemanticSettings
from tests.integration.semantic_layer import serve_semantic as semantic

TIMEOUT = 30
FACTS = {
    "bank-a": [
        ("cat", "The cat sleeps on the sofa every afternoon."),
        ("rates", "Interest rates rose sharply last quarter."),
        ("trip", "Caroline booked a train ticket to Berlin for May."),
    ],
    "bank-b": [("tea", "Melanie prefers green tea to coffee.")],
}


async def _top(stub: semantic_pb2_grpc.SemanticServiceStub, bank: str, query: str) -> list[str]:
    reply = await stub.Search(semantic_pb2.SearchRequest(bank_id=bank, query=query, limit=3), timeout=TIMEOUT)
    return [hit.record.id for hit in reply.hits]


async def _fill(settings: SemanticSettings) -> None:
    async with semantic(settings) as stub:
        for bank, facts in FACTS.items():
            records = [semantic_pb2.SemanticRecord(id=i, text=t) for i, t in facts]
            await stub.Upsert(semantic_pb2.UpsertRequest(bank_id=bank, records=records), timeout=TIMEOUT)


def _reindex_env(monkeypatch: pytest.MonkeyPatch, settings: SemanticSettings) -> None:
    monkeypatch.setenv("HINDSIGHT_QDRANT_PATH", settings.qdrant_path)
    monkeypatch.setenv("HINDSIGHT_INFERENCE_ADDR", settings.inference_addr)
    monkeypatch.setenv("HINDSIGHT_SEMANTIC_MODEL", settings.embedding_model)
    monkeypatch.delenv("QDRANT_URL", raising=False)


def _args(bank: str = "", drop_old: bool = False) -> argparse.Namespace:
    return argparse.Namespace(bank=bank, drop_old=drop_old, home=None, no_progress=False)


async def _active(path: str, prefix: str = "hs") -> str | None:
    client = connect(SemanticSettings(qdrant_path=path))
    try:
        return await active_collection(client, prefix)
    finally:
        await client.close()


async def test_a_model_change_is_refused_at_start_until_reindex_and_then_recall_works(
    inference_addr: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "qdrant")
    old = SemanticSettings(inference_addr=inference_addr, qdrant_path=path, embedding_model=DEFAULT_MODEL)
    new = SemanticSettings(inference_addr=inference_addr, qdrant_path=path, embedding_model=MINILM_MODEL)
    await _fill(old)
    first = await _active(path)

    with pytest.raises(FailedPrecondition) as refused:
        async with open_service(new):
            pytest.fail("the semantic layer started over another model's vectors")
    message = str(refused.value)
    assert f"holds 512-d vectors but model '{MINILM_MODEL}' makes 384-d" in message
    assert f"'{DEFAULT_MODEL}' (512-d, sha256" in message and "hindsight reindex" in message

    _reindex_env(monkeypatch, new)
    stderr = io.StringIO()
    assert await run_reindex(_args(bank="bank-a"), stderr) == 1  # one bank cannot move to a new model
    assert "every bank must be re-embedded" in stderr.getvalue()
    assert await _active(path) == first

    stderr = io.StringIO()
    assert await run_reindex(_args(), stderr) == 0
    assert "reindex: 100%" in stderr.getvalue() and "4/4 [" in stderr.getvalue()  # tqdm's bar
    second = await _active(path)
    assert second and second != first and MINILM_MODEL in second

    async with semantic(new) as stub:
        assert (await _top(stub, "bank-a", "Where does the cat nap?"))[0] == "cat"
        assert (await _top(stub, "bank-a", "train journey to Germany"))[0] == "trip"
        assert await _top(stub, "bank-b", "Where does the cat nap?") == ["tea"]

    with pytest.raises(FailedPrecondition, match=f"holds 384-d vectors but model '{DEFAULT_MODEL}'"):
        async with open_service(old):
            pytest.fail("the old model must not reopen the new collection")


async def test_a_store_moves_onto_the_blend_by_reindex_and_finds_english_and_chinese(
    inference_addr: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "qdrant")
    old = SemanticSettings(inference_addr=inference_addr, qdrant_path=path)
    blend = SemanticSettings(inference_addr=inference_addr, qdrant_path=path, embedding_model=BLEND_MODEL)
    await _fill(old)
    async with semantic(old) as stub:
        chinese = semantic_pb2.SemanticRecord(id="zh", text="我妹妹上个月搬到了杭州。")
        await stub.Upsert(semantic_pb2.UpsertRequest(bank_id="bank-a", records=[chinese]), timeout=TIMEOUT)
    _reindex_env(monkeypatch, blend)
    assert await run_reindex(_args(), io.StringIO()) == 0
    assert BLEND_MODEL in (await _active(path) or "")
    async with semantic(blend) as stub:
        assert (await _top(stub, "bank-a", "Where does the cat nap?"))[0] == "cat"
        assert (await _top(stub, "bank-a", "train journey to Germany"))[0] == "trip"
        assert (await _top(stub, "bank-a", "我妹妹现在住在哪个城市？"))[0] == "zh"


async def test_a_bank_only_reindex_under_the_same_model_keeps_every_other_bank(
    inference_addr: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = SemanticSettings(inference_addr=inference_addr, qdrant_path=str(tmp_path / "qdrant"))
    await _fill(settings)
    first = await _active(settings.qdrant_path)
    _reindex_env(monkeypatch, settings)
    stderr = io.StringIO()
    assert await run_reindex(_args(bank="bank-b", drop_old=True), stderr) == 0
    second = await _active(settings.qdrant_path)
    assert second != first
    client = connect(settings)
    try:
        assert not await client.collection_exists(first or "")
        assert (await client.count(alias_name("hs"))).count == 4
    finally:
        await client.close()
    async with semantic(settings) as stub:
        assert (await _top(stub, "bank-a", "Where does the cat nap?"))[0] == "cat"
        assert await _top(stub, "bank-b", "What does Melanie drink?") == ["tea"]


async def test_reindex_says_so_when_there_is_no_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_QDRANT_PATH", str(tmp_path / "missing"))
    stderr = io.StringIO()
    assert await run_reindex(_args(), stderr) == 1
    assert "nothing to reindex" in stderr.getvalue()


async def test_a_new_file_under_the_same_model_name_and_dimension_is_refused_too(tmp_path: Path) -> None:
    client = connect(SemanticSettings(qdrant_path=str(tmp_path / "qdrant")))
    try:
        before = ModelIdentity("use-multilingual-v3", 512, "a" * 64)
        after = ModelIdentity("use-multilingual-v3", 512, "b" * 64)
        assert await open_active(client, "hs", before, indexed=True) == collection_name("hs", before)
        assert await open_active(client, "hs", before, indexed=True) == collection_name("hs", before)
        with pytest.raises(FailedPrecondition, match=r"sha256 aaaaaaaaaaaa\).*serves .*sha256 bbbbbbbbbbbb"):
            await open_active(client, "hs", after, indexed=True)
    finally:
        await client.close()


async def test_a_reindex_carries_the_cold_tier_the_entity_graph_and_the_review_queue(
    inference_addr: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "qdrant")
    old = SemanticSettings(inference_addr=inference_addr, qdrant_path=path, embedding_model=DEFAULT_MODEL)
    new = SemanticSettings(inference_addr=inference_addr, qdrant_path=path, embedding_model=MINILM_MODEL)

    def home(record_id: str, city: str, source: int) -> semantic_pb2.SemanticRecord:
        return semantic_pb2.SemanticRecord(
            id=record_id,
            kind=semantic_pb2.RECORD_KIND_FACT,
            text=f"Alice lives in {city}.",
            subject="Alice",
            attribute="lives_in",
            value=city,
            meta=common_pb2.RecordMeta(source=source, time=to_timestamp(datetime(2024, 1, 1, tzinfo=UTC))),
        )

    async with semantic(old) as stub:
        records = [
            semantic_pb2.SemanticRecord(id="t1", text="My sister is Beth.", speaker="Alice"),
            semantic_pb2.SemanticRecord(id="old", text="The canteen served lasagne once."),
            home("oslo", "Oslo", common_pb2.SOURCE_USER),
        ]
        await stub.Upsert(semantic_pb2.UpsertRequest(bank_id="b", records=records), timeout=TIMEOUT)
        await stub.Upsert(
            semantic_pb2.UpsertRequest(
                bank_id="b", records=[home("bergen", "Bergen", common_pb2.SOURCE_USER)]
            ),
            timeout=TIMEOUT,
        )
        await stub.MarkCold(semantic_pb2.MarkColdRequest(bank_id="b", ids=["old"]), timeout=TIMEOUT)

    _reindex_env(monkeypatch, new)
    assert await run_reindex(_args(drop_old=True), io.StringIO()) == 0

    async with semantic(new) as stub:
        hot = await stub.Search(
            semantic_pb2.SearchRequest(bank_id="b", query="lasagne", limit=50), timeout=TIMEOUT
        )
        assert "old" not in {hit.record.id for hit in hot.hits}
        every = await stub.Search(
            semantic_pb2.SearchRequest(bank_id="b", query="lasagne", include_cold=True), timeout=TIMEOUT
        )
        assert (every.hits[0].record.id, every.hits[0].record.cold) == ("old", True)
        entities = await stub.ListEntities(semantic_pb2.ListEntitiesRequest(bank_id="b"), timeout=TIMEOUT)
        assert {entity.name for entity in entities.entities} >= {"Alice", "Beth"}
        queue = await stub.ListReviews(semantic_pb2.ListReviewsRequest(bank_id="b"), timeout=TIMEOUT)
        assert [(item.candidate.id, item.current.id) for item in queue.items] == [("bergen", "oslo")]


async def test_a_reindex_embeds_each_text_as_the_layer_wrote_it(
    inference_addr: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the same model, every vector comes out as it went in: a turn with its speaker, a reply with
    the turn it answers (looked up by id), a fact as its text."""
    settings = SemanticSettings(inference_addr=inference_addr, qdrant_path=str(tmp_path / "qdrant"))
    question = semantic_pb2.SemanticRecord(
        id="q", text="Did you see the Tchaikovsky concert in Vienna?", speaker="Maria", session_id="s"
    )
    reply = semantic_pb2.SemanticRecord(
        id="r",
        text="Yes, last Friday!",
        speaker="Jon",
        session_id="s",
        replies_to=semantic_pb2.TurnContext(id="q", speaker="Maria", text=question.text),
    )
    fact = semantic_pb2.SemanticRecord(
        id="f", text="Melanie prefers green tea.", kind=semantic_pb2.RECORD_KIND_FACT
    )
    async with semantic(settings) as stub:
        await stub.Upsert(
            semantic_pb2.UpsertRequest(bank_id="bank-r", records=[question, reply, fact]), timeout=TIMEOUT
        )

    async def vectors() -> dict[str, list[float]]:
        client = connect(settings)
        try:
            points, _ = await client.scroll(alias_name("hs"), limit=100, with_payload=True, with_vectors=True)
            return {str((p.payload or {})["record_id"]): list(p.vector) for p in points}  # type: ignore[arg-type]
        finally:
            await client.close()

    before = await vectors()
    _reindex_env(monkeypatch, settings)
    assert await run_reindex(_args(), io.StringIO()) == 0
    after = await vectors()
    assert set(after) == set(before) >= {"q", "r", "f"}
    for record_id, vector in before.items():
        assert after[record_id] == pytest.approx(vector, abs=1e-4), record_id
