"""Congruence of the vector engines: the same store operations on Qdrant Edge and on qdrant-client's local
mode (the stand-in for the Qdrant server API) give the same answers, step by step.

Vectors are fixed (no model), so both engines see exactly the same points; scores are compared to float
tolerance and lists by ids in order. Also here: the carry-over of an old local-mode directory to Edge, and
the tenant index that scopes every Edge search to the bank asked.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hindsight.runtime.records import RecordMeta, TimeRange
from hindsight.semantic.backend import connect, open_vector_store
from hindsight.semantic.collection_setup import active_alias, open_active
from hindsight.semantic.edge_client import EdgeClient
from hindsight.semantic.migrate_local import BACKUP_DIR, edge_root
from hindsight.semantic.records import (
    EmbeddedRecord,
    Entity,
    ModelIdentity,
    RecordKind,
    Relation,
    ReviewItem,
    SearchOptions,
    SemanticRecord,
)
from hindsight.semantic.settings import SemanticSettings
from hindsight.semantic.store import QdrantVectorStore

MODEL = ModelIdentity("test-model", 8, "c" * 64)
BANK, OTHER = "bank-a", "bank-b"


def vector(*weights: float) -> list[float]:
    """An 8-d vector from its first weights (the rest zero), normalised."""
    values = [*weights, *([0.0] * (MODEL.dimension - len(weights)))]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def at(year: int, month: int = 1) -> datetime:
    return datetime(year, month, 1, 12, tzinfo=UTC)


def record(record_id: str, text: str, **fields: Any) -> SemanticRecord:
    kind = fields.pop("kind", RecordKind.TURN)
    meta = RecordMeta(
        source_turn_ids=tuple(fields.pop("turns", (record_id,))),
        tags=tuple(fields.pop("tags", ())),
        importance=fields.pop("importance", 0.5),
        time=fields.pop("time", at(2024)),
    )
    return SemanticRecord(id=record_id, text=text, kind=kind, meta=meta, **fields)


CORPUS = [
    EmbeddedRecord(record("t1", "Alice lives in Oslo.", session_id="s1", tags=("home",)), vector(1, 0.1)),
    EmbeddedRecord(record("t2", "Alice owns a red bicycle.", session_id="s1"), vector(0.2, 1)),
    EmbeddedRecord(record("t3", "Bob prefers tea.", session_id="s2", time=at(2023, 5)), vector(0.1, 0.1, 1)),
    EmbeddedRecord(
        record(
            "f1",
            "Alice lives in Oslo",
            kind=RecordKind.FACT,
            subject="Alice",
            attribute="lives_in",
            value="Oslo",
            turns=("t1",),
            importance=0.9,
        ),
        vector(1, 0.05),
    ),
    EmbeddedRecord(
        record(
            "f2",
            "Alice lives in Bergen",
            kind=RecordKind.FACT,
            subject="alice ",
            attribute="lives_in",
            value="Bergen",
            turns=("t4",),
        ),
        vector(0.9, 0.3),
    ),
    EmbeddedRecord(
        record("t5", "Old note about the garden.", importance=0.1, time=at(2020)), vector(0, 0, 0.3, 1)
    ),
]
QUERY = vector(1, 0.15, 0.05)


Script = list[tuple[str, Any]]


def _hits(hits: Any) -> list[tuple[str, float, bool]]:
    return [(hit.record.id, round(hit.score, 4), hit.record.cold) for hit in hits]


async def run_script(store: QdrantVectorStore) -> Script:
    """Every operation of the store interface, in an order that exercises their interplay."""
    out: Script = []
    everything = TimeRange()
    out.append(("search", _hits(await store.search(BANK, QUERY, 10, everything, SearchOptions()))))
    out.append(
        ("search other bank", _hits(await store.search(OTHER, QUERY, 10, everything, SearchOptions())))
    )
    window = TimeRange(start=at(2023), end=at(2023, 12))
    out.append(("search window", _hits(await store.search(BANK, QUERY, 10, window, SearchOptions()))))
    facts = SearchOptions(kinds=frozenset({RecordKind.FACT}))
    out.append(("search facts", _hits(await store.search(BANK, QUERY, 10, everything, facts))))
    tagged = SearchOptions(tags=("home",))
    out.append(("search tags", _hits(await store.search(BANK, QUERY, 10, everything, tagged))))
    out.append(("search subject", _hits(await store.search(BANK, QUERY, 10, everything, facts, ["ALICE"]))))
    second = vector(0.1, 1, 0.2)
    many = await store.search_many(BANK, [QUERY, second], 3, everything, facts)
    one_by_one = [await store.search(BANK, v, 3, everything, facts) for v in (QUERY, second)]
    out.append(("search many", [_hits(hits) for hits in many]))
    assert [_hits(hits) for hits in many] == [_hits(hits) for hits in one_by_one]
    threshold = SearchOptions(min_score=0.9)
    out.append(("search min score", _hits(await store.search(BANK, QUERY, 10, everything, threshold))))
    near = await store.nearest(BANK, [CORPUS[3], CORPUS[2]], 0.9)
    out.append(("nearest", [r.id if r else None for r in near]))
    got = await store.get(BANK, ["t1", "f1", "missing"])
    out.append(("get", sorted((k, v.record.text, [round(x, 5) for x in v.vector]) for k, v in got.items())))
    out.append(("get other bank's id", sorted(await store.get(OTHER, ["t1"]))))
    about = await store.facts_about(BANK, [("Alice", "lives_in")], current_only=True)
    out.append(("facts about", sorted(r.id for r in about)))

    await store.supersede(BANK, "f1", at(2024, 6), by="f2")
    about = await store.facts_about(BANK, [("Alice", "lives_in")], current_only=True)
    out.append(("facts about after supersede", sorted(r.id for r in about)))
    history = await store.facts_about(BANK, [("alice", "lives_in")], current_only=False)
    out.append(("history", sorted((r.id, r.superseded_by, r.current) for r in history)))
    out.append(("search after supersede", _hits(await store.search(BANK, QUERY, 10, everything, facts))))
    with_history = SearchOptions(kinds=frozenset({RecordKind.FACT}), include_history=True)
    out.append(("search history", _hits(await store.search(BANK, QUERY, 10, everything, with_history))))
    then = SearchOptions(kinds=frozenset({RecordKind.FACT}), valid_at=at(2024, 3))
    out.append(("search valid at", _hits(await store.search(BANK, QUERY, 10, everything, then))))
    current = await store.current_about(BANK, ["alice"])
    out.append(("current about", sorted(item.record.id for item in current)))
    out.append(("restore", await store.restore(BANK, ["f2"])))
    out.append(("search after restore", _hits(await store.search(BANK, QUERY, 10, everything, facts))))

    moved = await store.mark_cold(BANK, ["t2"], None, 0.0)
    stale = await store.mark_cold(BANK, [], datetime.now(UTC).replace(year=2100), 0.2)
    out.append(("mark cold", (moved, stale)))
    out.append(("search hot", _hits(await store.search(BANK, QUERY, 10, everything, SearchOptions()))))
    cold = SearchOptions(include_cold=True)
    out.append(("search with cold", _hits(await store.search(BANK, QUERY, 10, everything, cold))))
    await store.upsert(BANK, [CORPUS[1]])
    out.append(
        (
            "rewritten comes back hot",
            sorted((k, v.record.cold) for k, v in (await store.get(BANK, ["t2"])).items()),
        )
    )

    await store.put_entities(BANK, [Entity("Alice", "person", ("Ally",), (Relation("sister", "Beth"),))])
    await store.put_entities(BANK, [Entity("alice", "other", ("Al",), (Relation("lives_in", "Oslo"),))])
    await store.put_entities(OTHER, [Entity("Alice", "person")])
    named = await store.entities_named(BANK, ["al"])
    out.append(("entities named", [(e.name, e.type, e.aliases, e.relations) for e in named]))
    out.append(("list entities", [e.name for e in await store.list_entities(BANK, 10)]))

    conflict = ReviewItem("r1", CORPUS[4].record, CORPUS[3].record, "same subject, other value", at(2024, 7))
    await store.add_review(BANK, conflict)
    out.append(
        ("reviews", [(i.id, i.candidate.id, i.current.id, i.reason) for i in await store.reviews(BANK, 5)])
    )
    out.append(("reviews of other bank", await store.reviews(OTHER, 5)))
    taken = await store.take_review(BANK, "r1")
    out.append(("take review", (taken.id if taken else None, await store.take_review(BANK, "r1"))))

    out.append(("delete", sorted(await store.delete(BANK, ["t3"], ["t4"], ""))))
    out.append(("delete session", sorted(await store.delete(BANK, [], [], "s1"))))
    out.append(("search after deletes", _hits(await store.search(BANK, QUERY, 10, everything, cold))))
    out.append(("delete bank", await store.delete_bank(BANK)))
    out.append(("bank gone", _hits(await store.search(BANK, QUERY, 10, everything, cold))))
    out.append(("entities gone", await store.list_entities(BANK, 10)))
    out.append(("other bank kept", _hits(await store.search(OTHER, QUERY, 10, everything, SearchOptions()))))
    out.append(("ready", await store.ready()))
    return out


async def test_edge_and_local_mode_answer_every_store_operation_alike(tmp_path: Path) -> None:
    scripts: dict[str, Script] = {}
    for backend in ("edge", "local"):
        settings = SemanticSettings(qdrant_backend=backend, qdrant_path=str(tmp_path / backend))
        async with open_vector_store(settings, MODEL) as store:
            await store.upsert(BANK, CORPUS)
            await store.upsert(OTHER, [EmbeddedRecord(record("o1", "Another bank's secret."), QUERY)])
            scripts[backend] = await run_script(store)
    edge, local = scripts["edge"], scripts["local"]
    assert [step for step, _ in edge] == [step for step, _ in local]
    for (step, on_edge), (_, on_local) in zip(edge, local, strict=True):
        assert on_edge == on_local, step
    answers = dict(edge)
    assert [hit[0] for hit in answers["search"]][:2] == ["t1", "f1"]  # the script tests something
    assert answers["search other bank"] == [("o1", 1.0, False)]
    assert answers["get other bank's id"] == []
    assert answers["history"] == [("f1", "f2", False), ("f2", "", True)]
    assert answers["mark cold"] == (1, 1)
    assert answers["bank gone"] == [] and answers["other bank kept"]


async def test_an_old_local_mode_directory_is_carried_over_to_edge_on_the_first_start(tmp_path: Path) -> None:
    path = tmp_path / "qdrant"
    local = SemanticSettings(qdrant_backend="local", qdrant_path=str(path))
    async with open_vector_store(local, MODEL) as store:
        await store.upsert(BANK, CORPUS)
        await store.supersede(BANK, "f1", at(2024, 6), by="f2")
        await store.mark_cold(BANK, ["t5"], None, 0.0)
        await store.put_entities(BANK, [Entity("Alice", "person", ("Ally",))])
        before = await run_script_readonly(store)
    assert (path / "meta.json").exists()

    edge = SemanticSettings(qdrant_backend="edge", qdrant_path=str(path))
    async with open_vector_store(edge, MODEL) as store:
        after = await run_script_readonly(store)
    assert after == before
    assert not (path / "meta.json").exists() and (path / BACKUP_DIR / "meta.json").exists()
    assert edge_root(path).is_dir() and not (path / "edge.migrating").exists()

    async with open_vector_store(edge, MODEL) as store:  # a second start reads Edge and copies nothing
        assert await run_script_readonly(store) == before


async def run_script_readonly(store: QdrantVectorStore) -> Script:
    everything = TimeRange()
    return [
        ("search", _hits(await store.search(BANK, QUERY, 10, everything, SearchOptions(include_cold=True)))),
        (
            "history",
            sorted(
                (r.id, r.superseded_by)
                for r in await store.facts_about(BANK, [("Alice", "lives_in")], current_only=False)
            ),
        ),
        ("entities", [(e.name, e.aliases) for e in await store.entities_named(BANK, ["ally"])]),
    ]


async def test_every_edge_collection_scopes_searches_by_a_tenant_index_on_the_bank(tmp_path: Path) -> None:
    settings = SemanticSettings(qdrant_backend="edge", qdrant_path=str(tmp_path / "edge"))
    client = connect(settings)
    assert isinstance(client, EdgeClient)
    try:
        collection = await open_active(client, "hs", MODEL, indexed=True)
        for name in (collection, collection + "_cold", collection + "_graph"):
            schema = client.payload_schema(name)
            assert "bank_id" in schema, name
            assert "tenant" in schema["bank_id"], name
        assert "current__bool" in client.payload_schema(collection)
        assert (await client.get_aliases()).aliases[0].alias_name == active_alias("hs")
    finally:
        await client.close()


async def test_a_second_opener_of_an_edge_directory_in_use_is_refused(tmp_path: Path) -> None:
    first = EdgeClient(tmp_path / "edge")
    try:
        with pytest.raises(RuntimeError, match="in use by another process"):
            EdgeClient(tmp_path / "edge")
    finally:
        await first.close()
    await EdgeClient(tmp_path / "edge").close()  # free again once closed
