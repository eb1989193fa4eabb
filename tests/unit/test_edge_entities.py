"""Recall's entity channel at the edge: which keyword hits it keeps, how fusion weighs it, and a late or
failed entity question leaving the recall without it."""

from __future__ import annotations

import asyncio

from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.mcp_edge.domain import Candidate, LayerName
from hindsight.mcp_edge.entities import (
    ENTITY_CHANNEL,
    NamedEntity,
    collect_named,
    entity_channel,
    named_entities,
    note_named,
)
from hindsight.mcp_edge.fusion import score_fusion
from hindsight.runtime.records import RecordMeta


def hit(turn_id: str, speaker: str, score: float, layer: LayerName = LayerName.EPISODIC) -> Candidate:
    return Candidate(
        id=turn_id, layer=layer, text=turn_id, layer_score=score, meta=RecordMeta(), speaker=speaker
    )


MELANIE = NamedEntity("Melanie", frozenset({"melanie", "mel"}), share=0.5, named_turn_ids=frozenset({"c9"}))


def test_the_channel_keeps_the_hits_the_entity_spoke_or_is_named_in_in_their_order() -> None:
    hits = [
        hit("c1", "Caroline", 9.0),
        hit("m1", "melanie ", 8.0),
        hit("c9", "Caroline", 7.0),
        hit("x", "", 1.0),
    ]
    channel = entity_channel(hits, [MELANIE])
    assert [(c.id, c.channel) for c in channel] == [("m1", ENTITY_CHANNEL), ("c9", ENTITY_CHANNEL)]
    assert entity_channel(hits, []) == []


def test_matches_are_read_with_every_name_the_entity_goes_by() -> None:
    reply = semantic_pb2.SearchResponse(
        entities=[
            semantic_pb2.EntityMatch(
                entity=semantic_pb2.Entity(name="Melanie", aliases=["Mel", " "]),
                share=0.5,
                named_turn_ids=["c9"],
            )
        ]
    )
    assert named_entities(reply.entities) == (MELANIE,)


def test_fusion_weighs_a_channel_by_its_own_weight_and_lists_each_layer_once() -> None:
    keyword = [hit("c1", "Caroline", 2.0), hit("m1", "Melanie", 1.0)]
    plain = score_fusion([keyword], weights={LayerName.EPISODIC: 0.5})
    assert [m.id for m in plain] == ["c1", "m1"]
    channel = entity_channel([*keyword, hit("m0", "Melanie", 0.5)], [MELANIE])
    fused = score_fusion(
        [keyword, channel], weights={LayerName.EPISODIC: 0.5}, channel_weights={ENTITY_CHANNEL: 0.6}
    )
    assert [m.id for m in fused][:2] == ["m1", "c1"]  # 0.5 * 0 + 0.6 * 1 beats 0.5 * 1
    assert fused[0].layers == (LayerName.EPISODIC,)
    unweighted = score_fusion([keyword, channel], weights={LayerName.EPISODIC: 0.5})
    assert unweighted[0].id == "c1" and {m.id: m.score for m in unweighted}["m1"] == 0  # no weight, no lift


async def test_the_semantic_answer_of_a_recall_fills_that_recalls_list_only() -> None:
    reply = semantic_pb2.SearchResponse(
        entities=[
            semantic_pb2.EntityMatch(entity=semantic_pb2.Entity(name="Melanie", aliases=["Mel"]), share=0.5)
        ]
    )

    async def recall() -> list[NamedEntity]:
        sink = collect_named()
        await asyncio.gather(asyncio.create_task(answer()))  # the layer tasks share the recall's list
        return sink

    async def answer() -> None:
        note_named(reply)

    first, second = await asyncio.gather(recall(), recall())
    assert [e.name for e in first] == ["Melanie"] and [e.name for e in second] == ["Melanie"]
    note_named(reply)  # outside a recall: kept nowhere
